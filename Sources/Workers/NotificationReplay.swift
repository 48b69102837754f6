import AppStoreClient
import AppStoreModel
import Foundation
import Logging
import PostgresClient
import ReceiptQueue

/// Reads Get Notification History for each app and environment over a date range, every page, and hands each
/// notification's `signedPayload` to a store (`receive_notification($1, 'history')`). What Apple could not deliver
/// (the receiver was down, answered 5xx) is taken in this way; what was delivered is already known, and storing
/// the same bytes again adds nothing.
///
/// ```swift
/// let replay = NotificationReplay(client: serverAPI, bundleIds: ["com.example.app"], environments: [.production])
/// let summary = try replay.run(from: yesterday, until: Date(), into: inbox)
/// ```
public struct NotificationReplay: Sendable {
    /// What storing one notification came to.
    public enum Stored: Sendable, Hashable {
        /// A row that was not there before.
        case new
        /// The same bytes were stored before.
        case known
        /// The store refused the payload's shape (`receive_notification()`'s 22023); the reading goes on.
        case refused
    }

    /// What a run read and stored.
    public struct Summary: Sendable, Hashable {
        /// History pages read, over every app and environment.
        public var pages = 0
        /// Notifications read (those without a signedPayload included).
        public var read = 0
        public var new = 0
        public var known = 0
        /// Refused by the store, or without a signedPayload.
        public var refused = 0

        public init() {}
    }

    /// Failing reads of a page (429, 5xx, no answer) tried again before the run gives up; each waits Apple's
    /// Retry-After or 1, 2, 4 … s (at most 60).
    public var retries: Int
    public let client: ServerAPIClient
    public let bundleIds: [String]
    public let environments: [AppStoreEndpoint]
    private let logger: Logger

    public init(
        client: ServerAPIClient, bundleIds: [String], environments: [AppStoreEndpoint], retries: Int = 4,
        logger: Logger = Logger(label: "receipt-worker.notification-replay")
    ) {
        self.client = client
        self.bundleIds = bundleIds
        self.environments = environments
        self.retries = retries
        self.logger = logger
    }

    /// Reads the notifications Apple sent from `start` (inclusive) until `end`, for every app and environment,
    /// and stores each one with `store`, in Apple's order.
    /// - Throws: ``NotificationReplayError`` when Apple cannot be read (after the retries) or `store` throws;
    ///   it carries what was done until then.
    /// Reads like `run(from:until:onlyFailures:store:)` and stores each notification in `inbox` with source
    /// `history`: new, already known (the same bytes), or refused by its shape (SQLSTATE 22023).
    public func run(
        from start: Date, until end: Date, onlyFailures: Bool = false, into inbox: NotificationInbox
    ) throws(NotificationReplayError) -> Summary {
        try run(from: start, until: end, onlyFailures: onlyFailures) { payload in
            do {
                return try inbox.receiveReportingKnown(payload, source: .history).alreadyKnown ? .known : .new
            } catch let error as PostgresError where error.isRefusedNotificationPayload {
                return .refused
            }
        }
    }

    /// Milliseconds since 1970, as Get Notification History takes them; nil for a date no Int64 holds.
    static func milliseconds(_ date: Date) -> Int64? {
        Int64(exactly: (date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// `onlyFailures`: only the notifications Apple could not deliver (Get Notification History's filter).
    public func run(
        from start: Date, until end: Date, onlyFailures: Bool = false, store: (String) throws -> Stored
    ) throws(NotificationReplayError) -> Summary {
        guard let startMs = Self.milliseconds(start), let endMs = Self.milliseconds(end) else {
            throw NotificationReplayError(
                .appStore, "the period \(start) to \(end) is out of range: give dates in Apple's 180 days of history",
                summary: Summary()
            )
        }
        var request = NotificationHistoryRequest(startDate: startMs, endDate: endMs)
        if onlyFailures { request.onlyFailures = true }
        var summary = Summary()
        for bundleId in bundleIds {
            for environment in environments {
                var token: String?
                repeat {
                    let page = try read(request, token: token, bundleId: bundleId, environment: environment, summary)
                    summary.pages += 1
                    for item in page.notifications {
                        summary.read += 1
                        guard let payload = item.signedPayload, !payload.isEmpty else {
                            summary.refused += 1
                            continue
                        }
                        let stored: Stored
                        do {
                            stored = try store(payload)
                        } catch {
                            throw NotificationReplayError(
                                .store, "storing a notification of \(bundleId) failed: \(error)", summary: summary
                            )
                        }
                        switch stored {
                        case .new: summary.new += 1
                        case .known: summary.known += 1
                        case .refused: summary.refused += 1
                        }
                    }
                    token = page.hasMore ? page.paginationToken : nil
                    if page.hasMore && token == nil {
                        throw NotificationReplayError(
                            .appStore, "\(environment.rawValue) history of \(bundleId): hasMore without a "
                                + "paginationToken", summary: summary
                        )
                    }
                } while token != nil
            }
        }
        return summary
    }

    private func read(
        _ request: NotificationHistoryRequest, token: String?, bundleId: String, environment: AppStoreEndpoint,
        _ summary: Summary
    ) throws(NotificationReplayError) -> NotificationHistoryPage {
        var attempt = 0
        while true {
            let (result, _) = client.notificationHistory(
                request, paginationToken: token, bundleId: bundleId, environment: environment
            )
            switch result {
            case .success(let page, _):
                return page
            case .retryable(let failure) where attempt < retries:
                let wait = min(60, failure.retryAfterSeconds ?? Double(1 << attempt))
                logger.notice(
                    "Notification History: trying again",
                    metadata: ["bundle_id": "\(bundleId)", "error": "\(failure)", "wait_seconds": "\(wait)"]
                )
                attempt += 1
                Thread.sleep(forTimeInterval: wait)
            default:
                throw NotificationReplayError(
                    .appStore,
                    "Get Notification History of \(bundleId) (\(environment.rawValue)): "
                        + (result.failure.map { "\($0)" } ?? "no answer"),
                    summary: summary
                )
            }
        }
    }
}
