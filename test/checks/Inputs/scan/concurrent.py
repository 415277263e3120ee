"""Scans sharing one cold header cache at the same time: `concurrent.py N CACHE TOOL ARGS...`.

Starts N copies of `TOOL --cache-dir=CACHE ARGS...` at once and one `TOOL --no-cache ARGS...`,
and fails unless every copy prints what the uncached scan prints and the cache ends with
one whole entry (.h, .pch, .json) per key and no temporary or lock file left behind."""
import collections
import os
import subprocess
import sys

count, cache, tool, args = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
plain = subprocess.run([tool, "--no-cache"] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL).stdout
procs = [subprocess.Popen([tool, "--cache-dir=" + cache] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) for _ in range(count)]
failed = False
for p in procs:
    out, err = p.communicate()
    if out != plain:
        print("a concurrent scan printed something else (exit %d):\n%s\n%s" % (
            p.returncode, out.decode()[-2000:], err.decode()[-2000:]))
        failed = True
kinds = collections.defaultdict(set)
for name in os.listdir(cache):
    key, _, ext = name.partition(".")
    kinds[key].add(ext)
for key, exts in kinds.items():
    if exts != {"h", "pch", "json"}:
        print("entry %s is not whole: %s" % (key, sorted(exts)))
        failed = True
if not kinds:
    print("no entry was written")
    failed = True
print("%d concurrent scans, %d entr%s" % (count, len(kinds), "y" if len(kinds) == 1 else "ies"))
sys.exit(1 if failed else 0)
