#!/usr/bin/env bash
# Whether the clang-tidy plugin built against LLVM 19 (Debian 13 root, build-debian13/) reports
# what the one built against LLVM 16 (Debian 12, build/) reports, on every input of the check
# tests (test/checks, its Inputs, the corpus) and on the bundled example (issue 26).
#
#   bash tools/compare-llvm-findings.sh        # needs both builds; prints the diff, exit 1 if any
#   MPNANNY_LLVM16_PLUGIN=DIR/lib/libmpnanny-tidy.so bash tools/compare-llvm-findings.sh
#                                              # the LLVM 16 plugin of another build of this source
#
# Each file is scanned with -checks='-*,mpnanny-*' and the mock LibTorch headers; the example with
# each platform's real LibTorch (1.13 and 2.6), of which only the findings in the example count.
# A finding is "file:line:col: warning: message [check]", paths relative to the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build/llvm-findings}
mkdir -p "$out"

if [ "${1:-}" = "--scan" ]; then
  # One platform's findings: --scan CLANG_TIDY PLUGIN OUTPUT
  tidy=$2 plugin=$3 result=$4
  mock="-std=c++17 -isystem test/checks/Inputs/mock"
  : >"$result"
  for f in test/checks/*.cpp test/checks/Inputs/driver/*.cpp test/corpus/*.cpp; do
    extra=""
    grep -q -- "-DMOCK_LIBTORCH_1_13" "$f" && extra="-DMOCK_LIBTORCH_1_13"
    "$tidy" --quiet --load="$plugin" -checks='-*,mpnanny-*' "$f" -- $mock $extra 2>/dev/null |
      grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error):' >>"$result" || true
  done
  torch=$(find /usr/include/torch/csrc/api/include -maxdepth 0 2>/dev/null)
  "$tidy" --quiet --load="$plugin" -checks='-*,mpnanny-*' examples/train_attention.cpp -- \
    -std=c++17 -isystem "$torch" -Iruntime/include 2>/dev/null |
    grep -E '^[^ ]*examples/train_attention.cpp:[0-9]+:[0-9]+: (warning|error):' >>"$result" || true
  sed -i "s|^$(pwd)/||" "$result"
  sort -o "$result" "$result"
  exit 0
fi

plugin16=${MPNANNY_LLVM16_PLUGIN:-build/lib/libmpnanny-tidy.so}
[ -f "$plugin16" ] || { echo "$plugin16 does not exist: bash tools/test.sh first" >&2; exit 2; }
[ -f build-debian13/lib/libmpnanny-tidy.so ] ||
  { echo "build-debian13/ has no plugin: bash tools/debian13.sh bash tools/test.sh first" >&2; exit 2; }
tidy16=$(grep -m1 '^MPNANNY_CLANG_TIDY:' build/CMakeCache.txt 2>/dev/null | cut -d= -f2 || true)
start=$SECONDS
bash "$0" --scan "${tidy16:-clang-tidy-16}" "$plugin16" "$out/llvm16.txt"
echo "LLVM 16 (Debian 12): $(wc -l <"$out/llvm16.txt") findings in $((SECONDS - start)) s"
start=$SECONDS
bash tools/debian13.sh bash "$0" --scan clang-tidy-19 build-debian13/lib/libmpnanny-tidy.so "$out/llvm19.txt"
echo "LLVM 19 (Debian 13): $(wc -l <"$out/llvm19.txt") findings in $((SECONDS - start)) s"
if diff -u "$out/llvm16.txt" "$out/llvm19.txt"; then
  echo "same findings ($(wc -l <"$out/llvm16.txt") lines)"
else
  exit 1
fi
