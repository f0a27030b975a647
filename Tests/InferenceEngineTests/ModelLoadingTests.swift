import Foundation
import InferenceEngine
import TestSupport
import XCTest

final class ModelLoadingTests: XCTestCase {
    func testUnknownCustomOpFailsAtLoadNamingOpAndNode() throws {
        XCTAssertThrowsError(try Model(contentsOfFile: SharedData.model("model_invoking_error.tflite").path)) { error in
            guard let error = error as? EngineError else { return XCTFail("not an EngineError: \(error)") }
            XCTAssertEqual(error.code, .unsupportedOperator)
            XCTAssertEqual(error.nodeIndex, 0)
            XCTAssertEqual(error.operatorName, "CUSTOM:fake-op-double")
            XCTAssertTrue(error.message.contains("fake-op-double"), error.message)
            XCTAssertTrue(error.message.contains("node 0"), error.message)
        }
    }
}
