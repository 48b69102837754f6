import Foundation
import Logging

/// Logging for the executable: human-readable lines by default, one JSON object per line with LOG_FORMAT=json.
/// Logs carry job ids, order ids and short receipt hashes, never receipts or the shared secret.
enum LogSetup {
    static func bootstrap(format: String, level: String) throws {
        guard let logLevel = Logger.Level(rawValue: level.lowercased()) else {
            throw ConfigurationError("LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical")
        }
        switch format.lowercased() {
        case "text", "":
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = logLevel
                return handler
            }
        case "json":
            LoggingSystem.bootstrap { label in JSONLogHandler(label: label, logLevel: logLevel) }
        default:
            throw ConfigurationError("LOG_FORMAT must be text or json, got \"\(format)\"")
        }
    }
}

/// One JSON object per line on standard error: time, level, message, label and the metadata as strings.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    init(label: String, logLevel: Logger.Level) {
        self.label = label
        self.logLevel = logLevel
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields: [String: String] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            fields[key] = "\(value)"
        }
        fields["time"] = Date.now.ISO8601Format(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        fields["level"] = event.level.rawValue
        fields["message"] = event.message.description
        fields["logger"] = label
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var line = try? encoder.encode(fields) else { return }
        line.append(UInt8(ascii: "\n"))
        FileHandle.standardError.write(line)
    }
}
