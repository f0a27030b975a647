import TFLiteFormat

/// MINIMUM: see ``MaximumMinimum`` (shared with MAXIMUM).
enum Minimum {
    static func prepare(_ context: inout OpContext) throws -> any Kernel {
        try MaximumMinimum.prepareMinimum(&context)
    }
}
