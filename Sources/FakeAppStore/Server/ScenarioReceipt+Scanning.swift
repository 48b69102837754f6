import AppStoreModel

extension ScenarioReceipt {
    /// `decode(json:)` for every request the server reads: `JSONScanner` when it can, `JSONDecoder` (the reference)
    /// otherwise. Same rules as `init(from:)`: the magic key must be the number 1, `environment` a string, the
    /// faults known names. Debug builds decode both ways and check they agree.
    static func scannedOrDecoded(json bytes: [UInt8]) -> ScenarioReceipt? {
        guard let fast = try? scanned(json: bytes) else { return decode(json: bytes) }
        #if DEBUG
        assert(decode(json: bytes) == fast, "JSONScanner and JSONDecoder disagree on a scenario receipt")
        #endif
        return fast
    }

    private static func scanned(json bytes: [UInt8]) throws -> ScenarioReceipt {
        var scanner = JSONScanner(bytes)
        scanner.skipWhitespace()
        var magic: Int64?
        var environment: String?
        var bundleId: String?
        var inApp: [InAppTransaction]?
        var latest: [InAppTransaction]?
        var status: Int64?
        var faults: [Fault]?
        var nonce: String?
        var seen = JSONScanner.SeenKeys()
        try scanner.readObject { scanner, key in
            switch key {
            case "fake_appstore_scenario":
                try seen.insert(0)
                magic = try scanner.readInteger()
            case "environment":
                try seen.insert(1)
                environment = try scanner.readString()
            case "bundle_id":
                try seen.insert(2)
                bundleId = try scanner.readNull() ? nil : try scanner.readString()
            case "in_app":
                try seen.insert(3)
                inApp = try scanner.readNull() ? nil : try [InAppTransaction](scanning: &scanner)
            case "latest_receipt_info":
                try seen.insert(4)
                latest = try scanner.readNull() ? nil : try [InAppTransaction](scanning: &scanner)
            case "status":
                try seen.insert(5)
                status = try scanner.readNull() ? nil : try scanner.readInteger()
            case "faults":
                try seen.insert(6)
                if try !scanner.readNull() {
                    var list: [Fault] = []
                    try scanner.readArray { scanner in
                        guard let fault = Fault(rawValue: try scanner.readString()) else {
                            throw JSONScanner.Unsupported()
                        }
                        list.append(fault)
                    }
                    faults = list
                }
            case "nonce":
                try seen.insert(7)
                nonce = try scanner.readNull() ? nil : try scanner.readString()
            default:
                try scanner.skipValue()
            }
        }
        try scanner.finish()
        guard magic == 1, let environment else { throw JSONScanner.Unsupported() }
        return ScenarioReceipt(
            environment: environment,
            bundleId: bundleId ?? "",
            inApp: inApp ?? [],
            latestReceiptInfo: latest,
            status: try status.map { value in
                guard let small = Int(exactly: value) else { throw JSONScanner.Unsupported() }
                return small
            },
            faults: faults ?? [],
            nonce: nonce
        )
    }
}
