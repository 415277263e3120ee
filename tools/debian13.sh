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

tag=debian13
# shellcheck source=tools/debian-root.sh
. "$tree/tools/debian-root.sh"
debian_root_trap

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

lock_root
make_root "$suite"
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
