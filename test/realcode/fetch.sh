#!/usr/bin/env bash
# Brings the real-code corpus's repositories, at the pinned commits of repos.tsv, into
# test/realcode/src/OWNER+NAME/ (git-ignored: their code is never committed here).
# Only the C/C++ sources and headers are extracted, with the build files that name
# include folders (CMakeLists.txt, *.cmake, setup.py), by extract.py.
#
# Where from, first that works:
#   1. a mirror folder of bare repositories, MPNANNY_REALCODE_MIRROR/OWNER+NAME/repo
#      (default /work/.mirror, where the session's fetch tool puts them);
#   2. git clone from github.com (needs the network), then the pinned commit.
# Usage: fetch.sh [OWNER/NAME ...]   (default: every repository of repos.tsv)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mirror=${MPNANNY_REALCODE_MIRROR:-/work/.mirror}
dest=${MPNANNY_REALCODE_SRC:-$here/src}
mkdir -p "$dest"
wanted=("$@")

status=0
while IFS=$'\t' read -r repo commit; do
  [[ -z "$repo" || "$repo" == \#* ]] && continue
  if [ ${#wanted[@]} -gt 0 ] && [[ ! " ${wanted[*]} " == *" $repo "* ]]; then
    continue
  fi
  key=${repo/\//+}
  out="$dest/$key"
  if [ -f "$out/.mpnanny-commit" ] && [ "$(cat "$out/.mpnanny-commit")" = "$commit" ]; then
    continue
  fi
  gitdir="$mirror/$key/repo"
  if ! git --git-dir="$gitdir" cat-file -e "$commit^{commit}" 2>/dev/null; then
    gitdir="$dest/.clones/$key.git"
    if ! git --git-dir="$gitdir" cat-file -e "$commit^{commit}" 2>/dev/null; then
      echo "fetch.sh: $repo: no mirror at $mirror/$key/repo; cloning from github.com" >&2
      rm -rf "$gitdir"
      if ! git clone --quiet --bare --filter=blob:none "https://github.com/$repo.git" "$gitdir" ||
         ! git --git-dir="$gitdir" cat-file -e "$commit^{commit}" 2>/dev/null; then
        echo "fetch.sh: $repo: could not get commit $commit (no mirror, no network?)" >&2
        status=1
        continue
      fi
    fi
  fi
  rm -rf "$out.tmp"
  mkdir -p "$out.tmp"
  counts=$(python3 "$here/extract.py" "$gitdir" "$commit" "$out.tmp")
  echo "$commit" > "$out.tmp/.mpnanny-commit"
  rm -rf "$out"
  mv "$out.tmp" "$out"
  echo "fetch.sh: $repo at ${commit:0:12} -> $out ($counts)" >&2
done < "$here/repos.tsv"
exit $status
