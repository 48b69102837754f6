/// A configuration or input problem (a setting, a flag, a file given to a command): printed as one line naming it and
/// the fix; exit status 2.
struct ConfigurationError: Error, CustomStringConvertible {
    enum Code: Hashable {
        /// A setting that must be given is not.
        case missing
        /// A value that cannot be read as what the setting takes (a number, a choice, a connection string).
        case invalid
        /// A value outside what the setting allows.
        case outOfRange
        /// A file named by a setting cannot be read.
        case unreadableFile
        /// Options that do not go together.
        case conflict
        /// A setting the process's limits cannot carry (open files).
        case resourceLimit
    }

    var code: Code
    var message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    var description: String { message }
}
