import ConsoleOutput
import Foundation

/// The demo's progress line on standard error ("verified 5, rejected 3, retrying 1, waiting 0"): rewritten in place
/// on a terminal; elsewhere (a log file) only the final counts of each phase are written.
struct DemoProgress {
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private var shown = ""

    /// `counts` maps a job state to its number of jobs.
    mutating func show(_ counts: [String: Int]) {
        var parts = [
            "verified \(counts["verified", default: 0])",
            "rejected \(counts["rejected", default: 0])",
            "retrying \(counts["retry", default: 0])",
            "waiting \(counts["queued", default: 0] + counts["running", default: 0])",
        ]
        if let dead = counts["dead"], dead > 0 { parts.append("dead \(dead)") }
        let line = "  " + parts.joined(separator: ", ")
        guard line != shown else { return }
        if isTerminal {
            flushStandardOutput()
            let padding = String(repeating: " ", count: max(0, shown.count - line.count))
            write("\r" + line + padding)
        }
        shown = line
    }

    /// Ends the line being rewritten, leaving the last counts on screen.
    mutating func finish() {
        guard !shown.isEmpty else { return }
        flushStandardOutput()
        write(isTerminal ? "\n" : shown + "\n")
        shown = ""
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
