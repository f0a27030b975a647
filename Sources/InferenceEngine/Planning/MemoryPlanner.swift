/// A memory planner: places buffers with known lifetimes in one arena so that buffers alive at the
/// same time never overlap. Strategies are swappable (TFLM's `MicroMemoryPlanner` idea).
package protocol MemoryPlanner {
    /// Plans `buffers`; returns each buffer's offset (same order) and the arena size.
    func plan(_ buffers: [PlannedBuffer]) -> (offsets: [Int], arenaSize: Int)
}

/// A buffer to place: its size and the first and last step (node index) at which it is alive.
package struct PlannedBuffer: Hashable {
    package var size: Int
    package var firstUse: Int
    package var lastUse: Int

    package init(size: Int, firstUse: Int, lastUse: Int) {
        self.size = size
        self.firstUse = firstUse
        self.lastUse = lastUse
    }

    package func overlapsInTime(_ other: PlannedBuffer) -> Bool {
        firstUse <= other.lastUse && other.firstUse <= lastUse
    }
}

/// Greedy placement (TFLM's GreedyMemoryPlanner idea), tried with a few buffer orders and gap rules
/// — largest first or earliest first, first fit or best fit — keeping the smallest arena. Each
/// buffer goes at an offset where it does not overlap the already placed buffers whose lifetimes
/// overlap its own. On chains of ops (MobileNet v1) largest-first/first-fit alone fragments by
/// ~15%; the best of the variants reaches the lower bound (``peakLiveBytes(_:alignment:)``) on every
/// shared model.
package struct GreedyMemoryPlanner: MemoryPlanner {
    package var alignment = 64

    package init(alignment: Int = 64) { self.alignment = alignment }

    package func plan(_ buffers: [PlannedBuffer]) -> (offsets: [Int], arenaSize: Int) {
        let bySize = buffers.indices.sorted { a, b in
            buffers[a].size != buffers[b].size ? buffers[a].size > buffers[b].size : a < b
        }
        let byStart = buffers.indices.sorted { a, b in
            buffers[a].firstUse != buffers[b].firstUse ? buffers[a].firstUse < buffers[b].firstUse
                : (buffers[a].size != buffers[b].size ? buffers[a].size > buffers[b].size : a < b)
        }
        var best: (offsets: [Int], arenaSize: Int)?
        for order in [bySize, byStart] {
            for bestFit in [false, true] {
                let candidate = place(buffers, order: order, bestFit: bestFit)
                if let current = best, current.arenaSize <= candidate.arenaSize { continue }
                best = candidate
            }
        }
        return best ?? ([], 0)
    }

    /// Places buffers in `order`: each at the first gap (or, with `bestFit`, the smallest gap,
    /// else the end) among the placed buffers alive at the same time.
    private func place(_ buffers: [PlannedBuffer], order: [Int], bestFit: Bool) -> (offsets: [Int], arenaSize: Int) {
        var offsets = [Int](repeating: 0, count: buffers.count)
        var placed: [(offset: Int, end: Int, index: Int)] = []
        var arenaSize = 0
        for index in order {
            let buffer = buffers[index]
            let size = align(buffer.size)
            let conflicts = placed.filter { buffers[$0.index].overlapsInTime(buffer) }.sorted { $0.offset < $1.offset }
            var cursor = 0
            var chosen: Int?
            var chosenGap = Int.max
            for other in conflicts {
                if cursor + size <= other.offset {
                    let gap = other.offset - cursor
                    if !bestFit { chosen = cursor; break }
                    if gap < chosenGap { chosen = cursor; chosenGap = gap }
                }
                cursor = max(cursor, other.end)
            }
            let offset = chosen ?? cursor
            offsets[index] = offset
            placed.append((offset, offset + size, index))
            arenaSize = max(arenaSize, offset + size)
        }
        return (offsets, arenaSize)
    }

    func align(_ size: Int) -> Int { (max(size, 1) + alignment - 1) / alignment * alignment }
}

/// The least any placement of `buffers` can use: the largest sum of (aligned) sizes of buffers
/// alive at the same step. ``GreedyMemoryPlanner`` is reported against it (`edgevision bench`).
package func peakLiveBytes(_ buffers: [PlannedBuffer], alignment: Int = 64) -> Int {
    guard let lastStep = buffers.map(\.lastUse).max() else { return 0 }
    let firstStep = buffers.map(\.firstUse).min() ?? 0
    guard lastStep >= firstStep else { return 0 }
    var delta = [Int](repeating: 0, count: lastStep - firstStep + 2)
    for b in buffers where b.lastUse >= b.firstUse {
        let size = (Swift.max(b.size, 1) + alignment - 1) / alignment * alignment
        delta[b.firstUse - firstStep] += size
        delta[b.lastUse - firstStep + 1] -= size
    }
    var live = 0, peak = 0
    for d in delta {
        live += d
        peak = Swift.max(peak, live)
    }
    return peak
}
