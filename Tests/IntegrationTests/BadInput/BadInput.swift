/// Bad input of every kind — receipts, Apple's answers, configuration, hostile identifiers, secrets — each with
/// the exact outcome it must come to. The suites live in extensions of this namespace so that
/// `swift test --filter BadInput` selects them.
enum BadInput {}
