import ArgumentParser
import ConsoleOutput
import Foundation
import Glibc
import PostgresClient
import ReceiptQueue

struct EnqueueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enqueue",
        abstract: "Enqueue one purchase to verify and print the job id.",
        discussion: """
            A receipt (--receipt-file) goes through enqueue_receipt(); a StoreKit 2 signed transaction \
            (--signed-transaction-file), or a transaction id alone (--transaction-id, looked up with the App Store \
            Server API), through enqueue_transaction(). The same order enqueued again returns the same job while it \
            is open or verified. Input that cannot be verified at all is rejected at once (malformed_input): the job \
            id is printed, standard error says why, and the exit status is 4 (--no-fail-on-rejected: 0). A file \
            may be a pipe or process substitution (--receipt-file <(…), /dev/stdin, or - for standard input).

            Exit status: 0 the job was made (or found) and is not rejected; 1 nothing was enqueued: the database \
            refused it or could not be reached; 2 nothing was enqueued: bad input or configuration (the file does \
            not exist, cannot be read, is a directory, is over 64 MiB or holds binary data where base64 text \
            belongs; DATABASE_URL missing); 3 the database has no receipt-worker schema or an older one; 4 the job \
            was made, its id printed, and rejected at once (empty, not base64: input that reached the database).
            """
    )

    @Option(help: "A file holding the base64 receipt, or - for standard input.")
    var receiptFile: String?
    @Option(help: "A file holding a StoreKit 2 signed transaction (the app's jwsRepresentation), or - for stdin.")
    var signedTransactionFile: String?
    @Option(help: "The API layer's order id.")
    var orderId: String
    @Option(help: "The user the order belongs to.")
    var userId: String
    @Option(help: "The product the order sold (from the order record, not from the client).")
    var productId: String
    @Option(help: "The transaction id the client reported, if any; alone, the transaction to look up.")
    var transactionId: String?
    @Option(help: "The app's bundle id (optional when one app is configured).")
    var bundleId: String?
    @Option(help: "When the order was made (ISO 8601), if known.")
    var orderCreatedAt: String?
    @Option(help: "The appAccountToken (a UUID) the app passed to purchase(options:), if it did.")
    var appAccountToken: String?
    @Flag(
        inversion: .prefixedNo,
        help: "Exit 4 when the job is rejected at once (malformed input); --no-fail-on-rejected exits 0 then, as before."
    )
    var failOnRejected = true

    func validate() throws {
        guard receiptFile == nil || signedTransactionFile == nil else {
            throw ValidationError("give --receipt-file or --signed-transaction-file, not both")
        }
        guard receiptFile != nil || signedTransactionFile != nil || transactionId != nil else {
            throw ValidationError("give --receipt-file, --signed-transaction-file, or --transaction-id")
        }
        guard receiptFile == nil || appAccountToken == nil else {
            throw ValidationError("--app-account-token goes with StoreKit 2 purchases, not with --receipt-file")
        }
    }

    func run() throws {
        let settings = Settings()
        _ = try settings.databaseURL(as: .api)
        // The input first: a file that cannot be used is bad input (exit 2) whether or not the database answers.
        let receipt = try receiptFile.map { try Self.read($0, what: "receipt") }
        let signedTransaction = try signedTransactionFile.map { try Self.read($0, what: "signed transaction") }
        let store = JobStore(connection: try connect(try settings.databaseURL(as: .api)))
        let function = receiptFile != nil ? "enqueue_receipt" : "enqueue_transaction"
        let id: Int64
        do {
            if let receipt {
                id = try store.enqueue(
                    receiptData: receipt, orderId: orderId, userId: userId,
                    productId: productId, transactionId: transactionId, bundleId: bundleId,
                    orderCreatedAt: orderCreatedAt
                )
            } else {
                id = try store.enqueueTransaction(
                    signedTransaction: signedTransaction,
                    transactionId: transactionId, orderId: orderId, userId: userId, productId: productId,
                    bundleId: bundleId, orderCreatedAt: orderCreatedAt, appAccountToken: appAccountToken
                )
            }
        } catch let error as PostgresError {
            throw CommandFailure("\(function) refused it: \(error.message)\(error.hint.map { " (\($0))" } ?? "")")
        }
        print(id)
        if let verdict = try store.verdict(jobId: id), verdict.state == "rejected" {
            var line = "job \(id) was rejected at once: \(verdict.reason ?? "-") (\(verdict.error ?? "no detail"))"
            if receiptFile != nil, verdict.reason == "malformed_input" { line += ": " + Self.expectedBase64 }
            FileHandle.standardError.write(Data((TerminalText.message(line) + "\n").utf8))
            if failOnRejected {
                flushStandardOutput()
                Foundation.exit(Self.rejectedExitStatus)
            }
        }
    }

    /// The exit status when the job was made but rejected at once.
    static let rejectedExitStatus: Int32 = 4
    /// What a receipt file should hold.
    static let expectedBase64 = "expected base64 text (the app receipt encoded with `base64 -w0`)"
    /// More than any receipt enqueue_receipt() accepts; a file beyond it is not read to its end.
    static let maxFileBytes = 64 << 20

    /// A file's text, or standard input's for "-". Read as a stream, so pipes, FIFOs, /dev/stdin and process
    /// substitution work (their size is not known ahead). A file that cannot be read says why; binary data (a NUL
    /// byte: a raw receipt, UTF-16 text) says what is expected instead. Either is bad input (exit 2): nothing was
    /// enqueued, and nothing but another file will do.
    static func read(_ path: String, what: String) throws -> String {
        let descriptor = path == "-" ? dup(STDIN_FILENO) : open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let cause = switch errno {
            case ENOENT: "there is no such file"
            case EACCES, EPERM: "it is not readable (check its permissions)"
            default: String(cString: strerror(errno))
            }
            throw ConfigurationError(.unreadableFile, "cannot read the \(what) file \(path): \(cause)")
        }
        defer { close(descriptor) }
        var status = stat()
        if fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFDIR {
            throw ConfigurationError(.unreadableFile, "cannot read the \(what) file \(path): it is a directory")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw ConfigurationError(
                    .unreadableFile, "cannot read the \(what) file \(path): \(String(cString: strerror(errno)))"
                )
            }
            bytes += buffer[..<count]
            guard bytes.count <= maxFileBytes else {
                throw ConfigurationError(
                    .invalid, "the \(what) file \(path) is larger than \(maxFileBytes >> 20) MiB: not a \(what)"
                )
            }
        }
        if bytes.contains(0) {
            let expected = what == "receipt" ? expectedBase64 : "expected the JWS text (three base64url parts joined by dots)"
            throw ConfigurationError(
                .invalid,
                "the \(what) file \(path) holds binary data (a NUL byte), which PostgreSQL text cannot hold: \(expected)"
            )
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

struct RequeueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "requeue",
        abstract: "Put a dead, rejected or retrying job back in the queue (or every dead job with --dead).",
        discussion: """
            Recorded in receipt_admin_log with the job's previous state and last error. --dead-notifications puts \
            every dead App Store Server Notification back instead (a replay from Notification History cannot: it \
            brings the same bytes, which are the same row).
            """
    )

    @Argument(help: "The job id.")
    var jobId: Int64?
    @Flag(help: "Requeue every dead job.")
    var dead = false
    @Flag(help: "Requeue every dead App Store Server Notification.")
    var deadNotifications = false
    @Option(help: "A note for the audit trail.")
    var note: String?

    func validate() throws {
        guard [jobId != nil, dead, deadNotifications].filter({ $0 }).count == 1 else {
            throw ValidationError("give one of: a job id, --dead, --dead-notifications")
        }
    }

    func run() throws {
        let store = JobStore(connection: try connect(try Settings().databaseURL(as: .operator)))
        do {
            if let jobId {
                try store.requeue(jobId: jobId, note: note)
                print("requeued job \(jobId)")
            } else if deadNotifications {
                print("requeued \(try store.requeueDeadNotifications(note: note)) dead notifications")
            } else {
                print("requeued \(try store.requeueDead(note: note)) dead jobs")
            }
        } catch let error as PostgresError {
            throw CommandFailure(error.message)
        }
    }
}
