#!/usr/bin/env bash
# tools/build.sh shows progress: an estimate up front, ninja's [n/N] lines, and a line whenever a
# step runs longer than the heartbeat (here 1 s, with steps of 2.5 s from a stand-in ninja).
set -euo pipefail
source_dir=$1
work=$2
rm -rf "$work" && mkdir -p "$work/build"
touch "$work/build/build.ninja"
fail() { echo "FAIL: $1" >&2; exit 1; }
build() {
  (cd "$source_dir" && PATH="$source_dir/test/e2e/fake-ninja:$PATH" MPNANNY_BUILD_HEARTBEAT_S=1 \
     JOBS=2 MPNANNY_DEMO_BUILD_CPU_S=600 bash tools/build.sh "$work/build" some-target)
}
# A folder that never built: every one of the 6 commands is left (600 CPU-s on 2 cores: 5 min).
out=$(build)
echo "$out"
grep -q '^build: some-target in .*: 6 steps, about 5 min on 2 cores' <<<"$out" ||
  fail "no estimate up front for a first build (6 of 6 steps, about 5 min)"
# A folder that built before: ninja's dry run says 3 of the 6 are left (about 2 min).
touch "$work/build/.ninja_log"
out=$(build)
echo "$out"
grep -q '^build: some-target in .*: 3 steps, about 2 min on 2 cores' <<<"$out" ||
  fail "no estimate up front (3 of 6 steps left, 600 CPU-s on 2 cores: about 2 min)"
[ "$(grep -c '^\[[123]/3\] Building step' <<<"$out")" -eq 3 ] || fail "ninja's [n/N] lines are not all shown"
[ "$(grep -c 'still building' <<<"$out")" -ge 3 ] || fail "no line while a step ran past the heartbeat"
grep -q '^build: done in' <<<"$out" || fail "no closing line"
echo "build_progress: ok"
