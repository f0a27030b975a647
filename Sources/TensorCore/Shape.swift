/// A tensor shape: the size of every dimension, outermost first (NHWC for images).
public struct Shape: Sendable, Hashable, CustomStringConvertible, ExpressibleByArrayLiteral {
    public var dimensions: [Int]

    public init(_ dimensions: [Int]) { self.dimensions = dimensions }
    public init(arrayLiteral elements: Int...) { self.dimensions = elements }

    public var rank: Int { dimensions.count }

    public subscript(_ axis: Int) -> Int { dimensions[axis] }

    /// The number of elements, or `nil` if a dimension is negative (dynamic) or the product overflows.
    public var elementCount: Int? {
        var product = 1
        for d in dimensions {
            guard d >= 0 else { return nil }
            let (p, overflow) = product.multipliedReportingOverflow(by: d)
            guard !overflow else { return nil }
            product = p
        }
        return product
    }

    public var description: String { "[" + dimensions.map(String.init).joined(separator: ",") + "]" }
}
