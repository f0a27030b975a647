/// The orderings TFLite's detection post-processing relies on, reproduced so that equal scores
/// resolve the same way: `ArgMaxVector` (first maximum), `std::stable_sort` and libstdc++'s
/// `std::partial_sort` (heap select + heap sort), all on index arrays ordered by decreasing value.
/// Allocation-free: callers pass the buffers.
enum DetectionSort {
    /// Index of the first maximum (`value > best` updates), like TFLite's ArgMaxVector.
    @inline(__always)
    static func argMax(_ values: UnsafePointer<Float>, count: Int) -> Int {
        var best = values[0], index = 0
        var i = 1
        while i < count {
            if values[i] > best { best = values[i]; index = i }
            i += 1
        }
        return index
    }

    /// Stable sort of 0..<count by decreasing `values` (equal values keep increasing index order),
    /// the result of `std::stable_sort` with `values[i] > values[j]`. `temp` holds `count` elements.
    static func stableArgSortDecreasing(_ values: UnsafePointer<Float>, count: Int,
                                        indices: UnsafeMutablePointer<Int32>, temp: UnsafeMutablePointer<Int32>) {
        for i in 0..<count { indices[i] = Int32(i) }
        guard count > 1 else { return }
        // Insertion sort of short runs.
        let run = 16
        var start = 0
        while start < count {
            let end = min(start + run, count)
            var i = start + 1
            while i < end {
                let item = indices[i]
                let v = values[Int(item)]
                var j = i
                while j > start, v > values[Int(indices[j - 1])] {
                    indices[j] = indices[j - 1]
                    j -= 1
                }
                indices[j] = item
                i += 1
            }
            start = end
        }
        // Bottom-up merges, alternating between the two buffers.
        var source = indices, destination = temp
        var width = run
        while width < count {
            var left = 0
            while left < count {
                let middle = min(left + width, count), right = min(left + 2 * width, count)
                var a = left, b = middle, out = left
                while a < middle, b < right {
                    // Take from the right run only when strictly greater: stable.
                    if values[Int(source[b])] > values[Int(source[a])] {
                        destination[out] = source[b]; b += 1
                    } else {
                        destination[out] = source[a]; a += 1
                    }
                    out += 1
                }
                while a < middle { destination[out] = source[a]; a += 1; out += 1 }
                while b < right { destination[out] = source[b]; b += 1; out += 1 }
                left = right
            }
            swap(&source, &destination)
            width *= 2
        }
        if source != indices { indices.update(from: source, count: count) }
    }

    /// `std::iota` + libstdc++'s `std::partial_sort(first, first + sorted, last, comp)` with
    /// `comp(i, j) = values[i] > values[j]`: the first `sorted` entries of `indices` (which holds
    /// `count` elements) receive the indices of the largest values, in decreasing order, with ties
    /// broken exactly as libstdc++'s heap select and heap sort do.
    static func partialArgSortDecreasing(_ values: UnsafePointer<Float>, count: Int, sorted: Int,
                                         indices: UnsafeMutablePointer<Int32>) {
        for i in 0..<count { indices[i] = Int32(i) }
        let middle = min(sorted, count)
        guard middle > 0 else { return }
        @inline(__always) func less(_ a: Int32, _ b: Int32) -> Bool { values[Int(a)] > values[Int(b)] }

        // std::__push_heap
        func pushHeap(_ holeStart: Int, _ top: Int, _ value: Int32) {
            var hole = holeStart
            var parent = (hole - 1) / 2
            while hole > top, less(indices[parent], value) {
                indices[hole] = indices[parent]
                hole = parent
                parent = (hole - 1) / 2
            }
            indices[hole] = value
        }
        // std::__adjust_heap on [0, length)
        func adjustHeap(_ holeStart: Int, _ length: Int, _ value: Int32) {
            let top = holeStart
            var hole = holeStart
            var child = holeStart
            while child < (length - 1) / 2 {
                child = 2 * (child + 1)
                if less(indices[child], indices[child - 1]) { child -= 1 }
                indices[hole] = indices[child]
                hole = child
            }
            if length & 1 == 0, child == (length - 2) / 2 {
                child = 2 * (child + 1)
                indices[hole] = indices[child - 1]
                hole = child - 1
            }
            pushHeap(hole, top, value)
        }
        // std::__pop_heap(first, last, result): moves the top to `result`, re-heaps [0, length).
        func popHeap(_ length: Int, _ result: Int) {
            let value = indices[result]
            indices[result] = indices[0]
            adjustHeap(0, length, value)
        }

        // std::__heap_select: std::__make_heap on [0, middle), then sift in smaller elements.
        if middle >= 2 {
            var parent = (middle - 2) / 2
            while true {
                adjustHeap(parent, middle, indices[parent])
                if parent == 0 { break }
                parent -= 1
            }
        }
        var i = middle
        while i < count {
            if less(indices[i], indices[0]) { popHeap(middle, i) }
            i += 1
        }
        // std::__sort_heap on [0, middle).
        var last = middle
        while last > 1 {
            last -= 1
            popHeap(last, last)
        }
    }
}
