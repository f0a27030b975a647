import Synchronization

/// Tensor arenas of interpreters that have gone away, kept for the next interpreter of the process.
///
/// A new arena's pages are not mapped until first written: zeroing it costs a page fault per 4 KiB
/// (tf2_mobilenet_v2's 1.44 MiB arena: about 0.5 ms of its 6 ms load on this machine, where
/// clearing memory that is already mapped takes 0.05 ms). A process that creates interpreters again
/// and again (a model reloaded, a task recreated, one interpreter per request) gets an arena that
/// is already mapped, as it gets a thread pool that has already started (``ParallelRunner``).
/// At most ``limit`` bytes in ``capacity`` arenas are kept; an arena is reused only for a need of
/// at least half its size, so a small model never holds on to a large arena.
enum ArenaCache {
    /// Most arenas kept.
    static let capacity = 2
    /// Most bytes kept in all.
    static let limit = 32 << 20

    private struct Entry {
        let address: Int
        let byteCount: Int
    }

    private static let entries = Mutex<[Entry]>([])

    /// A 64-byte aligned arena of at least `byteCount` bytes, zeroed, and its actual size: a kept
    /// one when one fits, else a new allocation.
    static func take(byteCount: Int) -> (pointer: UnsafeMutableRawPointer, byteCount: Int) {
        let needed = max(byteCount, 64)
        let kept: Entry? = entries.withLock { entries in
            let fitting = entries.indices.filter { entries[$0].byteCount >= needed && entries[$0].byteCount / 2 <= needed }
            guard let best = fitting.min(by: { entries[$0].byteCount < entries[$1].byteCount }) else { return nil }
            return entries.remove(at: best)
        }
        if let kept, let pointer = UnsafeMutableRawPointer(bitPattern: kept.address) {
            pointer.initializeMemory(as: UInt8.self, repeating: 0, count: kept.byteCount)
            return (pointer, kept.byteCount)
        }
        let pointer = UnsafeMutableRawPointer.allocate(byteCount: needed, alignment: 64)
        pointer.initializeMemory(as: UInt8.self, repeating: 0, count: needed)
        return (pointer, needed)
    }

    /// Keeps an arena from ``take(byteCount:)`` for a later interpreter, or frees it (the oldest
    /// kept ones go first when the cache is full).
    static func give(_ pointer: UnsafeMutableRawPointer, byteCount: Int) {
        var freed: [Int] = []
        entries.withLock { entries in
            guard byteCount <= limit else {
                freed.append(Int(bitPattern: pointer))
                return
            }
            entries.append(Entry(address: Int(bitPattern: pointer), byteCount: byteCount))
            while entries.count > capacity || entries.reduce(0, { $0 + $1.byteCount }) > limit {
                freed.append(entries.removeFirst().address)
            }
        }
        for address in freed { UnsafeMutableRawPointer(bitPattern: address)?.deallocate() }
    }
}
