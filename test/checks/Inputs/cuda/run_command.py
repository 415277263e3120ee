"""Runs the compiler on the first command of a compile_commands.json, with its output flags
replaced by the arguments given: `run_command.py compile_commands.json CLANG -fsyntax-only ...`.
What the checks parse, shown by the compiler itself (an AST dump through the same flags)."""
import json
import subprocess
import sys

entry = json.load(open(sys.argv[1]))[0]
args = entry["arguments"]
command = [sys.argv[2]]
skip = False
for a in args[1:]:
    if skip:
        skip = False
        continue
    if a == "-o":
        skip = True
        continue
    if a == "-c":
        continue
    command.append(a)
command += sys.argv[3:]
sys.exit(subprocess.run(command, cwd=entry["directory"]).returncode)
