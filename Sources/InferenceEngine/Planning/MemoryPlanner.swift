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
/// At two threads each operator's first half of rows is written by one core and its second half
/// by the other, so a byte that one tensor's first half and the next tensor's second half share is
/// written by the other core than last time, and its line has to be taken from that core's cache
/// (3–7× slower than writing a line of one's own). So plans placed with ``Placement/halves`` come
/// first: each buffer, within the gap the plain placement would use, centred on the halves of the
/// buffers that used that memory before; among those that reach the bound the one whose memory
/// changes threads least is kept (``crossThreadBytes(_:offsets:alignment:)``), and the plain
/// placements above run only when none does. MobileNet v1 0.25 float at 2 threads 0.413 →
/// 0.378 ms, the arena the same (docs/PERFORMANCE.md, session 11).
package struct GreedyMemoryPlanner: MemoryPlanner {
    package var alignment = 64
    package var randomTries = 64

    package init(alignment: Int = 64) { self.alignment = alignment }

    /// Most buffers planned with ``Placement/halves`` (each placement looks at every buffer placed
    /// before it: quadratic, 0.3 ms for 200 buffers); larger graphs get the plain placements only.
    static let halvesLimit = 4096

    /// Where a buffer goes in a gap.
    enum Placement {
        /// At the start of the first gap that fits.
        case firstFit
        /// At the start of the smallest gap that fits (the end of the arena if none).
        case bestFit
        /// In the first gap that fits, where its halves overlap most bytes of the same halves of
        /// the placed buffers alive at other times (``halvesOffset(_:index:size:in:offsets:placedOrder:neighbours:)``).
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
        let sortedOrders = orders.map { buffers.indices.sorted(by: $0) }
        // First the placements that centre buffers on the halves before them, each given up as
        // soon as it passes the bound; of those that reach it, the one with the fewest bytes that
        // change threads.
        var best: (offsets: [Int], arenaSize: Int)?
        var bestCrossing = Int.max
        for sorted in sortedOrders where buffers.count <= Self.halvesLimit {
            guard let candidate = place(buffers, order: sorted, placement: .halves, overlaps: overlaps, bound: bound, limit: bound)
            else { continue }
            let crossing = crossThreadBytes(buffers, offsets: candidate.offsets, alignment: alignment)
            if crossing < bestCrossing {
                best = candidate
                bestCrossing = crossing
            }
        }
        if let best { return best }
        // None did: first and best fit in each order, stopping at the bound.
        search: for sorted in sortedOrders {
            for placement in [Placement.firstFit, .bestFit] {
                guard let candidate = place(buffers, order: sorted, placement: placement, overlaps: overlaps, bound: bound,
                                            limit: best.map { $0.arenaSize - 1 } ?? Int.max) else { continue }
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
            if let candidate = place(buffers, order: order, placement: .firstFit, overlaps: overlaps, bound: bound,
                                     limit: current.arenaSize - 1) {
                best = candidate
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
        // The buffers placed so far, in order, and the candidates ``halvesOffset`` looks at.
        var placedOrder: [Int] = []
        placedOrder.reserveCapacity(buffers.count)
        var neighbours: [(start: Int, middle: Int, end: Int)] = []
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
                offset = halvesOffset(buffers, index: index, size: size, in: offset...last, offsets: offsets, placedOrder: placedOrder,
                                      neighbours: &neighbours)
            }
            offsets[index] = offset
            placed[index] = true
            placedOrder.append(index)
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
                              offsets: [Int], placedOrder: [Int], neighbours: inout [(start: Int, middle: Int, end: Int)]) -> Int {
        guard range.lowerBound < range.upperBound else { return range.lowerBound }
        let half = align(buffers[index].size / 2), buffer = buffers[index]
        neighbours.removeAll(keepingCapacity: true)
        for j in placedOrder where buffers[j].writtenInHalves && !buffers[j].overlapsInTime(buffer) {
            let start = offsets[j], end = start + align(buffers[j].size)
            if end > range.lowerBound, start < range.upperBound + size {
                neighbours.append((start, start + align(buffers[j].size / 2), end))
            }
        }
        guard !neighbours.isEmpty else { return range.lowerBound }
        func score(_ offset: Int) -> Int {
            var total = 0
            let middle = offset + half, end = offset + size
            for n in neighbours where n.end > offset && n.start < end {
                let same = overlap(offset, middle, n.start, n.middle) + overlap(middle, end, n.middle, n.end)
                let other = overlap(offset, middle, n.middle, n.end) + overlap(middle, end, n.start, n.middle)
                total += same - other
            }
            return total
        }
        var chosen = range.lowerBound, chosenScore = score(range.lowerBound)
        func consider(_ candidate: Int) {
            let offset = candidate / alignment * alignment
            guard offset != chosen, range.contains(offset) else { return }
            let value = score(offset)
            if value > chosenScore { chosen = offset; chosenScore = value }
        }
        consider(range.upperBound)
        for n in neighbours { consider(n.middle - half) }
        return chosen
    }

    func align(_ size: Int) -> Int { (max(size, 1) + alignment - 1) / alignment * alignment }
}

/// Bytes of `[a0, a1)` in `[b0, b1)`.
private func overlap(_ a0: Int, _ a1: Int, _ b0: Int, _ b1: Int) -> Int { max(0, min(a1, b1) - max(a0, b0)) }

/// How many bytes of a plan change threads per invoke at two threads: each byte counts once for
/// every buffer using it (in step order, the first again after the last) that writes it in the
/// other half than the buffer before it (see ``GreedyMemoryPlanner``). Buffers not written in
/// halves count as neither.
package func crossThreadBytes(_ buffers: [PlannedBuffer], offsets: [Int], alignment: Int = 64) -> Int {
    func align(_ size: Int) -> Int { (max(size, 1) + alignment - 1) / alignment * alignment }
    let users = buffers.indices.filter { buffers[$0].writtenInHalves }.sorted {
        buffers[$0].firstUse != buffers[$1].firstUse ? buffers[$0].firstUse < buffers[$1].firstUse : $0 < $1
    }
    // The bytes between consecutive boundaries (starts, middles, ends) each have one set of users.
    var cuts: [Int] = []
    cuts.reserveCapacity(3 * users.count)
    for i in users {
        cuts.append(offsets[i])
        cuts.append(offsets[i] + align(buffers[i].size / 2))
        cuts.append(offsets[i] + align(buffers[i].size))
    }
    cuts.sort()
    var points: [Int] = []
    points.reserveCapacity(cuts.count)
    for c in cuts where points.last != c { points.append(c) }
    guard points.count > 1 else { return 0 }
    // Per segment between two points: the first user's half, the last user's half (in step
    // order) and the changes between consecutive users; users visited in step order, each over
    // the segments it covers.
    let segments = points.count - 1
    var first = [Int8](repeating: -1, count: segments), last = [Int8](repeating: -1, count: segments)
    var changes = [Int](repeating: 0, count: segments)
    func index(of point: Int) -> Int {
        var lo = 0, hi = points.count - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if points[mid] < point { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
    for i in users {
        let start = offsets[i], middle = start + align(buffers[i].size / 2), end = start + align(buffers[i].size)
        var k = index(of: start)
        while k < segments, points[k] < end {
            let half: Int8 = points[k] >= middle ? 1 : 0
            if first[k] < 0 { first[k] = half } else if last[k] != half { changes[k] += 1 }
            last[k] = half
            k += 1
        }
    }
    var total = 0
    for k in 0..<segments where first[k] >= 0 {
        total += (changes[k] + (first[k] != last[k] ? 1 : 0)) * (points[k + 1] - points[k])
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
