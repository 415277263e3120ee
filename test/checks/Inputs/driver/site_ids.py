"""Prints `check function expression id` of each site, one per line, without the line
numbers: what must not change when unrelated lines are inserted above."""
import json
import sys

for s in json.load(open(sys.argv[1]))["sites"]:
    print(s["check"], s["function"], s["expression"], s["id"])
