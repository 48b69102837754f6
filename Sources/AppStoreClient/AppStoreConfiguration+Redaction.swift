/// The shared secret never leaves through a description: string interpolation, `print`, `debugPrint`, `dump`
/// and a debugger's summary all show it masked, so a configuration can be logged whole.
extension AppStoreConfiguration: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    static let secretMask = "<redacted>"

    public var description: String {
        "AppStoreConfiguration(productionURL: \(productionURL), sandboxURL: \(sandboxURL), "
            + "sharedSecret: \(Self.secretMask), timeoutSeconds: \(timeoutSeconds), "
            + "connectTimeoutSeconds: \(connectTimeoutSeconds), maxResponseBytes: \(maxResponseBytes))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "productionURL": productionURL, "sandboxURL": sandboxURL, "sharedSecret": Self.secretMask,
                "timeoutSeconds": timeoutSeconds, "connectTimeoutSeconds": connectTimeoutSeconds,
                "maxResponseBytes": maxResponseBytes,
            ],
            displayStyle: .struct
        )
    }
}
