#!/usr/bin/env bash
# Installs mpnanny's two Debian packages in a fresh Debian 12 (bookworm) root and uses them
# there as a user would, with nothing of this tree but a copy of examples/:
#   (a) mpnanny-check scans the bundled example (findings: exit 1), exporting its sites;
#   (b) clang-tidy-16 with the installed plugin reports the same checks on it;
#   (c) a CMake project written here builds the example with find_package(mpnanny), trains it
#       a few steps with MPNANNY_VERIFY=1 (a flagged line is CONFIRMED), and the installed
#       mpnanny summarizes the run.
#
#   bash tools/deb-test.sh                        # packages the build in BUILD_DIR (default build)
#   bash tools/deb-test.sh mpnanny_0.1.0_amd64.deb libmpnanny-dev_0.1.0_amd64.deb
#
# The build must be configured with -DCMAKE_INSTALL_PREFIX=/usr (the packages' prefix, so that
# GNUInstallDirs gives the multiarch lib folder). Each command is printed before it runs; a
# summary ends the output; the exit status is 0 only when every step passed. Not part of
# tools/test.sh: it downloads LibTorch's packages into the root (about 10 minutes the first time).
#
# Cached outside the tree, in ${XDG_CACHE_HOME:-~/.cache}/mpnanny-bookworm (MPNANNY_DEB_TEST_CACHE):
#   root/      the debootstrap root (minbase), made once and never changed (rebuilt when missing)
#   archives/  the .deb files apt downloads, kept between runs
#   run/       this run's copy of root/, where the packages are installed; removed at the end
#              unless MPNANNY_DEB_TEST_KEEP=1
# MPNANNY_DEBIAN_MIRROR sets the archive (default: the one apt-cache policy lists for main).
# Needs root (debootstrap, mount, chroot); re-runs itself with sudo otherwise. The mounts are
# made in a private mount namespace and unmounted on exit, failure included.
set -euo pipefail

tree=$(cd "$(dirname "$0")/.." && pwd -P)
cache=${MPNANNY_DEB_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mpnanny-bookworm}
root=$cache/root
work=$cache/run
suite=bookworm
tag="deb-test"

run() { # prints a command, then runs it
  printf '+ %s\n' "$*" >&2
  "$@"
}

# The packages: the arguments, or built from BUILD_DIR (as the calling user, before sudo).
if [ -z "${MPNANNY_DEB_TEST_DEBS:-}" ]; then
  debs=()
  if [ $# -eq 0 ]; then
    build=${BUILD_DIR:-build}
    case $build in /*) ;; *) build=$tree/$build ;; esac
    prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
    if [ "$prefix" != /usr ]; then
      echo "$tag: $build is not configured with CMAKE_INSTALL_PREFIX=/usr (it has '${prefix:-no cache}')." >&2
      echo "$tag: cmake -S $tree -B $build -DCMAKE_INSTALL_PREFIX=/usr, or pass the two .deb files" >&2
      exit 2
    fi
    rm -f "$build"/mpnanny_*.deb "$build"/libmpnanny-dev_*.deb
    run cmake --build "$build" --target package -- -j"${JOBS:-2}"
    set -- "$build"/mpnanny_*.deb "$build"/libmpnanny-dev_*.deb
  fi
  for deb in "$@"; do
    [ -f "$deb" ] || { echo "$tag: no file $deb" >&2; exit 2; }
    debs+=("$(cd "$(dirname "$deb")" && pwd -P)/$(basename "$deb")")
  done
  names=$(for deb in "${debs[@]}"; do dpkg-deb -f "$deb" Package; done | sort | tr '\n' ' ')
  if [ "$names" != "libmpnanny-dev mpnanny " ]; then
    echo "$tag: want the mpnanny and libmpnanny-dev packages, got: $names" >&2
    exit 2
  fi
  export MPNANNY_DEB_TEST_DEBS="${debs[*]}"
fi

if [ "$(id -u)" -ne 0 ]; then
  exec sudo --preserve-env=MPNANNY_DEB_TEST_DEBS,MPNANNY_DEB_TEST_CACHE,MPNANNY_DEB_TEST_KEEP,MPNANNY_DEBIAN_MIRROR,XDG_CACHE_HOME \
    bash "$0"
fi
if [ -z "${MPNANNY_DEB_TEST_NS:-}" ] && command -v unshare >/dev/null; then
  MPNANNY_DEB_TEST_NS=1 exec unshare --mount --propagation private bash "$0"
fi
read -r -a debs <<<"$MPNANNY_DEB_TEST_DEBS"

# shellcheck source=tools/debian-root.sh
. "$tree/tools/debian-root.sh"
debian_root_trap
# Removes run/ only when nothing is mounted below it (/dev is the host's), and never across
# a file system boundary.
# shellcheck disable=SC2317  # (the EXIT trap calls them)
remove_work() {
  [ -d "$work" ] || return 0
  if awk -v w="$work/" 'index($5 "/", w) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
    say "something is still mounted under $work; not removing it"
    return 1
  fi
  rm -rf --one-file-system "$work"
}
# shellcheck disable=SC2317
on_exit() {
  cleanup
  [ "${MPNANNY_DEB_TEST_KEEP:-0}" = 1 ] || remove_work || true
}
trap on_exit EXIT

total=$SECONDS
lock_root # until exit: one run at a time uses run/ and archives/
make_root "$suite"

# This run's root: a copy of the pristine one, with apt's downloads kept outside it.
remove_work
run cp -a "$root" "$work"
archive=$(mirror)
printf 'deb %s %s main\ndeb %s %s-updates main\n' "$archive" "$suite" "$archive" "$suite" \
  >"$work/etc/apt/sources.list"
mkdir -p "$cache/archives/partial"
mount_into "$work/var/cache/apt/archives" --bind "$cache/archives"
mount_into "$work/proc" -t proc proc
mount_into "$work/dev" --rbind /dev
mount --make-rslave "$work/dev"
cp -L /etc/resolv.conf "$work/etc/resolv.conf" 2>/dev/null || true

# What goes in: the packages, the examples, and the steps below (the tiny project is written there).
test_dir=/root/mpnanny-test
mkdir -p "$work$test_dir/debs"
cp "${debs[@]}" "$work$test_dir/debs/"
cp -r "$tree/examples" "$work$test_dir/examples"
cat >"$work$test_dir/steps.sh" <<'STEPS'
set -uo pipefail
cd /root/mpnanny-test
failed=()
results=()
run() { printf '+ %s\n' "$*" >&2; "$@"; }
step() { # step NAME STATUS: records a step's result
  if [ "$2" = 0 ]; then results+=("PASS  $1"); else results+=("FAIL  $1"); failed+=("$1"); fi
  echo "== $1: $([ "$2" = 0 ] && echo PASS || echo FAIL)" >&2
}
timed() { # timed NAME COMMAND...: runs a step, records its result and wall time
  local name=$1 start=$SECONDS status
  shift
  "$@"
  status=$?
  step "$name ($((SECONDS - start)) s)" "$status"
  return "$status"
}
finish() {
  echo
  echo "deb-test summary (in the Debian 12 root):"
  printf '  %s\n' "${results[@]}"
  [ ${#failed[@]} -eq 0 ]
  exit
}

install_packages() {
  run apt-get update -q || return 1
  (cd debs && run apt-get install -y -q ./mpnanny_*.deb ./libmpnanny-dev_*.deb)
}
timed "install the two packages with apt-get" install_packages || finish

plugin=$(dpkg -L mpnanny | grep '/libmpnanny-tidy\.so$' | head -1)
echo "the plugin: $plugin" >&2

scan() {
  local status=0
  run mpnanny-check examples/train_attention.cpp --export-sites=mpnanny-sites.json >scan.out 2>&1 ||
    status=$?
  cat scan.out
  [ "$status" = 1 ] || { echo "want exit 1 (findings), got $status" >&2; return 1; }
  grep -q 'train_attention.cpp:30:.*\[mpnanny-fp16-constant-range\]' scan.out ||
    { echo "no mpnanny-fp16-constant-range finding on line 30" >&2; return 1; }
  [ -s mpnanny-sites.json ] || { echo "no sites file" >&2; return 1; }
}
timed "(a) mpnanny-check scans the example: findings, exit 1" scan

# The user's toolchain and a project of their own, outside any source tree of mpnanny.
toolchain() { run apt-get install -y -q --no-install-recommends cmake ninja-build g++; }
timed "install cmake, ninja and g++" toolchain || finish
mkdir -p consumer
cat >consumer/CMakeLists.txt <<'CMAKE'
cmake_minimum_required(VERSION 3.18)
project(deb_test_consumer CXX)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
find_package(mpnanny 0.1 REQUIRED)
# The helper comes with the mpnanny package, the config with libmpnanny-dev: both are there.
if(NOT COMMAND mpnanny_enable_clang_tidy)
  message(FATAL_ERROR "find_package(mpnanny) gave no mpnanny_enable_clang_tidy()")
endif()
add_executable(train_attention ${CMAKE_CURRENT_SOURCE_DIR}/../examples/train_attention.cpp)
target_link_libraries(train_attention PRIVATE mpnanny::runtime)
CMAKE
configure() {
  run cmake -S consumer -B consumer/build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
}
timed "(c) configure a project with find_package(mpnanny)" configure

tidy() {
  local status=0
  [ -n "$plugin" ] || { echo "the mpnanny package installs no libmpnanny-tidy.so" >&2; return 1; }
  run clang-tidy-16 --load="$plugin" '-checks=-*,mpnanny-*' -p consumer/build \
    "$PWD/examples/train_attention.cpp" >tidy.out 2>&1 || status=$?
  grep -v '^[0-9]* warnings\? generated\.$' tidy.out
  [ "$status" = 0 ] || { echo "clang-tidy exited with $status" >&2; return 1; }
  grep -q 'train_attention.cpp:30:.*\[mpnanny-fp16-constant-range\]' tidy.out ||
    { echo "no mpnanny-fp16-constant-range warning on line 30" >&2; return 1; }
}
timed "(b) clang-tidy-16 with the installed plugin: the same finding" tidy

build() { run cmake --build consumer/build; }
timed "(c) build the example against the installed runtime" build || finish

train() {
  local status=0
  mkdir -p train
  (cd train && run env MPNANNY_VERIFY=1 MPNANNY_SITES=../mpnanny-sites.json MPNANNY_DIR=nanny_logs \
    ../consumer/build/train_attention 3) >train.out 2>&1 || status=$?
  cat train.out
  [ "$status" = 0 ] || { echo "training exited with $status" >&2; return 1; }
  grep -q 'CONFIRMED .*train_attention.cpp:30 ' train.out ||
    { echo "the flagged line 30 is not CONFIRMED" >&2; return 1; }
  run mpnanny summary --db train/nanny_logs/metrics.db
}
timed "(c) train 3 steps with MPNANNY_VERIFY=1; mpnanny summary" train
finish
STEPS

set +e
run chroot "$work" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
  bash "$test_dir/steps.sh"
status=$?
set -e
echo "deb-test: $([ "$status" = 0 ] && echo passed || echo FAILED) in $((SECONDS - total)) s" \
  "($(basename "${debs[0]}"), $(basename "${debs[1]}"))"
exit "$status"
