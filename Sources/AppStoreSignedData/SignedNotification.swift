import AppStoreModel
import Foundation

/// An App Store Server Notification V2 (ResponseBodyV2DecodedPayload) once verified, with the signed transaction and
/// renewal info it carries verified too. Unknown fields and notification types are kept as they are: a type Apple
/// adds later is recorded and passed on.
public struct SignedNotification: Sendable, Hashable {
    public var notificationType: String
    public var subtype: String?
    public var notificationUUID: String
    public var version: String?
    /// Apple's signedDate, milliseconds since 1970: the order of notifications about one purchase.
    public var signedDateMs: Int64
    /// `data.environment`: Production, Sandbox (or Xcode, LocalTesting where allowed).
    public var environment: String?
    public var bundleId: String?
    /// `data.appAppleId`: Apple's id of the app (absent in the sandbox).
    public var appAppleId: Int64?
    /// `data.status`: the subscription's status (1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked).
    public var status: Int?
    public var consumptionRequestReason: String?
    /// The app transaction's `appTransactionId`, from `appData.signedAppTransactionInfo` (verified): notifications
    /// about the app rather than a purchase (RESCIND_CONSENT) carry `appData` in place of `data`.
    public var appTransactionId: String?
    public var transaction: SignedTransaction?
    public var renewalInfo: SignedRenewalInfo?
    /// The object the app and environment were read from, as Apple's SignedDataVerifier picks it.
    public var shape: Shape = .data
    /// `summary` (RENEWAL_EXTENSION, subtype SUMMARY): the end of a mass renewal extension.
    public var summary: ExtensionSummary?
    /// `externalPurchaseToken` (EXTERNAL_PURCHASE_TOKEN).
    public var externalPurchaseToken: ExternalPurchaseToken?

    /// Where a notification names its app and environment: `data`, else `summary`, else `externalPurchaseToken`,
    /// else `appData` (Apple's order); `unknown` when it has none of them (a shape Apple adds later: kept, never
    /// taken for a forgery, since the signature held).
    public enum Shape: String, Sendable, Hashable {
        case data
        case summary
        case externalPurchaseToken = "external_purchase_token"
        case appData = "app_data"
        case unknown
    }

    /// What a RENEWAL_EXTENSION SUMMARY reports of the mass extension `requestIdentifier`.
    public struct ExtensionSummary: Sendable, Hashable {
        public var requestIdentifier: String?
        public var productId: String?
        public var storefrontCountryCodes: [String]?
        public var succeededCount: Int64?
        public var failedCount: Int64?
    }

    /// An external purchase token (EXTERNAL_PURCHASE_TOKEN): its id (`SANDBOX…` in the sandbox) and creation time.
    public struct ExternalPurchaseToken: Sendable, Hashable {
        public var externalPurchaseId: String?
        public var tokenCreationDateMs: Int64?
    }

    public init(
        notificationType: String, subtype: String? = nil, notificationUUID: String, version: String? = nil,
        signedDateMs: Int64, environment: String? = nil, bundleId: String? = nil, appAppleId: Int64? = nil,
        status: Int? = nil, consumptionRequestReason: String? = nil, transaction: SignedTransaction? = nil,
        renewalInfo: SignedRenewalInfo? = nil
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.version = version
        self.signedDateMs = signedDateMs
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.status = status
        self.consumptionRequestReason = consumptionRequestReason
        self.transaction = transaction
        self.renewalInfo = renewalInfo
    }
}

extension SignedNotification {
    /// The notification's JSON as signed: the outer fields, and `data`'s (the nested JWS still as text).
    struct Payload: Decodable {
        struct Data: Decodable {
            var appAppleId: Double?
            var bundleId: String?
            var environment: String?
            var signedTransactionInfo: String?
            var signedRenewalInfo: String?
            var status: Int?
            var consumptionRequestReason: String?
        }
        var notificationType: String?
        var subtype: String?
        var notificationUUID: String?
        var version: String?
        var signedDate: Double?
        var data: Data?
        /// In place of `data` at the end of a mass renewal extension (RENEWAL_EXTENSION, SUMMARY).
        struct Summary: Decodable {
            var environment: String?
            var appAppleId: Double?
            var bundleId: String?
            var productId: String?
            var requestIdentifier: String?
            var storefrontCountryCodes: [String]?
            var succeededCount: Double?
            var failedCount: Double?
        }
        var summary: Summary?
        /// In place of `data` for EXTERNAL_PURCHASE_TOKEN: no environment field; the id starts `SANDBOX` there.
        struct ExternalPurchaseToken: Decodable {
            var externalPurchaseId: String?
            var tokenCreationDate: Double?
            var appAppleId: Double?
            var bundleId: String?
        }
        var externalPurchaseToken: ExternalPurchaseToken?
        /// In place of `data` when the notification is about the app (RESCIND_CONSENT).
        struct AppData: Decodable {
            var appAppleId: Double?
            var bundleId: String?
            var environment: String?
            var signedAppTransactionInfo: String?
        }
        var appData: AppData?
    }

    /// The fields of a verified app transaction (AppTransaction's JWS payload) kept here; its environment is
    /// `receiptType`.
    struct AppTransactionFacts: Decodable {
        var appTransactionId: String?
        var bundleId: String?
        var environment: String?
        enum CodingKeys: String, CodingKey { case appTransactionId, bundleId, environment = "receiptType" }
    }
}

extension SignedDataVerifier {
    /// Verifies a notification's `signedPayload`, then the signed transaction and renewal info inside it, each with
    /// its own chain and signature (at `now` online, else each at its own signedDate). Everything nested must agree
    /// with the notification: verified the same way (signed, or test-environment data accepted unsigned), for the
    /// same environment, and the transaction for the notification's app.
    public func verifyNotification(_ signedPayload: String, now: Date = Date()) throws(SignedDataError)
        -> SignedNotification
    {
        let outer = try verify(signedPayload, now: now)
        let payload: SignedNotification.Payload
        do {
            payload = try BoundedJSON.decode(SignedNotification.Payload.self, from: outer.payload)
        } catch {
            throw SignedDataError(.malformed, "the notification's payload does not decode: \(error)")
        }
        guard let type = payload.notificationType, !type.isEmpty else {
            throw SignedDataError(.malformed, "the notification has no notificationType")
        }
        guard let uuid = payload.notificationUUID, UUID(uuidString: uuid) != nil else {
            throw SignedDataError(.malformed, "the notification's notificationUUID is missing or not a UUID")
        }
        guard let signedDate = payload.signedDate else {
            throw SignedDataError(.malformed, "the notification has no signedDate")
        }
        let data = payload.data
        // Apple's SignedDataVerifier.verifyAndDecodeNotification: the app and environment come from data, else
        // summary, else externalPurchaseToken, else appData.
        let summary = data == nil ? payload.summary : nil
        let token = data == nil && summary == nil ? payload.externalPurchaseToken : nil
        let appData = data == nil && summary == nil && token == nil ? payload.appData : nil
        let shape: SignedNotification.Shape =
            data != nil ? .data : summary != nil ? .summary : token != nil ? .externalPurchaseToken
            : appData != nil ? .appData : .unknown
        let environment: String?
        if let token {
            // No environment field: Apple's sandbox ids start with SANDBOX. Such a payload names no environment the
            // verifier could have judged it by, so it was verified signed.
            guard outer.environment == nil, outer.isSigned else {
                throw SignedDataError(
                    .malformed, "an externalPurchaseToken notification names the environment \(outer.environment ?? "none")"
                )
            }
            environment = token.externalPurchaseId?.hasPrefix("SANDBOX") == true ? "Sandbox" : "Production"
        } else {
            environment = data?.environment ?? summary?.environment ?? appData?.environment
            // The environment the notification is recorded for is the one the verifier judged it by.
            guard environment == outer.environment, outer.isSigned || environment != nil else {
                throw SignedDataError(
                    .malformed,
                    "the notification's environment (\(environment ?? "none")) is not the environment it was "
                        + "verified for (\(outer.environment ?? "none"))"
                )
            }
        }
        let appAppleId = data?.appAppleId ?? summary?.appAppleId ?? token?.appAppleId ?? appData?.appAppleId
        var notification = SignedNotification(
            notificationType: type, subtype: payload.subtype, notificationUUID: uuid.lowercased(),
            version: payload.version, signedDateMs: try CheckedNumber.milliseconds(signedDate, "signedDate"),
            environment: environment,
            bundleId: data?.bundleId ?? summary?.bundleId ?? token?.bundleId ?? appData?.bundleId,
            appAppleId: try appAppleId.map { number throws(SignedDataError) in
                try CheckedNumber.integer(number, "appAppleId")
            },
            status: data?.status, consumptionRequestReason: data?.consumptionRequestReason
        )
        notification.shape = shape
        if let summary {
            notification.summary = SignedNotification.ExtensionSummary(
                requestIdentifier: summary.requestIdentifier, productId: summary.productId,
                storefrontCountryCodes: summary.storefrontCountryCodes,
                succeededCount: try summary.succeededCount.map { number throws(SignedDataError) in
                    try CheckedNumber.integer(number, "summary.succeededCount")
                },
                failedCount: try summary.failedCount.map { number throws(SignedDataError) in
                    try CheckedNumber.integer(number, "summary.failedCount")
                }
            )
        }
        if let token {
            notification.externalPurchaseToken = SignedNotification.ExternalPurchaseToken(
                externalPurchaseId: token.externalPurchaseId,
                tokenCreationDateMs: try token.tokenCreationDate.map { number throws(SignedDataError) in
                    try CheckedNumber.milliseconds(number, "externalPurchaseToken.tokenCreationDate")
                }
            )
        }
        if let jws = appData?.signedAppTransactionInfo {
            let inner = try verify(jws, now: now)
            let app: SignedNotification.AppTransactionFacts
            do {
                app = try JSONDecoder().decode(
                    SignedNotification.AppTransactionFacts.self, from: Foundation.Data(inner.payload)
                )
            } catch {
                throw SignedDataError(.malformed, "the app transaction's payload does not decode: \(error)")
            }
            // An app transaction names its environment as receiptType.
            guard inner.isSigned == outer.isSigned, app.environment == notification.environment else {
                throw SignedDataError(
                    .malformed,
                    "the signed app transaction is for the \(app.environment ?? "unnamed") environment, the "
                        + "notification for \(notification.environment ?? "none")"
                )
            }
            if let expected = notification.bundleId, app.bundleId != expected {
                throw SignedDataError(
                    .malformed, "the app transaction is for \(app.bundleId ?? "no app"), the notification for \(expected)"
                )
            }
            notification.appTransactionId = app.appTransactionId
        }
        if let jws = data?.signedTransactionInfo {
            let inner = try verify(jws, now: now)
            try Self.agree(inner, with: outer, notification, what: "signed transaction")
            let transaction = try SignedTransaction(payload: inner.payload)
            guard transaction.environment == notification.environment else {
                throw SignedDataError(
                    .malformed,
                    "the signed transaction is for the \(transaction.environment ?? "unnamed") environment, the "
                        + "notification for \(notification.environment ?? "none")"
                )
            }
            if let expected = notification.bundleId, transaction.bundleId != expected {
                throw SignedDataError(
                    .malformed, "the signed transaction is for \(transaction.bundleId ?? "no app"), the notification for \(expected)"
                )
            }
            notification.transaction = transaction
        }
        if let jws = data?.signedRenewalInfo {
            let inner = try verify(jws, now: now)
            try Self.agree(inner, with: outer, notification, what: "signed renewal info")
            let renewal: SignedRenewalInfo
            do {
                renewal = try BoundedJSON.decode(SignedRenewalInfo.self, from: inner.payload)
            } catch let error as SignedDataError {
                throw error
            } catch {
                throw SignedDataError(.malformed, "the renewal info's payload does not decode: \(error)")
            }
            guard renewal.environment == notification.environment else {
                throw SignedDataError(
                    .malformed,
                    "the signed renewal info is for the \(renewal.environment ?? "unnamed") environment, the "
                        + "notification for \(notification.environment ?? "none")"
                )
            }
            notification.renewalInfo = renewal
        }
        return notification
    }

    /// A nested JWS was accepted as the notification was (both signed, or both test-environment data) and names the
    /// notification's environment: a signed notification cannot carry unsigned data, nor the reverse.
    private static func agree(
        _ inner: Verified, with outer: Verified, _ notification: SignedNotification, what: String
    ) throws(SignedDataError) {
        guard inner.isSigned == outer.isSigned, inner.environment == notification.environment else {
            throw SignedDataError(
                .malformed,
                "the \(what) is for the \(inner.environment ?? "unnamed") environment\(inner.isSigned ? "" : ", unsigned")"
                    + ", the notification for \(notification.environment ?? "none")\(outer.isSigned ? "" : ", unsigned")"
            )
        }
    }
}
