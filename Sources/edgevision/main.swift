// The `edgevision` command. All logic lives in other files (closures at the top level of
// main.swift are main-actor isolated, which C callbacks must not be).
CommandLineTool.main(CommandLine.arguments)
