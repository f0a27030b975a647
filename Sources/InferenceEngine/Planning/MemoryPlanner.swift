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
/// — largest, earliest, longest-lived, largest size × lifetime or latest-ending first; first fit or
/// best fit — keeping the smallest arena and stopping at the lower bound. Each
/// buffer goes at an offset where it does not overlap the already placed buffers whose lifetimes
/// overlap its own. On chains of ops (MobileNet v1) largest-first/first-fit alone fragments by
/// ~15%; the best of the variants reaches the lower bound (``peakLiveBytes(_:alignment:)``) on every
/// shared model.
package struct GreedyMemoryPlanner: MemoryPlanner {
    package var alignment = 64
    package var randomTries = 64

    package init(alignment: Int = 64) { self.alignment = alignment }

    package func plan(_ buffers: [PlannedBuffer]) -> (offsets: [Int], arenaSize: Int) {
        let bound = peakLiveBytes(buffers, alignment: alignment)
        func span(_ i: Int) -> Int { buffers[i].lastUse - buffers[i].firstUse + 1 }
        let orders: [(Int, Int) -> Bool] = [
            { a, b in buffers[a].size != buffers[b].size ? buffers[a].size > buffers[b].size : a < b },
            { a, b in buffers[a].firstUse != buffers[b].firstUse ? buffers[a].firstUse < buffers[b].firstUse
                : (buffers[a].size != buffers[b].size ? buffers[a].size > buffers[b].size : a < b) },
            { a, b in span(a) != span(b) ? span(a) > span(b)
                : (buffers[a].size != buffers[b].size ? buffers[a].size > buffers[b].size : a < b) },
            { a, b in buffers[a].size * span(a) != buffers[b].size * span(b) ? buffers[a].size * span(a) > buffers[b].size * span(b) : a < b },
            { a, b in buffers[a].lastUse != buffers[b].lastUse ? buffers[a].lastUse > buffers[b].lastUse
                : (buffers[a].size != buffers[b].size ? buffers[a].size > buffers[b].size : a < b) },
        ]
        let overlaps = Overlaps(buffers)
        var best: (offsets: [Int], arenaSize: Int)?
        search: for order in orders {
            let sorted = buffers.indices.sorted(by: order)
            for bestFit in [false, true] {
                let candidate = place(buffers, order: sorted, bestFit: bestFit, overlaps: overlaps)
                if let current = best, current.arenaSize <= candidate.arenaSize { continue }
                best = candidate
                if candidate.arenaSize <= bound { break search }
            }
        }
        // Still above the bound: perturbed largest-first orders (sizes scaled by seeded random
        // factors), a bounded number of tries; deterministic, so every compile plans the same.
        var state: UInt64 = 0x5EED
        var tries = 0
        while let current = best, current.arenaSize > bound, tries < randomTries {
            tries += 1
            let keys = buffers.map { buffer -> Double in
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                z ^= z >> 31
                return Double(buffer.size) * (0.5 + Double(z >> 11) / Double(1 << 53))
            }
            let order = buffers.indices.sorted { keys[$0] != keys[$1] ? keys[$0] > keys[$1] : $0 < $1 }
            let candidate = place(buffers, order: order, bestFit: false, overlaps: overlaps)
            if candidate.arenaSize < current.arenaSize { best = candidate }
        }
        return best ?? ([], 0)
    }

    /// For each buffer, the other buffers alive at some same step (computed once per plan), flat:
    /// buffer i's are `others[start[i]..<start[i + 1]]`.
    private struct Overlaps {
        var start: [Int]
        var others: [Int]

        init(_ buffers: [PlannedBuffer]) {
            var counts = [Int](repeating: 0, count: buffers.count + 1)
            for i in buffers.indices {
                for j in (i + 1)..<buffers.count where buffers[i].overlapsInTime(buffers[j]) {
                    counts[i] += 1
                    counts[j] += 1
                }
            }
            start = [Int](repeating: 0, count: buffers.count + 1)
            for i in buffers.indices { start[i + 1] = start[i] + counts[i] }
            var fill = start
            others = [Int](repeating: 0, count: start[buffers.count])
            for i in buffers.indices {
                for j in (i + 1)..<buffers.count where buffers[i].overlapsInTime(buffers[j]) {
                    others[fill[i]] = j
                    fill[i] += 1
                    others[fill[j]] = i
                    fill[j] += 1
                }
            }
        }
    }

    /// Places buffers in `order`: each at the first gap (or, with `bestFit`, the smallest gap,
    /// else the end) among the placed buffers alive at the same time (`overlaps`).
    private func place(_ buffers: [PlannedBuffer], order: [Int], bestFit: Bool, overlaps: Overlaps) -> (offsets: [Int], arenaSize: Int) {
        var offsets = [Int](repeating: 0, count: buffers.count)
        var placed = [Bool](repeating: false, count: buffers.count)
        // The placed buffers alive at the same time, sorted by offset: the gaps follow in one pass.
        // (Equal offsets may come in any order: the gap found is the same.)
        var live: [(offset: Int, end: Int)] = []
        live.reserveCapacity(buffers.count)
        var arenaSize = 0
        for index in order {
            let size = align(buffers[index].size)
            live.removeAll(keepingCapacity: true)
            for k in overlaps.start[index]..<overlaps.start[index + 1] {
                let other = overlaps.others[k]
                if placed[other] { live.append((offsets[other], offsets[other] + align(buffers[other].size))) }
            }
            live.sort { $0.offset < $1.offset }
            var cursor = 0
            var chosen: Int?
            var chosenGap = Int.max
            for other in live {
                if cursor + size <= other.offset {
                    let gap = other.offset - cursor
                    if !bestFit { chosen = cursor; break }
                    if gap < chosenGap { chosen = cursor; chosenGap = gap }
                }
                cursor = max(cursor, other.end)
            }
            let offset = chosen ?? cursor
            offsets[index] = offset
            placed[index] = true
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
