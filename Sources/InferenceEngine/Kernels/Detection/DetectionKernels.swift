import TFLiteFormat

/// The custom op TFLite_Detection_PostProcess (SSD box decoding + NMS).
enum DetectionKernels {
    static let customs: [String: KernelFactory] = [
        "TFLite_Detection_PostProcess": DetectionPostProcess.prepare,
    ]
}
