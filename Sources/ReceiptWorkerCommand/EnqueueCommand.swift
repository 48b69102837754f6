import ArgumentParser
import Foundation
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
            id is printed, and standard error says why.
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
        let store = JobStore(connection: try connect(try Settings().databaseURL()))
        let function = receiptFile != nil ? "enqueue_receipt" : "enqueue_transaction"
        let id: Int64
        do {
            if let receiptFile {
                id = try store.enqueue(
                    receiptData: try Self.read(receiptFile, what: "receipt"), orderId: orderId, userId: userId,
                    productId: productId, transactionId: transactionId, bundleId: bundleId,
                    orderCreatedAt: orderCreatedAt
                )
            } else {
                id = try store.enqueueTransaction(
                    signedTransaction: try signedTransactionFile.map { try Self.read($0, what: "signed transaction") },
                    transactionId: transactionId, orderId: orderId, userId: userId, productId: productId,
                    bundleId: bundleId, orderCreatedAt: orderCreatedAt, appAccountToken: appAccountToken
                )
            }
        } catch let error as PostgresError {
            throw CommandFailure("\(function) refused it: \(error.message)\(error.hint.map { " (\($0))" } ?? "")")
        }
        print(id)
        if let verdict = try store.verdict(jobId: id), verdict.state == "rejected" {
            FileHandle.standardError.write(Data(
                "job \(id) was rejected at once: \(verdict.reason ?? "-") (\(verdict.error ?? "no detail"))\n".utf8
            ))
        }
    }

    /// A file's text, or standard input's for "-"; a file that cannot be read says why.
    static func read(_ path: String, what: String) throws -> String {
        if path == "-" { return String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) }
        guard let data = FileManager.default.contents(atPath: path) else {
            var isDirectory: ObjCBool = false
            let cause =
                !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) ? "there is no such file"
                : isDirectory.boolValue ? "it is a directory" : "it is not readable (check its permissions)"
            throw CommandFailure("cannot read the \(what) file \(path): \(cause)")
        }
        return String(decoding: data, as: UTF8.self)
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
        let store = JobStore(connection: try connect(try Settings().databaseURL()))
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
