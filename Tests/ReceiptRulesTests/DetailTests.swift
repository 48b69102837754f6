import Testing

@testable import ReceiptRules

@Suite("Detail strings")
struct DetailTests {
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (951_868_800_000, "2000-03-01T00:00:00Z"),
        (1_582_934_400_000, "2020-02-29T00:00:00Z"),
        (1_595_439_546_123, "2020-07-22T17:39:06.123Z"),
        (253_402_300_799_000, "9999-12-31T23:59:59Z"),
    ])
    func utcTimes(ms: Int64, text: String) {
        #expect(VerdictRules.Detail.time(ms) == text)
    }

    @Test func listsShowAFewItems() {
        #expect(VerdictRules.Detail.list([]) == "")
        #expect(VerdictRules.Detail.list(["a", "b", "c"]) == "a, b, c")
        #expect(VerdictRules.Detail.list(["a", "b", "c", "d", "e"]) == "a, b, c and 2 more")
    }

    @Test func bundleDetailsNameBothIds() {
        #expect(VerdictRules.Detail.bundleMismatch("com.a", "com.b") == "receipt is for com.a, the order for com.b")
        #expect(VerdictRules.Detail.bundleMismatch(nil, "com.b").contains("com.b"))
    }
}
