#!/usr/bin/env bash
# Runs the whole test suite: unit tests, then integration tests against a real PostgreSQL (TEST_DATABASE_URL if
# set, else a temporary cluster the suite starts and stops itself) and the fake App Store on loopback, then the
# fault-injection suite (killed workers, database restarts, Apple outages), then the upgrade from the previous release
# (its binary built first). The fuzz tests (every decoder fed 100,000
# mutated inputs, a minute of both cores) are a group of their own after the unit tests. The groups run one after the
# other so that the timing-sensitive tests do not share two cores with the fuzzer or the chaos tests. Every group runs
# even when an earlier one failed; the last line sums them up ("N passed, N failed, N skipped"), and the exit status is
# non-zero if any group failed. Each group's output is kept in .build/test-<group>.txt.
# The long fault run: RELIABILITY_LONG=1 bash scripts/test.sh
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh || exit 1
swift build --build-tests || exit 1
mkdir -p .build

passed=0
failed=0
skipped_total=0
status=0

# run_group NAME ARGUMENTS…: runs `swift test --skip-build ARGUMENTS…` and adds its counts to the totals.
run_group() {
    local name=$1 output=".build/test-$1.txt"
    shift
    swift test --skip-build "$@" 2>&1 | tee "$output"
    local code=${PIPESTATUS[0]}
    # Swift Testing's last line: "Test run with N tests in M suites passed|failed after …"; one line per failed
    # test ("✘ Test … failed after …") and per skipped one ("➜ Test … skipped").
    local total failures skipped
    total=$(grep -Eo 'Test run with [0-9]+ tests?' "$output" | tail -1 | grep -Eo '[0-9]+')
    failures=$(grep -E '^[^ ]+ Test .* failed after' "$output" | grep -vc 'Test run with')
    # (A test whose name says "skipped" starts and passes like any other: only a line ending in "skipped." or
    # "skipped: <comment>" is a skip.)
    # (A known issue's line may end in "skipped" too: only the skip mark, ➜, starts a skip.)
    skipped=$(grep -E '^➜ Test .* skipped(\.|: .*)?$' "$output" | grep -Evc ' (started|passed after [0-9.]+ seconds?|failed after [0-9.]+ seconds?.*)\.$')
    if [ -z "$total" ]; then
        # No summary: the test process did not finish (it crashed or was killed).
        echo "test.sh: the $name group ended without a summary (exit $code)" >&2
        total=$((failures > 0 ? failures : 1))
        failures=$total
    elif [ "$code" -ne 0 ] && [ "$failures" -eq 0 ]; then
        failures=1
    fi
    passed=$((passed + total - failures - skipped))
    failed=$((failed + failures))
    skipped_total=$((skipped_total + skipped))
    if [ "$code" -ne 0 ] || [ "$failures" -gt 0 ]; then status=1; fi
}

run_group unit --skip IntegrationTests --skip FuzzTests
run_group fuzz --filter FuzzTests
run_group integration --filter IntegrationTests --skip IntegrationTests.Reliability --skip IntegrationTests.UpgradeTests
run_group reliability --filter IntegrationTests.Reliability
# The previous release's workers and API calls through this version's migrate (UpgradeTests, about 15 s). Its
# receipt-worker is built first from the commit scripts/previous-release names (scripts/build-previous-release.sh:
# cached under .build/previous-release, so only a clean clone pays for it, about as long as this project's first
# debug build of receipt-worker).
if previous=$(bash scripts/build-previous-release.sh | tail -1) && [ -x "$previous" ]; then
    export PREVIOUS_RELEASE_BINARY=$previous
    run_group upgrade --filter IntegrationTests.UpgradeTests
else
    echo "test.sh: the previous release (scripts/previous-release) could not be built: the upgrade group fails" >&2
    failed=$((failed + 1))
    status=1
fi

echo "$passed passed, $failed failed, $skipped_total skipped"
exit $status
