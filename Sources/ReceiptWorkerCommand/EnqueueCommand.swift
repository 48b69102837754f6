import ArgumentParser
import Foundation
import PostgresClient
import ReceiptQueue

struct EnqueueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enqueue",
        abstract: "Enqueue one receipt (calls enqueue_receipt) and print the job id.",
        discussion: "The same order enqueued again returns the same job while it is open or verified."
    )

    @Option(help: "A file holding the base64 receipt, or - for standard input.")
    var receiptFile: String
    @Option(help: "The API layer's order id.")
    var orderId: String
    @Option(help: "The user the order belongs to.")
    var userId: String
    @Option(help: "The product the order sold (from the order record, not from the client).")
    var productId: String
    @Option(help: "The transaction id the client reported, if any.")
    var transactionId: String?
    @Option(help: "The app's bundle id (optional when one app is configured).")
    var bundleId: String?
    @Option(help: "When the order was made (ISO 8601), if known.")
    var orderCreatedAt: String?

    func run() throws {
        let receipt: String
        if receiptFile == "-" {
            receipt = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        } else {
            guard let data = FileManager.default.contents(atPath: receiptFile) else {
                throw CommandFailure("cannot read the receipt file \(receiptFile)")
            }
            receipt = String(decoding: data, as: UTF8.self)
        }
        let store = JobStore(connection: try connect(try Settings().databaseURL()))
        do {
            let id = try store.enqueue(
                receiptData: receipt, orderId: orderId, userId: userId, productId: productId,
                transactionId: transactionId, bundleId: bundleId, orderCreatedAt: orderCreatedAt
            )
            print(id)
        } catch let error as PostgresError {
            throw CommandFailure("enqueue_receipt refused the receipt: \(error.message)\(error.hint.map { " (\($0))" } ?? "")")
        }
    }
}

struct RequeueCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "requeue",
        abstract: "Put a dead, rejected or retrying job back in the queue (or every dead job with --dead).",
        discussion: "Recorded in receipt_admin_log with the job's previous state and last error."
    )

    @Argument(help: "The job id.")
    var jobId: Int64?
    @Flag(help: "Requeue every dead job.")
    var dead = false
    @Option(help: "A note for the audit trail.")
    var note: String?

    func validate() throws {
        guard (jobId != nil) != dead else { throw ValidationError("give a job id or --dead (not both)") }
    }

    func run() throws {
        let store = JobStore(connection: try connect(try Settings().databaseURL()))
        do {
            if let jobId {
                try store.requeue(jobId: jobId, note: note)
                print("requeued job \(jobId)")
            } else {
                print("requeued \(try store.requeueDead(note: note)) dead jobs")
            }
        } catch let error as PostgresError {
            throw CommandFailure(error.message)
        }
    }
}
