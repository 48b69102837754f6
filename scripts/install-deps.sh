#!/usr/bin/env bash
# Installs what receipt-worker needs to build and run on Debian/Ubuntu: libpq, libcurl, zlib and a PostgreSQL server
# (for the demo, the benchmark and the integration tests). Swift itself must already be installed.
set -euo pipefail
need=()
dpkg -s libpq-dev >/dev/null 2>&1 || need+=(libpq-dev)
dpkg -s libcurl4-openssl-dev >/dev/null 2>&1 || need+=(libcurl4-openssl-dev)
dpkg -s zlib1g-dev >/dev/null 2>&1 || need+=(zlib1g-dev)   # Apple's sales reports are gzip files
command -v openssl >/dev/null 2>&1 || need+=(openssl)   # the tests' local OCSP responders
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    need+=(postgresql)
fi
if [ ${#need[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing: ${need[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v swift >/dev/null 2>&1 || { echo "swift is not installed: get Swift 6 from swift.org" >&2; exit 1; }
