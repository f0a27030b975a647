import Foundation

/// Large blocks of memory (tensor arenas, packed weights) of interpreters and models that have
/// gone away, kept for the next ones of the process.
///
/// Fresh memory is not mapped until first written: here every 4 KiB page costs a fault of about
/// 1 µs on its first write. Loading tf2_mobilenet_v2 int8 wrote about 800 new pages (1.44 MiB of
/// arena, 3.4 MB of packed weights) and spent most of a millisecond of its 6 ms on those faults;
/// memory the process has already used is written at full speed. So a process that loads models
/// again and again (a model reloaded, a task recreated, an interpreter per request) gets memory that
/// is already mapped, as it gets a thread pool that has already started (``ParallelRunner``).
///
/// Only blocks of at least ``minimumBlock`` bytes come from here (malloc reuses smaller ones
/// without new pages). At most ``capacity`` blocks and ``limit`` bytes are kept, the oldest freed
/// first; a block serves a need of at least half its size only, so a small model never holds on
/// to a large block. Blocks are 64-byte aligned and not cleared.
enum RecycledMemory {
    /// Smallest block kept.
    static let minimumBlock = 64 << 10
    /// Most blocks kept.
    static let capacity = 64
    /// Most bytes kept in all.
    static let limit = 64 << 20

    private struct Block {
        let address: Int
        let byteCount: Int
    }

    /// The kept blocks, guarded by `lock` (an NSLock, a pthread mutex that Thread Sanitizer sees;
    /// with Synchronization's Mutex it reported the accesses under the lock as races).
    nonisolated(unsafe) private static var kept: [Block] = []
    private static let lock = NSLock()

    /// A 64-byte aligned block of at least `byteCount` bytes and its actual size: a kept one when
    /// one fits, else a new allocation. Its contents are undefined.
    static func take(byteCount: Int) -> (pointer: UnsafeMutableRawPointer, byteCount: Int) {
        let needed = max(byteCount, 64)
        if needed >= minimumBlock {
            let block: Block? = lock.withLock {
                var best: Int?
                for (i, block) in kept.enumerated() where block.byteCount >= needed && block.byteCount / 2 <= needed {
                    if best.map({ block.byteCount < kept[$0].byteCount }) ?? true { best = i }
                }
                return best.map { kept.remove(at: $0) }
            }
            if let block, let pointer = UnsafeMutableRawPointer(bitPattern: block.address) { return (pointer, block.byteCount) }
        }
        return (UnsafeMutableRawPointer.allocate(byteCount: needed, alignment: 64), needed)
    }

    /// Keeps a block from ``take(byteCount:)`` for later, or frees it.
    static func give(_ pointer: UnsafeMutableRawPointer, byteCount: Int) {
        guard byteCount >= minimumBlock, byteCount <= limit else {
            pointer.deallocate()
            return
        }
        var freed: [Int] = []
        lock.withLock {
            kept.append(Block(address: Int(bitPattern: pointer), byteCount: byteCount))
            var total = kept.reduce(0) { $0 + $1.byteCount }
            while kept.count > capacity || total > limit {
                let oldest = kept.removeFirst()
                total -= oldest.byteCount
                freed.append(oldest.address)
            }
        }
        for address in freed { UnsafeMutableRawPointer(bitPattern: address)?.deallocate() }
    }
}

/// Load-time data of a compiled model (packed weights and the like), immutable once initialized,
/// in memory from ``RecycledMemory``; shared by every interpreter of the model.
final class PackedBuffer<Element: BitwiseCopyable>: @unchecked Sendable {
    let count: Int
    private let base: UnsafeMutableRawPointer
    private let byteCount: Int

    /// `initialize` must write all `count` elements.
    init(count: Int, initializingWith initialize: (UnsafeMutablePointer<Element>) -> Void) {
        self.count = max(count, 0)
        (base, byteCount) = RecycledMemory.take(byteCount: self.count * MemoryLayout<Element>.stride)
        initialize(base.bindMemory(to: Element.self, capacity: self.count))
    }

    /// `count` elements left for a compile job to write (``CompileWork``): nothing may read them
    /// before the job has run. The job keeps the buffer (``unsafeBase``) alive by capturing it.
    init(uninitializedCount count: Int) {
        self.count = max(count, 0)
        (base, byteCount) = RecycledMemory.take(byteCount: self.count * MemoryLayout<Element>.stride)
        base.bindMemory(to: Element.self, capacity: self.count)
    }

    /// The elements' memory, for the job that writes a buffer made with ``init(uninitializedCount:)``.
    var unsafeBase: UnsafeMutablePointer<Element> { base.assumingMemoryBound(to: Element.self) }

    /// A copy of `elements`, 64-byte aligned. (A Swift array's elements are only 16-byte aligned,
    /// so where they land in the heap decides whether the kernels' 64-byte loads of them split
    /// across cache lines: tf2_mobilenet_v2's 8-bit depthwise layers took 0.087–0.094 ms or
    /// 0.113–0.119 ms depending on the length of the file paths the process had read before.)
    convenience init(copying elements: [Element]) {
        self.init(count: elements.count) { destination in
            elements.withUnsafeBufferPointer { source in
                if let start = source.baseAddress { destination.initialize(from: start, count: source.count) }
            }
        }
    }

    /// `count` copies of `value`, 64-byte aligned.
    convenience init(repeating value: Element, count: Int) {
        self.init(count: count) { $0.initialize(repeating: value, count: max(count, 0)) }
    }

    deinit { RecycledMemory.give(base, byteCount: byteCount) }

    func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<Element>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(start: base.assumingMemoryBound(to: Element.self), count: count))
    }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count * MemoryLayout<Element>.stride))
    }
}
