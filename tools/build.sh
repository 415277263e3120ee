#!/usr/bin/env bash
# Configures and builds with ninja, showing progress: what it is about to build, roughly how long
# that takes on this machine, ninja's own [n/N] lines, and a line at least every 20 seconds while
# a long step (a precompiled header, a link) prints nothing, so a first build never looks hung.
#
#   tools/build.sh BUILD_DIR [TARGET...]      (no target: everything)
# Environment: JOBS (default nproc), MPNANNY_BUILD_QUIET=1 (no [n/N] lines, for scripts),
# MPNANNY_BUILD_HEARTBEAT_S (default 20: the longest silence).
# Used by tools/demo.sh and tools/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1
shift
targets=("$@")
jobs=${JOBS:-$(nproc)}

# CPU-seconds of a first build: the demo's targets measured on Debian 12 with g++ 12 (440 s,
# docs/install.md, "How long a build takes"), everything estimated from it. The estimate below
# scales them by the share of the build still to do and the cores: it says minutes, not seconds.
first_build_cpu_seconds() {
  if [ ${#targets[@]} -eq 0 ]; then echo "${MPNANNY_FULL_BUILD_CPU_S:-1200}"; else echo "${MPNANNY_DEMO_BUILD_CPU_S:-450}"; fi
}

if [ ! -f "$build/build.ninja" ]; then
  echo "build: configuring $build (cmake -G Ninja)"
  # Only what goes wrong: the configure's own chatter is not about the user's code.
  if ! log=$(cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo 2>&1); then
    echo "$log" >&2
    echo "build: cmake could not configure $build (its output is above)" >&2
    exit 1
  fi
fi

# What is left to do: in a folder that has never built, every command of the targets; later,
# ninja's dry run (which stops early when CMake's glob check would regenerate build.ninja, so it
# may count low: the figure is rough either way).
everything=$(ninja -C "$build" -t commands "${targets[@]}" 2>/dev/null | wc -l || echo 0)
if [ -f "$build/.ninja_log" ]; then
  total=$(ninja -C "$build" -n "${targets[@]}" 2>/dev/null | grep -c '^\[' || true)
else
  total=$everything
fi
what=${targets[*]:-everything}
if [ "$total" -eq 0 ]; then
  echo "build: $what is up to date in $build"
  exit 0
fi
estimate=$(( $(first_build_cpu_seconds) * total / (everything > 0 ? everything : 1) / jobs / 60 ))
if [ "$estimate" -ge 1 ]; then
  echo "build: $what in $build: $total steps, about $estimate min on $jobs cores (ninja's [n/N] lines follow)"
else
  echo "build: $what in $build: $total steps, under a minute"
fi

# ninja prints a line as each step ends; a single step can run for a minute (a precompiled
# header, a link of LLVM), so a line is printed whenever nothing came for a while.
heartbeat=${MPNANNY_BUILD_HEARTBEAT_S:-20}
start=$SECONDS
last="[0/$total]"
status_file=$(mktemp)
trap 'rm -f "$status_file"' EXIT
set +e
{
  ninja -C "$build" -j "$jobs" "${targets[@]}" 2>&1
  echo "$?" >"$status_file"
} | {
  while true; do
    if IFS= read -r -t "$heartbeat" line; then
      case "$line" in
        ninja:\ Entering*) continue ;;
        \[*) last=${line%% *} ;;
      esac
      [ "${MPNANNY_BUILD_QUIET:-0}" = 1 ] && [[ "$line" == \[* ]] && continue
      printf '%s\n' "$line"
    elif [ $? -gt 128 ]; then
      [ "${MPNANNY_BUILD_QUIET:-0}" = 1 ] || echo "$last still building ($((SECONDS - start)) s so far)"
    else
      break
    fi
  done
}
set -e
status=$(cat "$status_file")
if [ "$status" -ne 0 ]; then
  echo "build: ninja failed (exit $status) after $((SECONDS - start)) s" >&2
  exit "$status"
fi
echo "build: done in $((SECONDS - start)) s"
