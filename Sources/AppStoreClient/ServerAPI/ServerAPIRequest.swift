import AppStoreModel
import CurlHTTP
import Foundation

/// One App Store Server API request, before a base URL and a token are added. Every id in a path or query is
/// percent-encoded, and ids Apple spells with digits only are refused otherwise, so nothing a caller passes can
/// change which resource is asked for.
struct ServerAPIRequest: Sendable {
    var operation: ServerAPIOperation
    var method: HTTPMethod
    /// Starts with `/inApps/`; every segment taken from input is encoded.
    var path: String
    /// Names and values as given; encoded by `url(base:)`.
    var query: [(name: String, value: String)]
    var body: [UInt8]

    /// Apple's transaction ids are decimal numbers; 32 digits leaves room beyond today's 16.
    static let maximumTransactionIdDigits = 32
    /// Apple's order ids are about ten letters and digits.
    static let maximumOrderIdBytes = 128
    /// App Store Connect product ids are at most 100 characters; 255 bytes leaves room.
    static let maximumProductIdBytes = 255

    static func transactionInfo(transactionId: String) throws(AppStoreFailure) -> ServerAPIRequest {
        let id = try digits(transactionId, operation: .transactionInfo)
        return ServerAPIRequest(
            operation: .transactionInfo, method: .get, path: "/inApps/v1/transactions/\(id)", query: [], body: []
        )
    }

    /// Get Transaction History v2: `query`'s filters and order, and `revision` when going on from a page. A product
    /// id must be 1 to `maximumProductIdBytes` bytes (Apple's 4000023 otherwise).
    static func transactionHistory(
        transactionId: String, query: TransactionHistoryQuery = TransactionHistoryQuery(), revision: String?
    ) throws(AppStoreFailure) -> ServerAPIRequest {
        let id = try digits(transactionId, operation: .transactionHistory)
        if let bad = query.productIds.first(where: { $0.isEmpty || $0.utf8.count > maximumProductIdBytes }) {
            throw refused("product ids of 1 to \(maximumProductIdBytes) bytes", got: bad, operation: .transactionHistory)
        }
        if let startDate = query.startDate, let endDate = query.endDate, startDate >= endDate {
            throw refused("a startDate before the endDate", got: "\(startDate)", operation: .transactionHistory)
        }
        return ServerAPIRequest(
            operation: .transactionHistory, method: .get, path: "/inApps/v2/history/\(id)",
            query: query.parameters + (revision.map { [("revision", $0)] } ?? []), body: []
        )
    }

    /// Get Refund History v2: the customer's refunded transactions, a page at a time from `revision` (nil: the first).
    static func refundHistory(transactionId: String, revision: String?) throws(AppStoreFailure) -> ServerAPIRequest {
        let id = try digits(transactionId, operation: .refundHistory)
        return ServerAPIRequest(
            operation: .refundHistory, method: .get, path: "/inApps/v2/refund/lookup/\(id)",
            query: revision.map { [("revision", $0)] } ?? [], body: []
        )
    }

    static func orderLookup(orderId: String) throws(AppStoreFailure) -> ServerAPIRequest {
        guard !orderId.isEmpty, orderId.utf8.count <= maximumOrderIdBytes else {
            throw refused("an order id of 1 to \(maximumOrderIdBytes) bytes", got: orderId, operation: .orderLookup)
        }
        return ServerAPIRequest(
            operation: .orderLookup, method: .get, path: "/inApps/v1/lookup/\(percentEncoded(orderId))", query: [],
            body: []
        )
    }

    static func notificationHistory(
        _ request: NotificationHistoryRequest, paginationToken: String?
    ) throws(AppStoreFailure) -> ServerAPIRequest {
        if let transactionId = request.transactionId {
            _ = try digits(transactionId, operation: .notificationHistory)
        }
        let body: Data
        do {
            body = try JSONEncoder().encode(request)
        } catch {
            throw refused("an encodable request", got: "\(error)", operation: .notificationHistory)
        }
        return ServerAPIRequest(
            operation: .notificationHistory, method: .post, path: "/inApps/v1/notifications/history",
            query: paginationToken.map { [("paginationToken", $0)] } ?? [], body: Array(body)
        )
    }

    /// Send Consumption Information v2: `body` is the ConsumptionRequest JSON, sent as it is.
    static func sendConsumption(transactionId: String, body: [UInt8]) throws(AppStoreFailure) -> ServerAPIRequest {
        let id = try digits(transactionId, operation: .sendConsumption)
        return ServerAPIRequest(
            operation: .sendConsumption, method: .put, path: "/inApps/v2/transactions/consumption/\(id)", query: [],
            body: body
        )
    }

    /// Get All Subscription Statuses: every subscription of the customer who owns `transactionId`.
    static func subscriptionStatuses(transactionId: String) throws(AppStoreFailure) -> ServerAPIRequest {
        let id = try digits(transactionId, operation: .subscriptionStatuses)
        return ServerAPIRequest(
            operation: .subscriptionStatuses, method: .get, path: "/inApps/v1/subscriptions/\(id)", query: [], body: []
        )
    }

    /// Set App Account Token: `{"appAccountToken": "<uuid>"}` for the chain `originalTransactionId`. A token that is
    /// not a UUID is refused here (Apple's 4000183), written lowercase.
    static func setAppAccountToken(
        originalTransactionId: String, appAccountToken: String
    ) throws(AppStoreFailure) -> ServerAPIRequest {
        let id = try digits(originalTransactionId, operation: .setAppAccountToken)
        guard let uuid = UUID(uuidString: appAccountToken) else {
            throw refused("an appAccountToken that is a UUID", got: appAccountToken, operation: .setAppAccountToken)
        }
        let body = #"{"appAccountToken":""# + uuid.uuidString.lowercased() + #""}"#
        return ServerAPIRequest(
            operation: .setAppAccountToken, method: .put, path: "/inApps/v1/transactions/\(id)/appAccountToken",
            query: [], body: Array(body.utf8)
        )
    }

    /// Extend a Subscription Renewal Date for the chain `originalTransactionId`.
    static func extendRenewalDate(
        originalTransactionId: String, _ request: RenewalExtension.Request
    ) throws(AppStoreFailure) -> ServerAPIRequest {
        let id = try digits(originalTransactionId, operation: .extendRenewalDate)
        return ServerAPIRequest(
            operation: .extendRenewalDate, method: .put, path: "/inApps/v1/subscriptions/extend/\(id)", query: [],
            body: try encoded(request, operation: .extendRenewalDate)
        )
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers of `request.productId`.
    static func massExtendRenewalDate(_ request: RenewalExtension.MassRequest) throws(AppStoreFailure) -> ServerAPIRequest {
        ServerAPIRequest(
            operation: .massExtendRenewalDate, method: .post, path: "/inApps/v1/subscriptions/extend/mass",
            query: [], body: try encoded(request, operation: .massExtendRenewalDate)
        )
    }

    /// Get Status of Subscription Renewal Date Extensions: both segments percent-encoded.
    static func massExtensionStatus(
        productId: String, requestIdentifier: String
    ) throws(AppStoreFailure) -> ServerAPIRequest {
        guard (1...maximumOrderIdBytes).contains(productId.utf8.count),
            (1...maximumOrderIdBytes).contains(requestIdentifier.utf8.count)
        else {
            throw refused(
                "a product id and request id of 1 to \(maximumOrderIdBytes) bytes", got: productId + "/" + requestIdentifier,
                operation: .massExtensionStatus
            )
        }
        return ServerAPIRequest(
            operation: .massExtensionStatus, method: .get,
            path: "/inApps/v1/subscriptions/extend/mass/\(percentEncoded(productId))/\(percentEncoded(requestIdentifier))",
            query: [], body: []
        )
    }

    /// Request a Test Notification: no body; Apple answers with the token for its status.
    static func requestTestNotification() -> ServerAPIRequest {
        ServerAPIRequest(
            operation: .requestTestNotification, method: .post, path: "/inApps/v1/notifications/test", query: [],
            body: []
        )
    }

    /// Get Test Notification Status: `token` (Apple's are UUIDs; anything of 1 to 128 bytes is sent, encoded).
    static func testNotificationStatus(token: String) throws(AppStoreFailure) -> ServerAPIRequest {
        guard !token.isEmpty, token.utf8.count <= maximumOrderIdBytes else {
            throw refused("a test notification token of 1 to 128 bytes", got: token, operation: .testNotificationStatus)
        }
        return ServerAPIRequest(
            operation: .testNotificationStatus, method: .get,
            path: "/inApps/v1/notifications/test/\(percentEncoded(token))", query: [], body: []
        )
    }

    /// Get App Transaction Info: any transaction id, original transaction id or appTransactionId of the customer.
    static func appTransactionInfo(transactionId: String) throws(AppStoreFailure) -> ServerAPIRequest {
        let id = try digits(transactionId, operation: .appTransactionInfo)
        return ServerAPIRequest(
            operation: .appTransactionInfo, method: .get, path: "/inApps/v1/transactions/appTransactions/\(id)",
            query: [], body: []
        )
    }

    private static func encoded(_ value: some Encodable, operation: ServerAPIOperation) throws(AppStoreFailure) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(value))
        } catch {
            throw refused("an encodable request", got: "\(error)", operation: operation)
        }
    }

    /// `base` (any trailing slash dropped), the path, and the encoded query.
    func url(base: String) -> String {
        var url = base
        while url.hasSuffix("/") { url.removeLast() }
        url += path
        for (index, item) in query.enumerated() {
            url += (index == 0 ? "?" : "&") + Self.percentEncoded(item.name) + "=" + Self.percentEncoded(item.value)
        }
        return url
    }

    /// `text` with every byte but ASCII letters, digits, `-` and `_` as `%XX` (UTF-8). `.` is encoded too, so a
    /// segment can never be `..`.
    static func percentEncoded(_ text: String) -> String {
        var encoded = ""
        encoded.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                encoded.unicodeScalars.append(UnicodeScalar(byte))
            default:
                encoded += "%" + String(byte >> 4, radix: 16, uppercase: true)
                    + String(byte & 0x0F, radix: 16, uppercase: true)
            }
        }
        return encoded
    }

    /// A transaction id as Apple writes them: ASCII digits only.
    private static func digits(_ id: String, operation: ServerAPIOperation) throws(AppStoreFailure) -> String {
        guard (1...maximumTransactionIdDigits).contains(id.utf8.count),
            id.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else {
            let wanted = "a transaction id of 1 to \(maximumTransactionIdDigits) digits"
            throw refused(wanted, got: id, operation: operation)
        }
        return id
    }

    private static func refused(_ wanted: String, got: String, operation: ServerAPIOperation) -> AppStoreFailure {
        let shown = String(got.unicodeScalars.prefix(40).map { $0.isASCII && $0.value >= 32 ? Character($0) : "?" })
        return AppStoreFailure(
            cause: .invalidRequest,
            message: "\(operation.rawValue): not sent, Apple expects \(wanted), got \"\(shown)\"",
            endpoint: .production
        )
    }
}
