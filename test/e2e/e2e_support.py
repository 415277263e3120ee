"""What the end-to-end scripts share: failures collected rather than raised (a run reports every
broken expectation at once), and fresh scratch folders."""
import os
import shutil
import sys

FAILURES = []


def expect(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL: " + message, file=sys.stderr)


def fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def exit_code():
    """Says how the run went and gives the script's exit status."""
    if FAILURES:
        print("%d failure(s)" % len(FAILURES), file=sys.stderr)
        return 1
    print("ok")
    return 0
