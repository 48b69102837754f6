import Foundation
import PostgresClient
import Testing

@Suite("LISTEN / NOTIFY")
struct NotificationTests {
    /// Waits until `count` notifications have arrived or `seconds` have passed.
    static func receive(_ count: Int, on connection: PostgresConnection, within seconds: Int = 10) throws
        -> [PostgresNotification]
    {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(seconds)
        var received: [PostgresNotification] = []
        while received.count < count, clock.now < deadline {
            received += try connection.waitForNotifications(timeoutMilliseconds: 1000)
        }
        return received
    }

    @Test("notifications on a channel with an awkward name arrive in order, with payload and sender")
    func queuedNotifications() throws {
        let listener = try TestDatabase.connect()
        let sender = try TestDatabase.connect()
        let channel = "receipt \"jobs\"; " + TestDatabase.uniqueName("ch")
        try listener.listen(channel)
        try sender.query("SELECT pg_notify($1, $2)", [channel, "job-1"])
        try sender.query("SELECT pg_notify($1, $2)", [channel, "job-2 'quoted'"])
        try sender.query("SELECT pg_notify($1, 'other channel')", [channel + "-x"])

        let received = try Self.receive(2, on: listener)
        #expect(received.map(\.payload) == ["job-1", "job-2 'quoted'"])
        #expect(received.allSatisfy { $0.channel == channel && $0.processID == sender.serverProcessID })
        #expect(try listener.waitForNotifications(timeoutMilliseconds: 100).isEmpty)
    }

    @Test("a waiting listener wakes up when a notification arrives")
    func wakesUp() throws {
        let listener = try TestDatabase.connect()
        let channel = TestDatabase.uniqueName("wake")
        try listener.listen(channel)
        let url = try TestDatabase.url.get()
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(300)) {
            let sender = try? PostgresConnection(url)
            _ = try? sender?.query("SELECT pg_notify($1, 'wake up')", [channel])
        }
        let clock = ContinuousClock()
        let start = clock.now
        let received = try listener.waitForNotifications(timeoutMilliseconds: 20_000)
        #expect(received.map(\.payload) == ["wake up"])
        #expect(start.duration(to: clock.now) < .seconds(10))
    }

    @Test("the timeout returns an empty list after about the timeout")
    func timeout() throws {
        let listener = try TestDatabase.connect()
        try listener.listen(TestDatabase.uniqueName("quiet"))
        let clock = ContinuousClock()
        var received: [PostgresNotification] = [PostgresNotification(channel: "", payload: "", processID: 0)]
        let elapsed = try clock.measure {
            received = try listener.waitForNotifications(timeoutMilliseconds: 300)
        }
        #expect(received.isEmpty)
        #expect(elapsed >= .milliseconds(290))
        #expect(elapsed < .seconds(60))
        #expect(try listener.waitForNotifications(timeoutMilliseconds: 0).isEmpty)
    }

    @Test("after UNLISTEN nothing more arrives")
    func unlisten() throws {
        let listener = try TestDatabase.connect()
        let channel = TestDatabase.uniqueName("gone")
        try listener.listen(channel)
        try listener.unlisten(channel)
        try listener.query("SELECT pg_notify($1, 'ignored')", [channel])
        #expect(try listener.waitForNotifications(timeoutMilliseconds: 200).isEmpty)
    }
}
