import NotificationReceiver
import Testing

@Suite("Apple's notification body taken apart")
struct NotificationBodyTests {
    @Test("the signedPayload of Apple's body, whatever else the object holds")
    func payload() throws {
        let body = Array(#"{"signedPayload": "aaa.bbb.ccc", "other": 1}"#.utf8)
        #expect(try NotificationBody.signedPayload(body).get() == "aaa.bbb.ccc")
    }

    @Test(
        "each kind of bad body gets its own one-line reason",
        arguments: [
            ("", "empty body"),
            ("signedPayload=aaa.bbb.ccc", "not JSON"),
            (#"{"signedPayload": "aaa.bbb.ccc""#, "not JSON"),
            (#"["aaa.bbb.ccc"]"#, "not a JSON object"),
            ("42", "not a JSON object"),
            (#"{"payload": "aaa.bbb.ccc"}"#, "has no signedPayload"),
            (#"{"signedPayload": 42}"#, "not a string"),
            (#"{"signedPayload": null}"#, "not a string"),
        ]
    )
    func refused(body: String, reason: String) {
        let result = NotificationBody.signedPayload(Array(body.utf8))
        guard case .failure(let refusal) = result else {
            Issue.record("\(body) was accepted")
            return
        }
        #expect(refusal.reason.contains(reason), "\(refusal.reason)")
        #expect(!refusal.reason.contains("\n"))
        #expect(body.isEmpty || !refusal.reason.contains(body), "the reason does not quote the body")
    }
}
