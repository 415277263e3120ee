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
log="$build/ctest-output.txt"
set +e
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# Opt-in sanitizer suites (README, "Sanitizers"): SANITIZE="tsan" or "asan tsan" builds each
# preset in its own folder and runs its tests; off by default, it would double CI's time.
for preset in ${SANITIZE:-}; do
  echo "== sanitizer suite: $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs" || status=1
  ctest --preset "$preset" -j "$jobs" || status=1
done
# The corpus score per check, as the catalogue issue asks to see it on every run.
if [ -f "$build/test/corpus/corpus-score.txt" ]; then
  echo
  cat "$build/test/corpus/corpus-score.txt"
fi
# ctest's own count, repeated last so that it stays the closing line.
summary=$(grep -Eo '[0-9]+ tests failed out of [0-9]+' "$log" | tail -1)
if [ -n "$summary" ]; then
  failed=${summary%% *}
  total=${summary##* }
  echo
  echo "$((total - failed)) passed, $failed failed"
fi
exit "$status"
