#!/usr/bin/env bash
# Sets up, builds and runs every test. The second of the README's two commands;
# .ci/run calls it. BUILD_DIR overrides the build folder (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/bootstrap.sh browser node
build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
JOBS=$jobs bash tools/build.sh "$build"
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
# Tests skipped on this platform, each with the reason it printed (LibTorch 1.13 computes no fp16
# on the CPU; LibTorch 1.13's headers do not parse as C++20; ...).
python3 - "$build/Testing/Temporary/LastTest.log" "$log" <<'PY' || true
import re, sys
log, summary = open(sys.argv[1], errors="replace").read(), open(sys.argv[2], errors="replace").read()
names = re.findall(r"Test +#\d+: (\S+) \.+\s*\*+Skipped", summary)
if names:
    print("\nSkipped here (%d), and why:" % len(names))
for name in names:
    part = log.split('"%s" start time' % name, 1)[-1].split("<end of output>", 1)[0]
    lines = [l.strip() for l in part.splitlines()]
    why = next((l for l in lines if l.startswith("SKIPPED:")), None)
    if why is None:
        marks = [i for i, l in enumerate(lines) if l.endswith("Skipped")]
        why = lines[marks[0] + 1] if marks and marks[0] + 1 < len(lines) else "(no reason printed)"
    print("  %s: %s" % (name, why[:300]))
PY
# ctest's own count, repeated last so that it stays the closing line.
summary=$(grep -Eo '[0-9]+ tests failed out of [0-9]+' "$log" | tail -1)
if [ -n "$summary" ]; then
  failed=${summary%% *}
  total=${summary##* }
  skipped=$(grep -cE '^[[:space:]]*[0-9]+ - .* \(Skipped\)$' "$log" || true)
  echo
  echo "$((total - failed - skipped)) passed, $failed failed, $skipped skipped"
fi
exit "$status"
