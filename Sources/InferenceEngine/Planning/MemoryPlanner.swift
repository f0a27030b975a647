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

/// Greedy by size: the largest buffers first, each at the lowest offset where it fits between the
/// already placed buffers whose lifetimes overlap its own (TFLM's GreedyMemoryPlanner).
package struct GreedyMemoryPlanner: MemoryPlanner {
    package var alignment = 64

    package init(alignment: Int = 64) { self.alignment = alignment }

    package func plan(_ buffers: [PlannedBuffer]) -> (offsets: [Int], arenaSize: Int) {
        var offsets = [Int](repeating: 0, count: buffers.count)
        let order = buffers.indices.sorted { a, b in
            buffers[a].size != buffers[b].size ? buffers[a].size > buffers[b].size : a < b
        }
        var placed: [(offset: Int, end: Int, index: Int)] = []
        var arenaSize = 0
        for index in order {
            let buffer = buffers[index]
            let size = align(buffer.size)
            let conflicts = placed.filter { buffers[$0.index].overlapsInTime(buffer) }.sorted { $0.offset < $1.offset }
            var candidate = 0
            for other in conflicts {
                if candidate + size <= other.offset { break }
                candidate = max(candidate, other.end)
            }
            offsets[index] = candidate
            placed.append((candidate, candidate + size, index))
            arenaSize = max(arenaSize, candidate + size)
        }
        return (offsets, arenaSize)
    }

    func align(_ size: Int) -> Int { (max(size, 1) + alignment - 1) / alignment * alignment }
}
