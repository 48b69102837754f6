#!/usr/bin/env bash
# Installs what is missing, builds receipt-worker, and runs the demo end to end: a temporary PostgreSQL, the
# fake App Store, sample receipts for every outcome, workers and scheduler, then a table of verdicts.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build -c release --product receipt-worker
exec .build/release/receipt-worker demo "$@"
