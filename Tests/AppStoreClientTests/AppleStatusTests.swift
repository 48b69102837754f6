import AppStoreClient
import Testing

@Suite("AppleStatus")
struct AppleStatusTests {
    /// Every status Apple documents, one by one, plus the 21100–21199 range and statuses Apple never sends.
    static let table: [(status: Int, expected: AppleStatusClass)] = [
        (0, .valid),
        (21000, .configurationError),
        (21001, .retryable),
        (21002, .malformedData),
        (21003, .invalidReceipt),
        (21004, .configurationError),
        (21005, .retryable),
        (21006, .valid),
        (21007, .useSandbox),
        (21008, .useProduction),
        (21009, .retryable),
        (21010, .invalidReceipt),
        (21100, .retryable),
        (21150, .retryable),
        (21199, .retryable),
        // Unknown: never a verdict.
        (1, .retryable),
        (21011, .retryable),
        (21200, .retryable),
        (-1, .retryable),
    ]

    @Test("classify", arguments: table)
    func classify(status: Int, expected: AppleStatusClass) {
        #expect(AppleStatus.classify(status) == expected, "status \(status)")
    }

    @Test("the table covers every status Apple documents")
    func tableCoversDocumentedStatuses() {
        let tested = Set(Self.table.map(\.status))
        let documented = Set(AppleStatus.descriptions.keys)
        #expect(documented.subtracting(tested).isEmpty, "documented but untested: \(documented.subtracting(tested))")
        #expect(documented == Set([0] + Array(21000...21010)))
    }

    @Test("describe names the status and Apple's meaning", arguments: table.map(\.status))
    func describe(status: Int) throws {
        let text = AppleStatus.describe(status)
        #expect(text.hasPrefix("\(status) ("), "\(text)")
        #expect(text.hasSuffix(")"))
        if let meaning = AppleStatus.descriptions[status] {
            #expect(text == "\(status) (\(meaning))")
            #expect(!meaning.isEmpty)
        } else if (21100...21199).contains(status) {
            #expect(text == "\(status) (internal data access error)")
        } else {
            #expect(text == "\(status) (unknown status)")
        }
    }

    @Test("describe: the meanings that matter to operators")
    func describeMeanings() {
        #expect(AppleStatus.describe(21004).contains("shared secret"))
        #expect(AppleStatus.describe(21007).contains("sandbox receipt"))
        #expect(AppleStatus.describe(21008).contains("production receipt"))
        #expect(AppleStatus.describe(0) == "0 (valid)")
    }
}
