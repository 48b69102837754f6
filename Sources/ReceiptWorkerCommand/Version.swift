/// receipt-worker's version: `receipt-worker --version`, the last line of `status`, and the metrics' build info
/// (`receipt_worker_build_info{version}`). The one place it is written; raise it with each release.
enum Version {
    static let current = "0.10.0"
}
