import Testing
import Workers

@Suite("Retention periods")
struct RetentionTests {
    @Test("days become seconds; a period not given is a hundred years")
    func periods() {
        let both = Retention(clearReceiptsAfterDays: 30, deleteAfterDays: 0.5)
        #expect(both.clearReceiptsAfterSeconds == 30 * 86_400)
        #expect(both.deleteAfterSeconds == 43_200)
        let clearOnly = Retention(clearReceiptsAfterDays: 7, deleteAfterDays: nil)
        #expect(clearOnly.deleteAfterSeconds == Retention.neverDays * 86_400)
        #expect(Retention.neverDays >= 365 * 100)
    }
}
