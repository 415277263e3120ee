"""Waits until the header cache entry a detached `mpnanny-check --build-cache-only` builds is
finished: a manifest (<key>.json, written last) is there and no build lock is held.

    wait_for_entry.py <cache dir> [seconds]     exit 1 when it is not finished in time
"""
import glob
import os
import sys
import time

directory = sys.argv[1]
deadline = time.monotonic() + (float(sys.argv[2]) if len(sys.argv) > 2 else 300)
while time.monotonic() < deadline:
    if glob.glob(os.path.join(directory, "*.json")) and not glob.glob(os.path.join(directory, "*.lock*")):
        sys.exit(0)
    time.sleep(0.1)
sys.exit("wait_for_entry: no finished entry in %s" % directory)
