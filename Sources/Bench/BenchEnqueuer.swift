import PostgresClient
import ReceiptQueue

/// Enqueues many orders fast: one `enqueue_receipt()` call per row, many rows per statement (unnest of arrays),
/// so each row goes through the API layer's own function (validation, idempotency, hash, NOTIFY).
struct BenchEnqueuer {
    let connection: PostgresConnection

    static let statement = """
        SELECT enqueue_receipt(o.receipt, o.order_id, o.user_id, $5, o.transaction_id, $6) AS id
        FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS o(receipt, order_id, user_id, transaction_id)
        """

    /// The same for signed transactions: the JWS names its transaction, so the client's id is not passed.
    static let signedStatement = """
        SELECT enqueue_transaction(signed_transaction => o.jws, order_id => o.order_id, user_id => o.user_id,
                                   product_id => $5, bundle_id => $6) AS id
        FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS o(jws, order_id, user_id, transaction_id)
        """

    /// Enqueues `orders` in statements of `batch` rows; returns the job ids. `prepare` false: the connection has
    /// prepared the statement already (an earlier call).
    func enqueue(
        _ orders: [BenchReceipts.Order], batch: Int, signed: Bool = false, prepare: Bool = true
    ) throws -> [Int64] {
        if prepare { try connection.prepare("bench_enqueue", signed ? Self.signedStatement : Self.statement) }
        var ids: [Int64] = []
        ids.reserveCapacity(orders.count)
        var start = 0
        while start < orders.count {
            let chunk = orders[start..<min(start + batch, orders.count)]
            let result = try connection.executePrepared(
                "bench_enqueue",
                [
                    Self.arrayLiteral(chunk.map(\.receiptData)), Self.arrayLiteral(chunk.map(\.orderId)),
                    Self.arrayLiteral(chunk.map(\.userId)), Self.arrayLiteral(chunk.map(\.transactionId)),
                    BenchReceipts.productId, BenchEnvironment.bundleId,
                ]
            )
            for row in result.rows.indices {
                guard let id = result.int64(row, "id") else { throw BenchError("enqueue returned no id") }
                ids.append(id)
            }
            start += chunk.count
        }
        return ids
    }

    /// A text[] literal: every element double-quoted, `"` and `\` escaped.
    static func arrayLiteral(_ values: [String]) -> String {
        var literal = "{"
        literal.reserveCapacity(values.reduce(2) { $0 + $1.utf8.count + 3 })
        for (index, value) in values.enumerated() {
            if index > 0 { literal.append(",") }
            literal.append("\"")
            for character in value {
                if character == "\"" || character == "\\" { literal.append("\\") }
                literal.append(character)
            }
            literal.append("\"")
        }
        literal.append("}")
        return literal
    }
}
