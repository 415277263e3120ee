#!/usr/bin/env python3
"""Extracts the C/C++ sources, headers and build files of one commit of a bare repository
into a folder. Blobs the repository lacks (a snapshot without its largest files) are skipped
and counted, not fatal. Python 3 standard library only; used by fetch.sh."""
import os
import re
import subprocess
import sys

WANTED = re.compile(r"(\.(cpp|cc|cxx|c|h|hpp|hh|cu|cuh|inl|ipp|cmake)|/?CMakeLists\.txt|/?setup\.py)$")


def main():
    gitdir, commit, out = sys.argv[1:4]
    listing = subprocess.run(["git", "--git-dir", gitdir, "ls-tree", "-r", "-z", commit],
                             check=True, stdout=subprocess.PIPE).stdout.split(b"\0")
    blobs = []
    for entry in listing:
        if not entry:
            continue
        meta, path = entry.split(b"\t", 1)
        mode, kind, sha = meta.split()
        name = path.decode("utf-8", "replace")
        if kind == b"blob" and mode != b"120000" and WANTED.search(name) and ".." not in name.split("/"):
            blobs.append((sha.decode(), name))
    proc = subprocess.Popen(["git", "--git-dir", gitdir, "cat-file", "--batch"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    missing = 0
    for sha, name in blobs:
        proc.stdin.write((sha + "\n").encode())
        proc.stdin.flush()
        header = proc.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            missing += 1
            continue
        data = proc.stdout.read(int(header[2]))
        proc.stdout.read(1)
        target = os.path.join(out, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(data)
    proc.stdin.close()
    proc.wait()
    print("%d files, %d missing from the repository" % (len(blobs) - missing, missing))


if __name__ == "__main__":
    main()
