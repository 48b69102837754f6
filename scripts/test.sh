#!/usr/bin/env bash
# Runs the whole test suite: unit tests and integration tests against a real PostgreSQL (TEST_DATABASE_URL if
# set, else a temporary cluster the suite starts and stops itself) and the fake App Store on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build --build-tests
swift test --skip-build 2>&1 | tee .build/test-output.txt
