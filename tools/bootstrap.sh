#!/usr/bin/env bash
# Installs, only when missing, the Debian packages that mpnanny's build and tests need:
# Debian 12's (LLVM 16, LibTorch 1.13) or, inside the root of tools/debian13.sh, Debian 13's
# (LLVM 19, LibTorch 2.6). Idempotent and quiet when everything is already there.
set -euo pipefail

codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
case "$codename" in
  trixie) llvm=19 ;;
  *) llvm=16 ;;
esac
packages=(
  clang-$llvm clang-tidy-$llvm libclang-$llvm-dev llvm-$llvm-dev llvm-$llvm-tools
  libclang-rt-$llvm-dev
  libyaml-cpp-dev nlohmann-json3-dev libsqlite3-dev sqlite3 libtorch-dev libgloo-dev
  libgtest-dev libgmock-dev libbenchmark-dev libdw-dev libunwind-dev
  cmake ninja-build g++ python3 python3-yaml python3-jsonschema python3-pygments
  git pre-commit
)
# The format test pins clang-format-16 (one version's style); Debian 13 has none, and the test
# is not registered there.
if [ "$codename" != trixie ]; then packages+=(clang-format-16); fi
# A debootstrap root starts bare: clang++-19 needs libomp for OpenMP, npm needs certificates.
[ "$codename" = trixie ] && packages+=(libomp-$llvm-dev ca-certificates file)
# Extra groups a caller can ask for: `bootstrap.sh browser` adds what the report tests need.
for extra in "$@"; do
  case "$extra" in
    browser) packages+=(chromium) ;;
    node) command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm) ;;
    *) echo "bootstrap.sh: unknown extra '$extra' (known: browser, node)" >&2; exit 2 ;;
  esac
done

missing=()
# One dpkg-query for all: the packages it does not list as installed are missing. It fails when
# one of them is not even known, which must not end this script in silence (set -e, pipefail).
installed=$( (dpkg-query -W -f='${Package} ${Status}\n' "${packages[@]}" 2>/dev/null || true) |
              awk '$NF == "installed" { print $1 }')
for p in "${packages[@]}"; do
  grep -qxF "$p" <<<"$installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "bootstrap: installing ${missing[*]}" >&2
# shellcheck source=tools/apt.sh
. "$(dirname "$0")/apt.sh"
apt_install "${missing[@]}"
