#if os(Linux)
import Foundation
import Glibc
import PostgresClient
import ReceiptQueue
import Testing

extension RolesTests {
    @Test("notifications as receipt_api stores Apple's body; the replay's statement runs as receipt_worker")
    func notificationsUnderTheirRoles() async throws {
        let world = try Self.worldWithRoles()
        let payload = NotificationReceiverTests.algNone(signature: "cm9sZXM")
        let receiver = try Receiver(databaseURL: Self.url(world, as: "api_login"))
        defer { receiver.child.signal(SIGKILL) }
        let answer = try receiver.post(NotificationReceiverTests.body(payload))
        #expect(answer.status == 200, "\(answer.text) \(receiver.child.output)")
        #expect(!receiver.child.output.contains("permission denied"), "\(receiver.child.output)")
        receiver.child.signal(SIGTERM)
        #expect(receiver.child.wait(timeout: 30) == 0, "\(receiver.child.output)")

        let worker = try PostgresConnection(Self.url(world, as: "worker_login"))
        defer { worker.close() }
        let inbox = NotificationInbox(connection: worker)
        #expect(try inbox.receiveReportingKnown(payload, source: .history).alreadyKnown)
        let other = NotificationReceiverTests.algNone(signature: "b3RoZXI")
        #expect(try !inbox.receiveReportingKnown(other, source: .history).alreadyKnown)
        let sources = try world.query("SELECT source FROM receipt_notifications ORDER BY id").rows.map { $0.first ?? nil }
        #expect(sources == ["receiver", "history"])
    }
}
#endif
