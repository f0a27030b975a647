import Foundation

/// A usage error: wrong or missing arguments. Exit code 2.
struct UsageError: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// A runtime error of the tool itself (not of a library), with a message for the user. Exit code 1.
struct CLIError: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// One subcommand: its name, its help text and how it runs.
struct Command: Sendable {
    let name: String
    let summary: String
    let usage: String
    let options: [OptionSpec]
    let example: String
    let run: @Sendable (ParsedArguments) throws -> Void

    var help: String {
        var text = "\(summary)\n\nUsage: edgevision \(usage)\n"
        if !options.isEmpty {
            text += "\nOptions:\n"
            let width = options.map { $0.label.count }.max() ?? 0
            for option in options {
                let lines = Command.wrap(option.help, width: max(40, 100 - width - 4))
                text += "  " + option.label.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + lines[0] + "\n"
                for line in lines.dropFirst() { text += String(repeating: " ", count: width + 4) + line + "\n" }
            }
        }
        let examples = example.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        text += examples.count > 1 ? "\nExamples:\n" : "\nExample:\n"
        for line in examples { text += "  \(line)\n" }
        return text
    }
}

extension Command {
    /// Splits `text` into lines of at most `width` characters at spaces (longer words stay whole).
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: false) {
            // A word longer than a whole line (a JSON shape) stays on the current line.
            if !line.isEmpty, line.count + 1 + word.count > width, word.count <= width {
                lines.append(line)
                line = String(word)
            } else {
                line += (line.isEmpty ? "" : " ") + word
            }
        }
        lines.append(line)
        return lines
    }
}

enum CommandLineTool {
    static let commands: [Command] = [InspectCommand.command, InvokeCommand.command, TensorCommand.command, LabelCommand.command, ClassifyCommand.command, SegmentCommand.command, DetectCommand.detect, DetectCommand.track, ModelsCommand.command, BenchCommand.command]

    static var overview: String {
        var text = """
        edgevision: on-device vision with TFLite models (ML Kit / MediaPipe Tasks semantics).

        Usage: edgevision <command> [options]

        Commands:

        """
        let width = commands.map { $0.name.count }.max() ?? 0
        for command in commands {
            text += "  " + command.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + command.summary + "\n"
        }
        text += "\nRun 'edgevision <command> --help' for the options of a command.\n"
        return text
    }

    static func main(_ arguments: [String]) -> Never {
        let args = Array(arguments.dropFirst())
        guard let first = args.first else {
            FileHandle.standardError.write(Data(overview.utf8))
            exit(2)
        }
        if first == "help" || first == "--help" || first == "-h" {
            if args.count > 1 {
                guard let command = commands.first(where: { $0.name == args[1] }) else {
                    fail(usage: "unknown command '\(args[1])'. Run 'edgevision help' for the list of commands.")
                }
                guard args.count == 2 else { fail(usage: "help takes one command name, got '\(args.dropFirst().joined(separator: " "))'") }
                print(command.help, terminator: "")
            } else {
                print(overview, terminator: "")
            }
            exit(0)
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            fail(usage: "unknown command '\(first)'. Run 'edgevision help' for the list of commands.")
        }
        let rest = Array(args.dropFirst())
        if rest.contains("--help") || rest.contains("-h") {
            print(command.help, terminator: "")
            exit(0)
        }
        do {
            let parsed = try ParsedArguments(rest, options: command.options)
            try command.run(parsed)
            exit(0)
        } catch let error as UsageError {
            fail(usage: "\(command.name): \(error.message)\nUsage: edgevision \(command.usage)\nRun 'edgevision \(command.name) --help' for every option.")
        } catch {
            FileHandle.standardError.write(Data("edgevision \(command.name): error: \(oneLine(error))\n".utf8))
            exit(1)
        }
    }

    /// An error's message on one line: line breaks (and the spaces around them) become one space,
    /// so a runtime error is always exactly one line on stderr.
    static func oneLine(_ error: Error) -> String {
        oneLine("\(error)")
    }

    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: { $0.isNewline })
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
            .joined(separator: " ")
    }

    static func fail(usage message: String) -> Never {
        FileHandle.standardError.write(Data("edgevision: \(message)\n".utf8))
        exit(2)
    }
}
