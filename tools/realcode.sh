#!/usr/bin/env bash
# Scores mpnanny-check on the real-code corpus (test/realcode/README.md), in one command:
#   1. fetch: test/realcode/fetch.sh brings the pinned repositories' C/C++ sources into
#      test/realcode/src/ (git-ignored). It needs a mirror folder of bare repositories
#      (MPNANNY_REALCODE_MIRROR/OWNER+NAME/repo, default /work/.mirror) or the network
#      (git clone from github.com); repositories already extracted at their pinned commit
#      are kept as they are, so once fetched it needs neither.
#   2. build: configures BUILD_DIR (default build) with cmake -G Ninja as tools/test.sh does
#      when it has no build.ninja yet, then ninja builds mpnanny-check (a no-op when current).
#   3. score: test/realcode/score.py --mpnanny-check BUILD_DIR/bin/mpnanny-check [ARGS]:
#      scans every labelled repository, prints the tables (per check, per category, per
#      repository, findings per KLOC on unlabelled code, parse status, wall times) and exits
#      with its code: 0 the gates are met, 1 a gate failed, 2 bad input (a label that no
#      longer points at its line, a repository not fetched).
# Also needs: tcl-dev (installed here when missing, below), python3 with PyYAML, LibTorch's headers (found like mpnanny-check finds them:
# TORCH_DIR, CMAKE_PREFIX_PATH, /usr, /usr/local, /opt/libtorch), and what the build needs.
#
#   tools/realcode.sh                                  # everything
#   tools/realcode.sh --verbose --json-out rc.json     # every miss and FP, and the numbers as JSON
#   tools/realcode.sh --no-gate Lehdari/DooT2          # one repository, report only
#   python3 test/realcode/score.py --help              # every option
# Environment: BUILD_DIR, JOBS (default nproc), MPNANNY_REALCODE_MIRROR, MPNANNY_REALCODE_SRC,
# SKIP_FETCH=1, SKIP_BUILD=1 (score with the mpnanny-check already in BUILD_DIR), SKIP_TORCH2=1,
# MPNANNY_DEBIAN13_ROOT (where the LibTorch 2.x headers are looked for, below),
# DOORS_PER_REPO (files per repository that test/realcode/doors.py scans through both doors).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
if [ "${SKIP_FETCH:-0}" != 1 ]; then
  # A repository it cannot bring is reported again by the scorer, as bad input (exit 2).
  bash test/realcode/fetch.sh || echo "realcode.sh: fetch.sh did not bring every repository" >&2
fi
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  fi
  ninja -C "$build" -j "$jobs" mpnanny-check
fi
# System headers that a corpus project's own build finds (TCLIBTORCH: find_package(TCL), its
# label file's include /usr/include/tcl): without them its files would not parse, as they
# would not build. Installed like tools/bootstrap.sh installs, when this runs as root.
if ! dpkg-query -W -f='${Status}' tcl-dev 2>/dev/null | grep -q "ok installed"; then
  if [ "$(id -u)" = 0 ]; then
    apt-get install -y -qq tcl-dev >/dev/null ||
      echo "realcode.sh: tcl-dev could not be installed: TCLIBTORCH's files will not parse" >&2
  else
    echo "realcode.sh: tcl-dev is missing (apt-get install tcl-dev): TCLIBTORCH's files will not parse" >&2
  fi
fi
# LibTorch 2.x's headers, for the repositories whose code is written for 2.x (`libtorch: 2` in
# their label file): the Debian 13 root of tools/debian13.sh (LibTorch 2.6), made here when it is
# missing and this runs as root (a few minutes, once); score.py finds it there. Without it those
# repositories are scanned with the headers above, and score.py says so. SKIP_TORCH2=1 skips this.
root13=${MPNANNY_DEBIAN13_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/mpnanny-debian13/root}
if [ "${SKIP_TORCH2:-0}" != 1 ] && [ ! -f "$root13/usr/include/torch/csrc/api/include/torch/torch.h" ]; then
  if [ "$(id -u)" = 0 ]; then
    bash tools/debian13.sh true ||
      echo "realcode.sh: the Debian 13 root could not be made: LibTorch 2.x code is scanned with the headers found" >&2
  else
    echo "realcode.sh: no LibTorch 2.x headers (run bash tools/debian13.sh true as root): LibTorch 2.x code is scanned with the headers found" >&2
  fi
fi
set +e
python3 test/realcode/score.py --mpnanny-check "$build/bin/mpnanny-check" -j "$jobs" "$@"
rc=$?
# Both doors on a sample of the files just scanned (their databases and facts are in place):
# DOORS_PER_REPO files per repository (default 1; 0 skips it), about a minute each.
if [ "${DOORS_PER_REPO:-1}" != 0 ] && [ "$rc" != 2 ]; then
  ninja -C "$build" -j "$jobs" mpnanny-tidy mpnanny-tidy-checks >/dev/null
  python3 test/realcode/doors.py --mpnanny-check "$build/bin/mpnanny-check" \
    --per-repo "${DOORS_PER_REPO:-1}" || { [ "$rc" = 0 ] && rc=1; }
fi
exit $rc
