import TFLiteFormat

/// Operators that only copy their input (``CopyingKernel``: a RESHAPE, EXPAND_DIMS, a float resize
/// to the same size) are removed from the plan when their output is an inner tensor: the readers of
/// that output read the input's memory instead, which holds the same bytes. DeepLab's 33×33 → 33×33
/// resize before its final upsampling was a 0.013 ms copy at one thread (0.008 ms at two).
/// Kernels see their operands only as memory (the shapes were fixed at prepare), so a reader
/// prepared for the copy's shape runs unchanged on the input's bytes.
enum CopyElision {
    /// Removes the copies from `prepared` (in execution order), pointing their readers at their
    /// inputs, and updates `readers` (tensor → operators reading it).
    static func apply(_ prepared: inout [ResidualFusion.Entry], readers: inout ReaderCounts, tensors: [TensorInfo],
                      graph: Subgraph, graphOutputs: Set<Int>) {
        var source = [Int: Int]()  // an elided output → the tensor holding its bytes
        var kept: [ResidualFusion.Entry] = []
        kept.reserveCapacity(prepared.count)
        for var entry in prepared {
            entry.inputs = entry.inputs.map { source[$0] ?? $0 }
            if let copy = entry.kernel as? CopyingKernel, copy.copiesInput, entry.outputs.count == 1,
               let input = entry.inputs.first, input >= 0, tensors[input].constant == nil {
                let output = entry.outputs[0]
                if !graphOutputs.contains(output), !graph.tensors[output].isVariable, !graph.tensors[input].isVariable,
                   tensors[input].type == tensors[output].type, tensors[input].byteCount == tensors[output].byteCount {
                    source[output] = input
                    readers.add(readers[output] - 1, to: input)
                    readers.remove(output)
                    continue
                }
            }
            kept.append(entry)
        }
        prepared = kept
    }
}
