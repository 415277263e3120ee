"""Runs a command and fails unless it exits with the given code: `expect_exit.py 2 cmd...`.
The command's output passes through."""
import subprocess
import sys

want = int(sys.argv[1])
sys.stdout.flush()
got = subprocess.run(sys.argv[2:]).returncode
if got != want:
    print("expect_exit.py: expected exit code %d, got %d" % (want, got), file=sys.stderr)
    sys.exit(1)
