# shellcheck shell=bash disable=SC2154
# Shared by tools/debian13.sh and tools/deb-test.sh (sourced, not run): a Debian root made once
# with debootstrap and cached outside the tree, and mounts into it that are undone on exit.
# Needs root. The caller sets, before using these:
#   root   the root's folder         cache  a folder for the lock, the log and debootstrap's .debs
#   tag    the prefix of its messages
# and calls debian_root_trap once, so that every mount made by mount_into is undone on exit.

say() { echo "$tag: $*" >&2; }

# The archive apt-get uses here (the URI of the main component of a Debian suite), or
# MPNANNY_DEBIAN_MIRROR.
mirror() {
  if [ -n "${MPNANNY_DEBIAN_MIRROR:-}" ]; then
    echo "$MPNANNY_DEBIAN_MIRROR"
    return
  fi
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
debian_root_trap() {
  trap cleanup EXIT
  trap 'exit 130' INT TERM
}

mount_into() { # mount_into TARGET mount-args...
  local target=$1
  shift
  mkdir -p "$target"
  mount "$@" "$target"
  mounted+=("$target")
}

# make_root SUITE: debootstraps $root (minbase) from mirror's archive unless it was made before
# (its marker file is there). Hold the lock ($cache/lock, see lock_root) around it.
make_root() {
  local suite=$1 archive start
  [ -f "$root/.mpnanny-debootstrap-done" ] && return 0
  command -v debootstrap >/dev/null || {
    say "installing debootstrap"
    # shellcheck source=tools/apt.sh
    . "$tree/tools/apt.sh"
    apt_install debootstrap
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
}

# lock_root: one creation at a time; runs that find the root ready share it (fd 9, until exit
# or `flock -u 9`).
lock_root() {
  mkdir -p "$cache" "$(dirname "$root")"
  exec 9>"$cache/lock"
  flock 9
}
