import Foundation
import TestSupport
import XCTest

/// Every ```swift block of README.md must appear in ReadmeExamples.swift or ReadmeExamplesTasks.swift
/// (which compile with the tests), so the README's code cannot rot.
final class ReadmeExamplesTests: XCTestCase {
    func testEveryReadmeSnippetIsCompiled() throws {
        let readme = try String(contentsOf: SharedData.repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let examples = try ["ReadmeExamples.swift", "ReadmeExamplesTasks.swift"].map {
            try String(contentsOf: directory.appendingPathComponent($0), encoding: .utf8)
        }.joined(separator: "\n")
        func normalized(_ text: Substring) -> [String] {
            text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        let exampleLines = normalized(examples[...])
        var snippets = 0
        var rest = readme[...]
        while let start = rest.range(of: "```swift\n") {
            guard let end = rest[start.upperBound...].range(of: "```") else { break }
            let lines = normalized(rest[start.upperBound..<end.lowerBound])
            snippets += 1
            let found = exampleLines.indices.contains { i in
                i + lines.count <= exampleLines.count && Array(exampleLines[i..<(i + lines.count)]) == lines
            }
            XCTAssertTrue(found, "README snippet \(snippets) is not in ReadmeExamples.swift:\n\(lines.joined(separator: "\n"))")
            rest = rest[end.upperBound...]
        }
        XCTAssertGreaterThanOrEqual(snippets, 6)
    }
}
