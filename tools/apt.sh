# Sourced by tools/bootstrap.sh and tools/debian-root.sh: apt_install PACKAGE... installs with
# apt-get, one caller at a time. .ci/run makes the Debian 13 root (which may first install
# debootstrap) while leg 1 bootstraps, and two apt-get runs at once make the second fail at once
# ("Could not get lock /var/lib/apt/lists/lock"): on a fresh machine that ended leg 1 in 1 s.
# The lock is in /tmp, which a chroot has its own of, as it has its own package database.
apt_install() {
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  (
    flock 9
    # DPkg::Lock::Timeout: also wait for an apt-get that is not ours (unattended upgrades).
    $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
      --no-install-recommends "$@" >/dev/null
  ) 9>"${TMPDIR:-/tmp}/mpnanny-apt.lock"
}
