import AppReceipt
import AppStoreModel
import Foundation

/// A made-up receipt for tests and load runs: base64 of a JSON object with the magic key `fake_appstore_scenario`.
/// The fake App Store answers it with exactly the purchases it lists, after the faults it asks for.
///
/// ```json
/// {"fake_appstore_scenario": 1, "environment": "Sandbox", "bundle_id": "com.example.app",
///  "in_app": [{"product_id": "pro", "transaction_id": "1", "purchase_date_ms": "1700000000000"}],
///  "faults": ["21005", "html503"], "nonce": "job-42"}
/// ```
public struct ScenarioReceipt: Codable, Sendable, Equatable {
    /// "Production" or "Sandbox" ("ProductionSandbox" is read as "Sandbox"); decides which endpoint answers 21007
    /// or 21008.
    public var environment: String
    public var bundleId: String
    /// The purchases, in Apple's field names (`receipt.in_app`).
    public var inApp: [InAppTransaction]
    /// `latest_receipt_info` as given; when nil, the answer copies the subscription entries (those with an expiry)
    /// of `inApp`, as Apple does.
    public var latestReceiptInfo: [InAppTransaction]?
    /// A forced final status, answered once the faults are used up (21006 keeps the receipt in the answer).
    public var status: Int?
    /// The answers to the first requests carrying this receipt, in order; later requests get the normal answer.
    public var faults: [Fault]
    /// Free text that makes otherwise equal receipts distinct (each has its own fault sequence).
    public var nonce: String?

    public init(
        environment: String,
        bundleId: String,
        inApp: [InAppTransaction],
        latestReceiptInfo: [InAppTransaction]? = nil,
        status: Int? = nil,
        faults: [Fault] = [],
        nonce: String? = nil
    ) {
        self.environment = environment
        self.bundleId = bundleId
        self.inApp = inApp
        self.latestReceiptInfo = latestReceiptInfo
        self.status = status
        self.faults = faults
        self.nonce = nonce
    }

    /// True for a sandbox receipt: "Sandbox" or "ProductionSandbox".
    public var isSandbox: Bool {
        environment == "Sandbox" || environment == "ProductionSandbox"
    }

    /// The receipt as an app would send it in `receipt-data`.
    public func base64() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain strings, numbers and arrays into JSON cannot fail.
        let data = (try? encoder.encode(self)) ?? Data("{}".utf8)
        return data.base64EncodedString()
    }

    /// The scenario inside `receipt-data`, or nil when the text is not a scenario receipt (a real receipt,
    /// garbage, or JSON without the magic key).
    public static func decode(base64: String) -> ScenarioReceipt? {
        guard let bytes = Base64Text.decode(base64) else { return nil }
        return decode(json: bytes)
    }

    /// The scenario in already base64-decoded bytes; nil unless they are a JSON object with the magic key.
    static func decode(json bytes: [UInt8]) -> ScenarioReceipt? {
        guard let first = bytes.first(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\n") }),
            first == UInt8(ascii: "{")
        else { return nil }
        return try? JSONDecoder().decode(ScenarioReceipt.self, from: Data(bytes))
    }

    enum CodingKeys: String, CodingKey {
        case magic = "fake_appstore_scenario"
        case environment
        case bundleId = "bundle_id"
        case inApp = "in_app"
        case latestReceiptInfo = "latest_receipt_info"
        case status, faults, nonce
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard try container.decode(Int.self, forKey: .magic) == 1 else {
            throw DecodingError.dataCorruptedError(
                forKey: .magic, in: container, debugDescription: "unknown fake_appstore_scenario version"
            )
        }
        environment = try container.decode(String.self, forKey: .environment)
        bundleId = try container.decodeIfPresent(String.self, forKey: .bundleId) ?? ""
        inApp = try container.decodeIfPresent([InAppTransaction].self, forKey: .inApp) ?? []
        latestReceiptInfo = try container.decodeIfPresent([InAppTransaction].self, forKey: .latestReceiptInfo)
        status = try container.decodeIfPresent(Int.self, forKey: .status)
        faults = try container.decodeIfPresent([Fault].self, forKey: .faults) ?? []
        nonce = try container.decodeIfPresent(String.self, forKey: .nonce)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(1, forKey: .magic)
        try container.encode(environment, forKey: .environment)
        try container.encode(bundleId, forKey: .bundleId)
        try container.encode(inApp, forKey: .inApp)
        try container.encodeIfPresent(latestReceiptInfo, forKey: .latestReceiptInfo)
        try container.encodeIfPresent(status, forKey: .status)
        if !faults.isEmpty { try container.encode(faults, forKey: .faults) }
        try container.encodeIfPresent(nonce, forKey: .nonce)
    }
}
