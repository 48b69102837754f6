import Testing

@testable import CurlHTTP

/// With many transfers in flight the transport thread lets socket events gather between rounds (libcurl 7.88 runs
/// every transfer of a connection on each event on its socket); a round that started requests goes on at once.
@Suite struct EventBatchingTests {
    @Test func manyTransfersInFlightWaitBetweenRoundsOfEvents() {
        let configuration = CurlMultiTransport.Configuration()
        #expect(configuration.eventPauseMicroseconds(inFlight: 19_000, newRequests: 0) == 2_000)
        #expect(configuration.eventPauseMicroseconds(inFlight: 1_024, newRequests: 0) == 2_000)
    }

    @Test func fewTransfersOrNewRequestsGoOnAtOnce() {
        let configuration = CurlMultiTransport.Configuration()
        #expect(configuration.eventPauseMicroseconds(inFlight: 1_023, newRequests: 0) == 0)
        #expect(configuration.eventPauseMicroseconds(inFlight: 19_000, newRequests: 1) == 0)
    }

    @Test func zeroTurnsItOff() {
        var configuration = CurlMultiTransport.Configuration()
        configuration.eventBatchingThreshold = 0
        #expect(configuration.eventPauseMicroseconds(inFlight: 19_000, newRequests: 0) == 0)
        configuration = CurlMultiTransport.Configuration(eventBatchingMicroseconds: 0)
        #expect(configuration.eventPauseMicroseconds(inFlight: 19_000, newRequests: 0) == 0)
    }
}
