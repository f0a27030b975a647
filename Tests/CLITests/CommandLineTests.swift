import Foundation
import TestSupport
import XCTest

/// What every command shares: help, usage errors (exit 2) and bad files (exit 1, one stderr line).
final class CommandLineTests: CLITestCase {
    let commands = ["inspect", "invoke", "tensor", "label", "classify", "segment", "detect", "track"]

    func testHelpListsTheCommands() throws {
        for arguments in [["help"], ["--help"], ["-h"]] {
            let overview = try succeed(arguments)
            XCTAssertTrue(overview.stdout.contains("Usage: edgevision <command>"), overview.stdout)
            for command in commands {
                XCTAssertTrue(overview.stdout.contains("\n  \(command) "), "\(arguments) lists \(command): \(overview.stdout)")
            }
        }
        // No arguments: the overview on stderr, exit 2.
        let none = try tool([])
        XCTAssertEqual(none.exitCode, 2)
        XCTAssertTrue(none.stderr.contains("Commands:"), none.stderr)
        assertUsageError(try tool(["help", "no-such-command"]), "no-such-command")
    }

    /// `<command> --help`, `<command> -h` and `help <command>` print the same text: a usage line,
    /// every option (each with a description) and examples; every option in the usage line is
    /// described and every described option is in the usage line; every option appears in an
    /// example.
    func testEveryCommandsHelpListsEveryOptionWithAnExample() throws {
        let overview = try succeed(["help"]).stdout
        let listed = overview.components(separatedBy: "Commands:\n").last?.components(separatedBy: "\n\n").first?
            .split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) } ?? []
        XCTAssertTrue(Set(commands).isSubset(of: Set(listed)), "\(listed)")
        for command in listed {
            let help = try succeed([command, "--help"]).stdout
            XCTAssertEqual(try succeed([command, "-h"]).stdout, help, command)
            XCTAssertEqual(try succeed(["help", command]).stdout, help, command)
            XCTAssertTrue(help.contains("Usage: edgevision \(command)"), help)
            let sections = help.components(separatedBy: "\nOptions:\n")
            XCTAssertEqual(sections.count, 2, "\(command) has an Options section")
            let usage = sections[0]
            let parts = (sections.last ?? "").components(separatedBy: "\nExample")
            XCTAssertEqual(parts.count, 2, "\(command) has examples")
            let optionLines = parts[0].split(separator: "\n").filter { $0.hasPrefix("  --") }
            let described = optionLines.compactMap { $0.dropFirst(2).split(separator: " ").first.map(String.init) }
            XCTAssertFalse(described.isEmpty, command)
            for line in optionLines {
                let words = line.split(separator: " ", omittingEmptySubsequences: true)
                XCTAssertGreaterThan(words.count, 2, "\(command): '\(line)' has a description")
            }
            let inUsage = Set(Self.options(in: usage))
            XCTAssertEqual(inUsage, Set(described), "\(command): options in the usage line vs. described")
            let examples = parts[1].split(separator: "\n").dropFirst().filter { $0.hasPrefix("  edgevision \(command)") }
            XCTAssertFalse(examples.isEmpty, "\(command) has an example")
            // (Checked for the commands this suite covers; `models` has its own tests.)
            if commands.contains(command) {
                let exemplified = Set(examples.flatMap { Self.options(in: String($0)) })
                XCTAssertEqual(Set(described).subtracting(exemplified), [], "\(command): options without an example")
            }
        }
    }

    static func options(in text: String) -> [String] {
        text.split(whereSeparator: { " []|\n.,".contains($0) }).filter { $0.hasPrefix("--") && $0.count > 2 }
            .map { String($0.split(separator: "=")[0]) }
    }

    func testUnknownOptionsAndMissingArgumentsExitWithTwo() throws {
        let burger = image("burger.jpg"), tiny = model("mobilenet_v1_0.25_128_quant.tflite")
        let cases: [[String]] = [
            ["no-such-command"],
            ["--no-such-option"],
            ["inspect"], ["invoke"], ["tensor"], ["label"], ["classify"], ["segment"], ["detect"], ["track"],
            ["inspect", tiny, "--bogus"],
            ["invoke", tiny, "--bogus"],
            ["tensor", burger, "--model", tiny, "--out", "/tmp/x.bin", "--bogus"],
            ["label", burger, "--bogus"],
            ["classify", burger, "--model", tiny, "--bogus"],
            ["segment", burger, "--bogus"],
            ["detect", burger, "--bogus"],
            ["track", trafficVideo, "--bogus"],
            ["label", burger, "-x"],
            ["label", burger, "--max-results"],
            ["label", burger, "--json=yes"],
            ["label", burger, "--max-results", "2", "--max-results", "3"],
            ["classify", burger, "--model"],
        ]
        for arguments in cases {
            let result = try tool(arguments)
            XCTAssertEqual(result.exitCode, 2, "\(arguments): \(result.stderr)")
            XCTAssertEqual(result.stdout, "", "\(arguments)")
            XCTAssertTrue(result.stderr.hasPrefix("edgevision: "), "\(arguments): \(result.stderr)")
            if let command = arguments.first, commands.contains(command) {
                XCTAssertTrue(result.stderr.contains("Usage: edgevision \(command)"), "\(arguments): \(result.stderr)")
            }
        }
    }

    func testMissingImageIsARuntimeErrorWithOneLine() throws {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("no-such-image-\(UUID().uuidString).jpg").path
        let tiny = model("mobilenet_v1_0.25_128_quant.tflite")
        for arguments in [["label", missing, "--model", tiny], ["label", missing, "--model", tiny, "--json"],
                          ["classify", missing, "--model", tiny, "--json"], ["tensor", missing, "--model", tiny, "--out", "/tmp/x.bin"],
                          ["segment", missing, "--json"], ["detect", missing]] {
            let result = try tool(arguments)
            assertRuntimeError(result, [missing], "\(arguments)")
            XCTAssertEqual(result.stdout, "", "\(arguments)")
        }
    }

    func testCorruptImageIsARuntimeErrorWithOneLine() throws {
        let directory = try temporaryDirectory()
        let tiny = model("mobilenet_v1_0.25_128_quant.tflite")
        let corrupt = try write(corruptImageBytes, "corrupt.jpg", in: directory)
        let empty = try write(Data(), "empty.png", in: directory)
        let text = try write(Data("hello\nworld\n".utf8), "text.png", in: directory)
        for path in [corrupt, empty, text] {
            for arguments in [["label", path, "--model", tiny, "--json"], ["classify", path, "--model", tiny],
                              ["tensor", path, "--model", tiny, "--out", directory.appendingPathComponent("x.bin").path],
                              ["segment", path, "--json"], ["detect", path, "--json"]] {
                let result = try tool(arguments)
                assertRuntimeError(result, [], "\(arguments)")
                XCTAssertEqual(result.stdout, "", "\(arguments)")
            }
        }
    }

    func testCorruptModelIsARuntimeErrorWithOneLine() throws {
        let directory = try temporaryDirectory()
        let original = try Data(contentsOf: SharedData.model("mobilenet_v1_0.25_128_quant.tflite"))
        let truncated = try write(original.prefix(original.count / 2), "truncated.tflite", in: directory)
        let garbage = try write(Data(repeating: 0xAB, count: 4096), "garbage.tflite", in: directory)
        let missing = directory.appendingPathComponent("missing.tflite").path
        let burger = image("burger.jpg")
        for model in [truncated, garbage, missing] {
            for arguments in [["inspect", model], ["invoke", model, "--input", burger, "--output-dir", directory.path],
                              ["tensor", burger, "--model", model, "--out", directory.appendingPathComponent("x.bin").path],
                              ["label", burger, "--model", model, "--json"], ["classify", burger, "--model", model],
                              ["segment", burger, "--model", model], ["detect", burger, "--custom-model", model],
                              ["detect", burger, "--detector", model], ["track", trafficVideo, "--detector", model, "--json"]] {
                let result = try tool(arguments)
                assertRuntimeError(result, [], "\(arguments)")
                XCTAssertEqual(result.stdout, "", "\(arguments)")
            }
        }
        // A model of the wrong kind: a segmenter given as the classifier.
        assertRuntimeError(try tool(["classify", burger, "--model", self.model("selfie_segmentation.tflite")]))
    }
}
