/// The two rows of horizontal blends a separable bilinear resize needs for one output row, kept
/// for the next output rows: consecutive output rows mostly read the same source rows (all of them
/// when upscaling), so each source row is blended once instead of once per output row that reads
/// it. Used by ``ImagePreprocessor`` (Double rows) and the segmentation mask's resize (Float rows).
package struct BlendedRowPair<Element> {
    private let buffers: (UnsafeMutablePointer<Element>, UnsafeMutablePointer<Element>)
    /// The source rows the two buffers hold (-1: none).
    private var held = (-1, -1)

    /// Two rows of scratch the caller owns (each as long as a blended row).
    package init(_ first: UnsafeMutablePointer<Element>, _ second: UnsafeMutablePointer<Element>) {
        buffers = (first, second)
    }

    /// The blended source rows `y0` and `y1`, computing with `blend(y, into:)` those not held.
    package mutating func rows(_ y0: Int, _ y1: Int,
                               blend: (Int, UnsafeMutablePointer<Element>) -> Void) -> (top: UnsafeMutablePointer<Element>, bottom: UnsafeMutablePointer<Element>) {
        let top = row(y0, keeping: y1, blend)
        let bottom = row(y1, keeping: y0, blend)
        return (top, bottom)
    }

    /// Row `y`, blended into the buffer that does not hold `keep` unless already held.
    private mutating func row(_ y: Int, keeping keep: Int, _ blend: (Int, UnsafeMutablePointer<Element>) -> Void) -> UnsafeMutablePointer<Element> {
        if held.0 == y { return buffers.0 }
        if held.1 == y { return buffers.1 }
        if held.0 == keep {
            blend(y, buffers.1)
            held.1 = y
            return buffers.1
        }
        blend(y, buffers.0)
        held.0 = y
        return buffers.0
    }
}
