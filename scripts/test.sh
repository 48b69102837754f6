#!/usr/bin/env bash
# Runs the whole test suite: unit tests, then integration tests against a real PostgreSQL (TEST_DATABASE_URL if
# set, else a temporary cluster the suite starts and stops itself) and the fake App Store on loopback, then the
# fault-injection suite (killed workers, database restarts, Apple outages). The three groups run one after the
# other so that the timing-sensitive tests do not share two cores with the chaos tests.
# The long fault run: RELIABILITY_LONG=1 bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build --build-tests
mkdir -p .build
swift test --skip-build --skip IntegrationTests 2>&1 | tee .build/test-unit.txt
swift test --skip-build --filter IntegrationTests --skip IntegrationTests.Reliability 2>&1 | tee .build/test-integration.txt
swift test --skip-build --filter IntegrationTests.Reliability 2>&1 | tee .build/test-reliability.txt
