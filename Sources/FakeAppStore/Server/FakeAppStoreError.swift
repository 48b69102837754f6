/// Why the fake App Store could not start, or could not do what it was asked.
public struct FakeAppStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// A configuration value is out of range.
        case invalidConfiguration
        /// The address could not be bound (in use, not local, …).
        case bindFailed
        /// A purchase given to the App Store Server API store is not one the App Store could have made.
        case invalidPurchase
        /// A notification asked for cannot be made (an unknown event or notificationUUID, a missing field).
        case invalidNotification
        /// Signing (the chain, a payload) or writing the root certificate failed.
        case signing
        /// The TLS certificate could not be made or written, or TLS could not be set up with it.
        case tls
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "fake App Store: \(message)" }
}
