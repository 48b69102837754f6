import AppStoreModel
import Foundation

/// StoreKit's `AppTransaction` as the App Store signs it (JWSAppTransactionDecodedPayload): the customer's download
/// of the app, with the version and date of their original purchase. Unknown fields are ignored; dates are
/// milliseconds since 1970; ids are strings, numbers accepted (`JSONModel`'s lenient rules).
///
/// The environment is `receiptType` (Production, Sandbox, Xcode, LocalTesting). `deviceVerification` and
/// `deviceVerificationNonce` tie the copy to one device: only the app can check them (with the device's
/// identifierForVendor), so they are kept, never relied on, here.
public struct SignedAppTransaction: Sendable, Hashable {
    public var receiptType: String?
    public var appAppleId: Int64?
    public var bundleId: String?
    /// The app version that signed it (CFBundleVersion on iOS).
    public var applicationVersion: String?
    public var versionExternalIdentifier: Int64?
    /// When the App Store signed it: the offline validation time.
    public var receiptCreationDateMs: Int64?
    /// When the customer first got the app.
    public var originalPurchaseDateMs: Int64?
    /// The app version the customer first got (CFBundleVersion on iOS, CFBundleShortVersionString on macOS): what
    /// paid-to-free migrations compare.
    public var originalApplicationVersion: String?
    public var deviceVerification: String?
    public var deviceVerificationNonce: String?
    public var preorderDateMs: Int64?
    /// The download's id: the same for every device and reinstall of the customer's copy.
    public var appTransactionId: String?
    /// iOS, macOS, tvOS or visionOS.
    public var originalPlatform: String?

    public init() {}
}

extension SignedAppTransaction: JSONModel {
    public static let fields: JSONFields<Self> = [
        .value("receiptType", \.receiptType),
        .value("appAppleId", \.appAppleId, as: .native),
        .value("bundleId", \.bundleId),
        .value("applicationVersion", \.applicationVersion),
        .value("versionExternalIdentifier", \.versionExternalIdentifier, as: .native),
        .milliseconds("receiptCreationDate", \.receiptCreationDateMs),
        .milliseconds("originalPurchaseDate", \.originalPurchaseDateMs),
        .value("originalApplicationVersion", \.originalApplicationVersion),
        .value("deviceVerification", \.deviceVerification),
        .value("deviceVerificationNonce", \.deviceVerificationNonce),
        .milliseconds("preorderDate", \.preorderDateMs),
        .value("appTransactionId", \.appTransactionId),
        .value("originalPlatform", \.originalPlatform),
    ]

    public static var blank: Self { SignedAppTransaction() }

    /// Decodes a verified payload.
    public init(payload: [UInt8]) throws(SignedDataError) {
        do {
            self = try SignedAppTransaction.decode(payload)
        } catch {
            throw SignedDataError(.malformed, "the app transaction's payload does not decode: \(error)")
        }
    }
}

extension SignedDataVerifier {
    /// Verifies a signed app transaction (`AppTransaction.shared`'s `jwsRepresentation`, or Get App Transaction
    /// Info's `signedAppTransactionInfo`): signature first, then chain (at `now` online, else at its
    /// receiptCreationDate), then its payload, which must name as `receiptType` the environment it was verified
    /// for and carry an appTransactionId. Which app and environment it must be for is the caller's to check.
    public func verifyAppTransaction(_ text: String, now: Date = Date()) throws(SignedDataError) -> SignedAppTransaction {
        let verified = try verify(text, now: now)
        let app = try SignedAppTransaction(payload: verified.payload)
        guard let environment = app.receiptType, environment == verified.environment else {
            throw SignedDataError(
                .malformed,
                "the app transaction's receiptType (\(app.receiptType ?? "none")) is not the environment it was "
                    + "verified for (\(verified.environment ?? "none"))"
            )
        }
        guard let id = app.appTransactionId, !id.isEmpty else {
            throw SignedDataError(.malformed, "the app transaction has no appTransactionId")
        }
        return app
    }
}
