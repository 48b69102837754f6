import AppStoreModel
import Foundation

/// What the verifier reads from a payload before it is trusted: its signedDate (the offline validation time) and the
/// environments it names (Xcode and LocalTesting data is not signed by the App Store). Transactions and renewal info
/// carry the environment at the top level, notifications in `data` (or `appData`, `summary`), app transactions as
/// `receiptType` (and their signing date as `receiptCreationDate`); all are read, so that a payload naming two
/// environments cannot be taken for the one that needs no signature.
///
/// Read by `JSONScanner` (every other member skipped); what it does not handle (Xcode's fractional milliseconds, a
/// member given twice) goes to `JSONDecoder`, the reference, as for every App Store model.
struct PayloadFacts: Decodable, Equatable {
    var signedDateMs: Int64?
    /// `environment` at the top level (transactions, renewal info).
    var topEnvironment: String?
    /// `data.environment` (notifications).
    var dataEnvironment: String?
    /// `appData.environment` (notifications about the app rather than a purchase: RESCIND_CONSENT).
    var appDataEnvironment: String?
    /// `summary.environment` (RENEWAL_EXTENSION with subtype SUMMARY: the end of a mass renewal extension).
    var summaryEnvironment: String?
    /// `receiptType` (app transactions).
    var receiptType: String?

    /// Every environment the payload names.
    var environments: [String] {
        [topEnvironment, dataEnvironment, appDataEnvironment, summaryEnvironment, receiptType].compactMap { $0 }
    }

    /// The payload's environment: the top level's, else `data`'s, `appData`'s or `summary`'s, else `receiptType`.
    var environment: String? {
        topEnvironment ?? dataEnvironment ?? appDataEnvironment ?? summaryEnvironment ?? receiptType
    }

    private enum CodingKeys: String, CodingKey {
        case signedDate, environment, data, appData, summary, receiptType, receiptCreationDate
    }
    private struct Nested: Decodable { var environment: String? }

    init(
        signedDateMs: Int64?, topEnvironment: String?, dataEnvironment: String?, appDataEnvironment: String? = nil,
        summaryEnvironment: String? = nil, receiptType: String? = nil
    ) {
        self.signedDateMs = signedDateMs
        self.topEnvironment = topEnvironment
        self.dataEnvironment = dataEnvironment
        self.appDataEnvironment = appDataEnvironment
        self.summaryEnvironment = summaryEnvironment
        self.receiptType = receiptType
    }

    init(_ payload: [UInt8]) throws(SignedDataError) {
        if let facts = try? Self(scanning: payload) {
            self = facts
            return
        }
        do {
            self = try BoundedJSON.decode(PayloadFacts.self, from: payload)
        } catch {
            throw SignedDataError(.malformed, "the JWS payload is not a JSON object as Apple signs it")
        }
    }

    private init(scanning payload: [UInt8]) throws {
        var scanner = JSONScanner(payload)
        var seen = JSONScanner.SeenKeys()
        var signedDate: Int64?
        var top: String?
        var nested: String?
        var app: String?
        var summary: String?
        var receiptType: String?
        var receiptCreationDate: Int64?
        scanner.skipWhitespace()
        try scanner.readObject { scanner, key in
            switch key {
            case "signedDate":
                try seen.insert(0)
                signedDate = try scanner.readNull() ? nil : scanner.readInteger()
            case "environment":
                try seen.insert(1)
                top = try scanner.readNull() ? nil : scanner.readString()
            case "data":
                try seen.insert(2)
                guard try !scanner.readNull() else { return }
                var seenInData = JSONScanner.SeenKeys()
                try scanner.readObject { scanner, key in
                    guard case "environment" = key else { return try scanner.skipValue() }
                    try seenInData.insert(0)
                    nested = try scanner.readNull() ? nil : scanner.readString()
                }
            case "appData":
                try seen.insert(3)
                guard try !scanner.readNull() else { return }
                var seenInAppData = JSONScanner.SeenKeys()
                try scanner.readObject { scanner, key in
                    guard case "environment" = key else { return try scanner.skipValue() }
                    try seenInAppData.insert(0)
                    app = try scanner.readNull() ? nil : scanner.readString()
                }
            case "summary":
                try seen.insert(4)
                guard try !scanner.readNull() else { return }
                var seenInSummary = JSONScanner.SeenKeys()
                try scanner.readObject { scanner, key in
                    guard case "environment" = key else { return try scanner.skipValue() }
                    try seenInSummary.insert(0)
                    summary = try scanner.readNull() ? nil : scanner.readString()
                }
            case "receiptType":
                try seen.insert(5)
                receiptType = try scanner.readNull() ? nil : scanner.readString()
            case "receiptCreationDate":
                try seen.insert(6)
                receiptCreationDate = try scanner.readNull() ? nil : scanner.readInteger()
            default:
                try scanner.skipValue()
            }
        }
        try scanner.finish()
        // An app transaction's signing date is its receiptCreationDate.
        self.init(
            signedDateMs: signedDate ?? receiptCreationDate, topEnvironment: top, dataEnvironment: nested,
            appDataEnvironment: app, summaryEnvironment: summary, receiptType: receiptType
        )
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // Xcode writes milliseconds with a fraction.
        func milliseconds(_ key: CodingKeys) throws -> Int64? {
            try container.decodeIfPresent(Double.self, forKey: key).map { number in
                guard let whole = Int64(exactly: number.rounded(.down)) else {
                    throw DecodingError.dataCorruptedError(
                        forKey: key, in: container, debugDescription: "\(number) is not a time in milliseconds"
                    )
                }
                return whole
            }
        }
        signedDateMs = try milliseconds(.signedDate) ?? milliseconds(.receiptCreationDate)
        topEnvironment = try container.decodeIfPresent(String.self, forKey: .environment)
        dataEnvironment = try container.decodeIfPresent(Nested.self, forKey: .data)?.environment
        appDataEnvironment = try container.decodeIfPresent(Nested.self, forKey: .appData)?.environment
        summaryEnvironment = try container.decodeIfPresent(Nested.self, forKey: .summary)?.environment
        receiptType = try container.decodeIfPresent(String.self, forKey: .receiptType)
    }
}
