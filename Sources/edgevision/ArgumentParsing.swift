/// A command-line option: `--name VALUE` (or `--name=VALUE`) or a flag `--name`.
struct OptionSpec: Sendable {
    let name: String
    let valueName: String?
    let help: String
    let repeatable: Bool

    static func flag(_ name: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, valueName: nil, help: help, repeatable: false)
    }
    static func value(_ name: String, _ valueName: String, _ help: String, repeatable: Bool = false) -> OptionSpec {
        OptionSpec(name: name, valueName: valueName, help: help, repeatable: repeatable)
    }

    var label: String { valueName.map { "--\(name) \($0)" } ?? "--\(name)" }
}

/// Arguments split into positionals, option values and flags, checked against a command's options.
struct ParsedArguments {
    var positionals: [String] = []
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []

    init(_ arguments: [String], options: [OptionSpec]) throws {
        var i = 0
        var onlyPositionals = false
        while i < arguments.count {
            let argument = arguments[i]
            i += 1
            if onlyPositionals || !argument.hasPrefix("--") || argument == "-" {
                if !onlyPositionals, argument.hasPrefix("-"), argument != "-", Double(argument) == nil {
                    throw UsageError("unknown option '\(argument)'")
                }
                positionals.append(argument)
                continue
            }
            if argument == "--" { onlyPositionals = true; continue }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let eq = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard let spec = options.first(where: { $0.name == name }) else {
                throw UsageError("unknown option '--\(name)'")
            }
            if spec.valueName == nil {
                guard inlineValue == nil else { throw UsageError("option '--\(name)' takes no value") }
                flags.insert(name)
                continue
            }
            let value: String
            if let inline = inlineValue {
                value = inline
            } else {
                guard i < arguments.count else { throw UsageError("option '--\(name)' needs a value (\(spec.valueName ?? "VALUE"))") }
                value = arguments[i]
                i += 1
            }
            if !spec.repeatable, values[name] != nil { throw UsageError("option '--\(name)' given more than once") }
            values[name, default: []].append(value)
        }
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }
    func value(_ name: String) -> String? { values[name]?.last }
    func values(_ name: String) -> [String] { values[name] ?? [] }

    func int(_ name: String) throws -> Int? {
        guard let text = value(name) else { return nil }
        guard let v = Int(text) else { throw UsageError("option '--\(name)' needs a whole number, got '\(text)'") }
        return v
    }

    func double(_ name: String) throws -> Double? {
        guard let text = value(name) else { return nil }
        guard let v = Double(text), v.isFinite else { throw UsageError("option '--\(name)' needs a number, got '\(text)'") }
        return v
    }

    /// Exactly `count` positionals, named for the error message.
    func requirePositionals(_ names: [String]) throws -> [String] {
        guard positionals.count >= names.count else {
            throw UsageError("missing argument \(names[positionals.count])")
        }
        guard positionals.count == names.count else {
            throw UsageError("unexpected argument '\(positionals[names.count])'")
        }
        return positionals
    }
}
