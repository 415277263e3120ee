#!/usr/bin/env bash
# Installs, only when missing, the Debian 12 packages that mpnanny's build and tests need.
# Idempotent and quiet when everything is already there.
set -euo pipefail

packages=(
  clang-16 clang-tidy-16 libclang-16-dev llvm-16-dev llvm-16-tools
  libclang-rt-16-dev
  libyaml-cpp-dev nlohmann-json3-dev libsqlite3-dev sqlite3 libtorch-dev
  libgtest-dev libgmock-dev libbenchmark-dev libdw-dev libunwind-dev
  cmake ninja-build g++ python3 python3-yaml python3-jsonschema python3-pygments clang-format-16
)
# Extra groups a caller can ask for: `bootstrap.sh browser` adds what the report tests need.
for extra in "$@"; do
  case "$extra" in
    browser) packages+=(chromium) ;;
    node) command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm) ;;
    *) echo "bootstrap.sh: unknown extra '$extra' (known: browser, node)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "bootstrap: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
