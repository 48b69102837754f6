#!/usr/bin/env bash
# Runs the transport's suites (CurlHTTPTests, FakeAppStoreTests, AppStoreClientTests) once more, against libcurl 8:
# Debian 13 and Ubuntu 24.04 ship it, and it differs from Debian 12's 7.88 in ways the transport adapts to (waiting
# for a multiplexing connection, HTTP/2 to loopback without TLS, where upload buffers live). libcurl 8 comes from
# Debian's bookworm-backports, unpacked under .build/libcurl8 (nothing is installed) and loaded with
# LD_LIBRARY_PATH; the tests check that the run did load it (EXPECT_LIBCURL_MAJOR). Needs the tests built
# (`swift build --build-tests`, as scripts/test.sh does) and apt-get with Debian's archive reachable.
# Output in .build/test-libcurl8.txt; exit status non-zero when libcurl 8 cannot be had or a test fails.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=.build/libcurl8
found() { find "$dir/root" -name libcurl.so.4 2>/dev/null | head -1; }
if [ -z "$(found)" ]; then
    mkdir -p "$dir/lists/partial" "$dir/archives/partial"
    echo "deb http://deb.debian.org/debian bookworm-backports main" >"$dir/sources.list"
    apt=(-o Dir::Etc::SourceList="$PWD/$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$PWD/$dir/lists" -o Dir::Cache::Archives="$PWD/$dir/archives")
    if ! apt-get "${apt[@]}" update -qq >/dev/null 2>&1 \
        || ! (cd "$dir" && apt-get "${apt[@]}" download -qq libcurl4/bookworm-backports >/dev/null 2>&1); then
        echo "test-libcurl8.sh: could not download libcurl4 from bookworm-backports (is deb.debian.org reachable?)" >&2
        exit 2
    fi
    dpkg-deb -x "$dir"/libcurl4_*.deb "$dir/root" || exit 2
fi
so=$(found)
test -n "$so" || { echo "test-libcurl8.sh: the package held no libcurl.so.4" >&2; exit 2; }
lib=$(cd "$(dirname "$so")" && pwd)
echo "test-libcurl8.sh: libcurl from $(ls "$dir"/libcurl4_*.deb 2>/dev/null | head -1)"
LD_LIBRARY_PATH="$lib" EXPECT_LIBCURL_MAJOR=8 swift test --skip-build \
    --filter CurlHTTPTests --filter FakeAppStoreTests --filter AppStoreClientTests 2>&1 | tee .build/test-libcurl8.txt
exit "${PIPESTATUS[0]}"
