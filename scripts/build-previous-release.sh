#!/usr/bin/env bash
# Builds the previous release's receipt-worker for the upgrade test (UpgradeTests) and prints the binary's path on its
# last line. scripts/previous-release names the release as "TAG FULL-COMMIT-ID": the commit, not the tag, is used, as
# a clean clone may have no tags. Its tree is taken with `git archive` into .build/previous-release/COMMIT/src and only
# its `receipt-worker` product is built there, with a scratch path of its own (src/.build), debug, without CI's
# warnings-as-errors (the old release's code is what it is). Packages resolve as for this checkout (the same git
# mirrors), pinned to this checkout's Package.resolved when there is one. A second run finds the binary and builds
# nothing: delete .build/previous-release to build again. The first build takes about as long as this project's own
# first debug build of receipt-worker (minutes on two cores).
set -euo pipefail
cd "$(dirname "$0")/.."
read -r tag commit < scripts/previous-release
root=".build/previous-release/$commit"
source_dir="$root/src"
binary="$source_dir/.build/debug/receipt-worker"
if [ ! -x "$binary" ]; then
    if [ ! -f "$source_dir/.complete" ]; then
        if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
            echo "build-previous-release: commit $commit ($tag) is not in this clone; fetch it (git fetch origin $commit, or git fetch --unshallow in a shallow clone)" >&2
            exit 1
        fi
        rm -rf "$source_dir"
        mkdir -p "$source_dir"
        git archive "$commit" | tar -x -C "$source_dir"
        if [ -f Package.resolved ] && [ ! -f "$source_dir/Package.resolved" ]; then
            cp Package.resolved "$source_dir/Package.resolved"
        fi
        touch "$source_dir/.complete"
    fi
    echo "build-previous-release: building $tag ($commit) in $source_dir" >&2
    (cd "$source_dir" && env -u CI swift build --product receipt-worker --scratch-path .build) >&2
fi
echo "$(pwd)/$binary"
