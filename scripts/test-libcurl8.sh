#!/usr/bin/env bash
# Runs the transport's suites (CurlHTTPTests, FakeAppStoreTests, AppStoreClientTests) once more, against libcurl 8:
# Debian 13 and Ubuntu 24.04 ship it, and it differs from Debian 12's 7.88 in ways the transport adapts to (waiting
# for a multiplexing connection, HTTP/2 to loopback without TLS, where upload buffers live). libcurl 8 comes from
# Debian's bookworm-backports, unpacked under .build/libcurl8 (nothing is installed) and loaded with
# LD_LIBRARY_PATH; the tests check that the run did load it (EXPECT_LIBCURL_MAJOR). Needs the tests built
# (`swift build --build-tests`, as scripts/test.sh does) and apt-get with Debian's archive reachable.
# Output in .build/test-libcurl8.txt; exit status 2 when libcurl 8 cannot be had, 1 when a test failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
dir=.build/libcurl8
log=.build/test-libcurl8.txt
mkdir -p .build
: >"$log"
fail() { echo "test-libcurl8.sh: $*" | tee -a "$log" >&2; exit 2; }
found() { find "$dir/root" -name libcurl.so.4 2>/dev/null | head -1; }
if [ -z "$(found)" ]; then
    rm -rf "$dir"
    mkdir -p "$dir/lists/partial" "$dir/archives/partial"
    echo "deb http://deb.debian.org/debian bookworm-backports main" >"$dir/sources.list"
    apt=(-o Dir::Etc::SourceList="$PWD/$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$PWD/$dir/lists" -o Dir::Cache::Archives="$PWD/$dir/archives" -o Acquire::Retries=3)
    apt-get "${apt[@]}" update -qq >>"$log" 2>&1 \
        || fail "could not read bookworm-backports' package list from deb.debian.org (apt-get's output above)"
    (cd "$dir" && apt-get "${apt[@]}" download -qq libcurl4/bookworm-backports) >>"$log" 2>&1 \
        || fail "could not download libcurl4 from bookworm-backports (apt-get's output above)"
    # Unpacked aside and moved in whole, so that an interrupted run leaves nothing that looks complete.
    dpkg-deb -x "$dir"/libcurl4_*.deb "$dir/root.partial" >>"$log" 2>&1 || fail "could not unpack the package"
    mv "$dir/root.partial" "$dir/root"
fi
so=$(found)
test -n "$so" || fail "the package held no libcurl.so.4"
lib=$(cd "$(dirname "$so")" && pwd)
echo "test-libcurl8.sh: libcurl from $(ls "$dir"/libcurl4_*.deb 2>/dev/null | head -1)" | tee -a "$log"
LD_LIBRARY_PATH="$lib" EXPECT_LIBCURL_MAJOR=8 swift test --skip-build \
    --filter CurlHTTPTests --filter FakeAppStoreTests --filter AppStoreClientTests 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
