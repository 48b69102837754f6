import Workers

extension WorkerEvents {
    /// Events recorded into `metrics`.
    public static func recording(into metrics: ReceiptMetrics) -> WorkerEvents {
        WorkerEvents(
            appleCall: { call in
                metrics.recordAppleCall(
                    endpoint: call.endpoint.rawValue, status: call.metricStatus, seconds: call.seconds
                )
            },
            jobWritten: { completion, outcome, _ in
                metrics.recordWritten(
                    WrittenOutcome(
                        state: completion.state.rawValue, reason: completion.reason, kind: outcome.kind.rawValue,
                        retryCause: outcome.kind == .retry ? outcome.retryCause : nil,
                        environment: outcome.environment?.rawValue,
                        appleStatus: outcome.kind == .configError ? outcome.configurationErrorLabel : nil
                    )
                )
            },
            swept: { result in metrics.recordSweep(rescued: result.rescued, dead: result.dead) },
            notificationWritten: { state, reason in metrics.recordNotification(state: state, reason: reason) },
            retentionSampled: { samples in metrics.setRetention(samples) }
        )
    }
}
