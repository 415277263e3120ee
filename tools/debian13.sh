#!/usr/bin/env bash
# Runs a command inside a Debian 13 (trixie) root with this source tree bind-mounted at the
# same path, so that the tree is built and tested against Debian 13's own packages:
# LibTorch 2.6, g++ 14, LLVM/Clang 19.
#
#   bash tools/debian13.sh bash tools/test.sh     # the README's test command, on Debian 13
#   bash tools/debian13.sh bash                   # a shell in the root
#
# The root is made once with debootstrap, from the same package archive that apt-get uses
# on this machine, and cached outside the tree:
#   MPNANNY_DEBIAN13_ROOT  the root (default ${XDG_CACHE_HOME:-~/.cache}/mpnanny-debian13/root)
#   MPNANNY_DEBIAN_MIRROR  the archive (default: the one apt-cache policy lists for main)
# The packages the build and the tests need are installed there by tools/bootstrap.sh, which
# picks Debian 13's names inside the root; their .deb files stay in the root's apt cache.
# Inside, BUILD_DIR defaults to build-debian13, so both platforms' builds live side by side.
# Needs root (mount, chroot); re-runs itself with sudo otherwise. Every mount is made in a
# private mount namespace and unmounted on exit, failure included.
set -euo pipefail

tree=$(cd "$(dirname "$0")/.." && pwd -P)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/mpnanny-debian13
root=${MPNANNY_DEBIAN13_ROOT:-$cache/root}
suite=trixie

if [ "$(id -u)" -ne 0 ]; then
  exec sudo --preserve-env=MPNANNY_DEBIAN13_ROOT,MPNANNY_DEBIAN_MIRROR,XDG_CACHE_HOME,JOBS,BUILD_DIR \
    bash "$0" "$@"
fi
if [ $# -eq 0 ]; then
  echo "usage: tools/debian13.sh COMMAND [ARG...]   (for example: bash tools/test.sh)" >&2
  exit 2
fi

# The mounts live in a private mount namespace: whatever happens to this script, they vanish
# with it, and the host's mount table never sees them.
if [ -z "${MPNANNY_DEBIAN13_NS:-}" ] && command -v unshare >/dev/null; then
  MPNANNY_DEBIAN13_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi

say() { echo "debian13: $*" >&2; }

mirror() {
  if [ -n "${MPNANNY_DEBIAN_MIRROR:-}" ]; then
    echo "$MPNANNY_DEBIAN_MIRROR"
    return
  fi
  # The archive apt-get uses here: the URI of the main component of the Debian suite.
  apt-cache policy 2>/dev/null |
    awk '$3 ~ /^[a-z]+\/main$/ && $2 ~ /\/debian\/?$/ { print $2; exit }'
}

mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null || true
  done
  mounted=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mount_into() { # mount_into TARGET mount-args...
  local target=$1
  shift
  mkdir -p "$target"
  mount "$@" "$target"
  mounted+=("$target")
}

mount_all() {
  mount_into "$root/proc" -t proc proc
  mount_into "$root/sys" -t sysfs sysfs
  mount_into "$root/dev" --rbind /dev
  mount --make-rslave "$root/dev"
  mount_into "$root$tree" --bind "$tree"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
}

in_root() { # runs a command in the root with a clean environment
  local pass=()
  local v
  for v in JOBS SANITIZE CTEST_PARALLEL_LEVEL CTEST_OUTPUT_ON_FAILURE TERM \
           $(compgen -e | grep '^MPNANNY_' | grep -v '^MPNANNY_DEBIAN'); do
    [ -n "${!v+x}" ] && pass+=("$v=${!v}")
  done
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    BUILD_DIR="${BUILD_DIR:-build-debian13}" DEBIAN_FRONTEND=noninteractive "${pass[@]}" \
    bash -c 'cd "$1" && shift && exec "$@"' debian13 "$tree" "$@"
}

mkdir -p "$cache" "$(dirname "$root")"
exec 9>"$cache/lock"
# One creation at a time; runs that find the root ready share it.
flock 9
if [ ! -f "$root/.mpnanny-debootstrap-done" ]; then
  command -v debootstrap >/dev/null || {
    say "installing debootstrap"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
  }
  archive=$(mirror)
  [ -n "$archive" ] || { say "no Debian archive found in apt's sources; set MPNANNY_DEBIAN_MIRROR"; exit 2; }
  say "creating the $suite root in $root from $archive (once; a few minutes)"
  rm -rf "$root"
  mkdir -p "$cache/debs"
  start=$SECONDS
  debootstrap --variant=minbase --cache-dir="$cache/debs" "$suite" "$root" "$archive" \
    >"$cache/debootstrap.log" 2>&1 || {
    say "debootstrap failed; its log:"
    tail -30 "$cache/debootstrap.log" >&2
    exit 1
  }
  # Keep the .deb files apt downloads, so a package list that changes costs only the new ones.
  rm -f "$root/etc/apt/apt.conf.d/docker-clean"
  # A cache that can be made again needs no fsync per file: dpkg unpacks the build packages
  # (LLVM, LibTorch, Chromium, npm's hundreds of node-* packages) several times faster.
  echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/mpnanny-unsafe-io"
  # No manual pages or translations to index in a build root.
  printf 'path-exclude /usr/share/man/*\npath-exclude /usr/share/locale/*\npath-exclude /usr/share/doc/*\npath-include /usr/share/doc/*/copyright\n' \
    >"$root/etc/dpkg/dpkg.cfg.d/mpnanny-nodoc"
  touch "$root/.mpnanny-debootstrap-done"
  say "root made in $((SECONDS - start)) s"
fi
mount_all
# The build and test packages, by Debian 13's names (quiet when all are there).
start=$SECONDS
in_root bash tools/bootstrap.sh browser node
[ $((SECONDS - start)) -gt 5 ] && say "packages installed in $((SECONDS - start)) s"
flock -u 9

set +e
in_root "$@"
status=$?
set -e
cleanup
exit "$status"
