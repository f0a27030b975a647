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
    /// Whether two threads write the buffer by halves, the first half's bytes on one thread and the
    /// second half's on the other (a tensor split by rows or pixels; not a kernel's scratch).
    package var writtenInHalves: Bool

    package init(size: Int, firstUse: Int, lastUse: Int, writtenInHalves: Bool = true) {
        self.size = size
        self.firstUse = firstUse
        self.lastUse = lastUse
        self.writtenInHalves = writtenInHalves
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
///
/// Among the plans that reach the bound, the one whose memory changes threads least is kept
/// (``crossThreadBytes(_:offsets:)``): at two threads each operator's first half of rows is
/// written by one core and its second half by the other, so a byte that one tensor's first half
/// and the next tensor's second half share is written by the other core than last time, and its
/// line has to be taken from that core's cache (3–7× slower than writing a line of one's own).
/// Plans placed with ``Placement/halves`` put each buffer, within the gaps the plain placement
/// would use, where its halves fall on the same halves of the buffers that used that memory
/// before (centred on them). MobileNet v1 0.25 float at 2 threads 0.414 → 0.383 ms, the arena the
/// same.
package struct GreedyMemoryPlanner: MemoryPlanner {
    package var alignment = 64
    package var randomTries = 64

    package init(alignment: Int = 64) { self.alignment = alignment }

    /// Where a buffer goes in a gap.
    enum Placement: CaseIterable {
        /// At the start of the first gap that fits.
        case firstFit
        /// At the start of the smallest gap that fits (the end of the arena if none).
        case bestFit
        /// In the first gap that fits, where its halves overlap most bytes of the same halves of
        /// the placed buffers alive at other times (``halvesOffset(_:index:size:in:offsets:placed:)``).
        case halves
    }

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
        var bestCrossing = Int.max
        for order in orders {
            let sorted = buffers.indices.sorted(by: order)
            for placement in Placement.allCases {
                guard let candidate = place(buffers, order: sorted, placement: placement, overlaps: overlaps, bound: bound,
                                            limit: best?.arenaSize ?? Int.max) else { continue }
                // Plans of the same size: the one with the fewest bytes that change threads.
                let crossing = crossThreadBytes(buffers, offsets: candidate.offsets)
                if let current = best, current.arenaSize == candidate.arenaSize, crossing >= bestCrossing { continue }
                best = candidate
                bestCrossing = crossing
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
            for placement in [Placement.firstFit, .halves] {
                let size = best?.arenaSize ?? current.arenaSize
                guard let candidate = place(buffers, order: order, placement: placement, overlaps: overlaps, bound: bound,
                                            limit: size) else { continue }
                let crossing = crossThreadBytes(buffers, offsets: candidate.offsets)
                if candidate.arenaSize < size || crossing < bestCrossing {
                    best = candidate
                    bestCrossing = crossing
                }
            }
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

    /// Places buffers in `order`, each in a gap among the placed buffers alive at the same time
    /// (`overlaps`) as `placement` says; `bound`: the arena size a buffer placed in the last gap
    /// should stay within (``Placement/halves``). Nil as soon as the arena would grow beyond `limit`
    /// (the best plan so far).
    private func place(_ buffers: [PlannedBuffer], order: [Int], placement: Placement, overlaps: Overlaps, bound: Int,
                       limit: Int) -> (offsets: [Int], arenaSize: Int)? {
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
            var gapEnd = Int.max
            for other in live {
                if cursor + size <= other.offset {
                    let gap = other.offset - cursor
                    if placement != .bestFit { chosen = cursor; gapEnd = other.offset; break }
                    if gap < chosenGap { chosen = cursor; chosenGap = gap }
                }
                cursor = max(cursor, other.end)
            }
            var offset = chosen ?? cursor
            if placement == .halves, buffers[index].writtenInHalves {
                // Anywhere in the gap (the last one: up to the bound, if it fits there).
                let last = gapEnd == Int.max ? max(offset, bound - size) : gapEnd - size
                offset = halvesOffset(buffers, index: index, size: size, in: offset...last, offsets: offsets, placed: placed)
            }
            offsets[index] = offset
            placed[index] = true
            arenaSize = max(arenaSize, offset + size)
            if arenaSize > limit { return nil }
        }
        return (offsets, arenaSize)
    }

    /// The offset in `range` (multiples of the alignment) where buffer `index`'s halves overlap
    /// the most bytes of the same halves of the placed buffers that share no step with it (less
    /// the bytes they overlap of the other halves); the start of `range` when none is better.
    /// Tried: the range's ends and every offset that puts the buffer's middle on such a buffer's.
    private func halvesOffset(_ buffers: [PlannedBuffer], index: Int, size: Int, in range: ClosedRange<Int>,
                              offsets: [Int], placed: [Bool]) -> Int {
        let half = align(size / 2)
        var neighbours: [(start: Int, middle: Int, end: Int)] = []
        for j in buffers.indices where placed[j] && buffers[j].writtenInHalves && !buffers[j].overlapsInTime(buffers[index]) {
            let start = offsets[j], end = start + align(buffers[j].size)
            if end > range.lowerBound, start < range.upperBound + size {
                neighbours.append((start, start + align(buffers[j].size / 2), end))
            }
        }
        guard !neighbours.isEmpty else { return range.lowerBound }
        func score(_ offset: Int) -> Int {
            var total = 0
            let middle = offset + half, end = offset + size
            for n in neighbours {
                let same = overlap(offset, middle, n.start, n.middle) + overlap(middle, end, n.middle, n.end)
                let other = overlap(offset, middle, n.middle, n.end) + overlap(middle, end, n.start, n.middle)
                total += same - other
            }
            return total
        }
        var chosen = range.lowerBound, chosenScore = score(range.lowerBound)
        for candidate in [range.upperBound] + neighbours.map({ $0.middle - half }) {
            let offset = candidate / alignment * alignment
            guard range.contains(offset) else { continue }
            let value = score(offset)
            if value > chosenScore { chosen = offset; chosenScore = value }
        }
        return chosen
    }

    func align(_ size: Int) -> Int { (max(size, 1) + alignment - 1) / alignment * alignment }
}

/// Bytes of `[a0, a1)` in `[b0, b1)`.
private func overlap(_ a0: Int, _ a1: Int, _ b0: Int, _ b1: Int) -> Int { max(0, min(a1, b1) - max(a0, b0)) }

/// Bytes a plan has change threads from invoke to invoke at two threads: for each byte, each time
/// the buffer using it next (in step order, the first again after the last) writes it in the other
/// half than the one before (see ``GreedyMemoryPlanner``). Buffers not written in halves count as
/// neither.
package func crossThreadBytes(_ buffers: [PlannedBuffer], offsets: [Int], alignment: Int = 64) -> Int {
    func align(_ size: Int) -> Int { (max(size, 1) + alignment - 1) / alignment * alignment }
    let users = buffers.indices.filter { buffers[$0].writtenInHalves }
    // The bytes between consecutive boundaries (starts, middles, ends) each have one set of users.
    var cuts = Set<Int>()
    for i in users {
        cuts.insert(offsets[i])
        cuts.insert(offsets[i] + align(buffers[i].size / 2))
        cuts.insert(offsets[i] + align(buffers[i].size))
    }
    let points = cuts.sorted()
    let byFirstUse = users.sorted { buffers[$0].firstUse != buffers[$1].firstUse ? buffers[$0].firstUse < buffers[$1].firstUse : $0 < $1 }
    var total = 0
    for (a, b) in zip(points, points.dropFirst()) {
        var halves: [Bool] = []
        for i in byFirstUse where offsets[i] <= a && b <= offsets[i] + align(buffers[i].size) {
            halves.append(a >= offsets[i] + align(buffers[i].size / 2))
        }
        guard halves.count > 1 else { continue }
        var changes = 0
        for k in halves.indices where halves[k] != halves[(k + 1) % halves.count] { changes += 1 }
        total += changes * (b - a)
    }
    return total
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
