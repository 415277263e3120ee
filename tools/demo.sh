#!/usr/bin/env bash
# The main job, the first of the README's two commands: set up, build, scan the
# bundled example, train it with verification on, and say where everything went.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/bootstrap.sh
build=${BUILD_DIR:-build}
# Everything `cmake --install` copies, and the example; not the tests (tools/test.sh builds them).
bash tools/build.sh "$build" mpnanny-installable train_attention

out="$build/demo"
mkdir -p "$out"
sites="$out/mpnanny-sites.json"
echo "== 1. scan: mpnanny-check -p $build examples/train_attention.cpp"
set +e
"$build/bin/mpnanny-check" -p "$build" examples/train_attention.cpp --export-sites="$sites"
scan=$?
set -e
[ "$scan" -le 1 ] || { echo "the scan failed (exit $scan)"; exit "$scan"; }
[ -f "$sites" ] && echo "sites file: $sites"

echo "== 2. train: MPNANNY_VERIFY=1 $build/bin/train_attention"
(cd "$out" && MPNANNY_VERIFY=1 MPNANNY_SITES="$PWD/mpnanny-sites.json" \
   MPNANNY_DIR="$PWD/nanny_logs" "../bin/train_attention" 40)

if [ -x "$build/bin/mpnanny" ] && [ -f "$out/nanny_logs/metrics.db" ]; then
  echo "== 3. report"
  # Its own "report: PATH" line is relative; the absolute one below is the one to open.
  "$build/bin/mpnanny" report --db "$out/nanny_logs/metrics.db" -o "$out/report.html" >/dev/null
  echo "report: $(cd "$out" && pwd)/report.html"
fi
[ -f "$out/nanny_logs/metrics.db" ] && echo "metrics database: $(cd "$out" && pwd)/nanny_logs/metrics.db"
exit 0
