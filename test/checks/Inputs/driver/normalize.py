"""Keeps the `file:line:col: warning|error: ... [check]` lines of a tool's output, sorted,
so that the two doors' outputs can be diffed."""
import re
import sys

lines = set()
for text in open(sys.argv[1], errors="replace"):
    if re.match(r"^\S+:\d+:\d+: (warning|error): .*\[[\w-]+\]$", text.rstrip("\n")):
        lines.add(text.rstrip("\n"))
for line in sorted(lines):
    print(line)
