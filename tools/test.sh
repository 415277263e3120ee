#!/usr/bin/env bash
# Sets up, builds and runs every test. The second of the README's two commands;
# .ci/run calls it. BUILD_DIR overrides the build folder (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/bootstrap.sh browser node
build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"
