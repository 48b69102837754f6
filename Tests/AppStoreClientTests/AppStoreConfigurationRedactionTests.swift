import AppStoreClient
import Testing

@Suite("The shared secret stays out of every description of the configuration")
struct AppStoreConfigurationRedactionTests {
    static let secret = "s3cr3t-shared-0f-the-app"
    static let configuration = AppStoreConfiguration(
        productionURL: "http://127.0.0.1:8090/verifyReceipt", sandboxURL: "http://127.0.0.1:8090/sandbox/verifyReceipt",
        sharedSecret: secret
    )

    @Test("description, debugDescription, interpolation, print, debugPrint and dump")
    func everyForm() {
        let configuration = Self.configuration
        var printed = ""
        print(configuration, to: &printed)
        var debugPrinted = ""
        debugPrint(configuration, to: &debugPrinted)
        var dumped = ""
        dump(configuration, to: &dumped)
        let forms = [
            configuration.description, configuration.debugDescription, "\(configuration)",
            String(describing: configuration), String(reflecting: configuration), printed, debugPrinted, dumped,
            "\(Mirror(reflecting: configuration).children.map { "\($0.label ?? ""): \($0.value)" })",
            "\([configuration])", "\(Optional(configuration) as Any)",
        ]
        for form in forms {
            #expect(!form.contains(Self.secret), "the secret shows in: \(form)")
            #expect(form.contains("<redacted>"), "no mask in: \(form)")
        }
        // What is not secret stays visible, so a logged configuration is still useful.
        #expect(configuration.description.contains("http://127.0.0.1:8090/verifyReceipt"))
        #expect(dumped.contains("timeoutSeconds: 15.0"), "\(dumped)")
    }

    @Test("an error about the configuration does not carry the secret either")
    func errors() {
        var configuration = Self.configuration
        configuration.timeoutSeconds = 0
        let error = #expect(throws: AppStoreConfigurationError.self) { try configuration.validate() }
        #expect(error?.code == .invalidTimeout)
        #expect(error.map { !"\($0)".contains(Self.secret) } == true)
    }

    @Test("validation errors carry a code and the setting to fix", arguments: [
        (AppStoreConfiguration(productionURL: "ftp://127.0.0.1/x", sharedSecret: "s"), .invalidURL,
         "APPLE_PRODUCTION_URL"),
        (AppStoreConfiguration(sandboxURL: "http://example.com/x", sharedSecret: "s"), .insecureURL,
         "APPLE_SANDBOX_URL"),
        (AppStoreConfiguration(sharedSecret: ""), .emptySharedSecret, "APPLE_SHARED_SECRET"),
    ] as [(AppStoreConfiguration, AppStoreConfigurationError.Code, String)])
    func codes(configuration: AppStoreConfiguration, code: AppStoreConfigurationError.Code, setting: String) {
        let error = #expect(throws: AppStoreConfigurationError.self) { try configuration.validate() }
        #expect(error?.code == code)
        #expect(error?.setting == setting)
    }
}
