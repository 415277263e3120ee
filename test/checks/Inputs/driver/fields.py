"""Prints mpnanny-check's JSON findings or sites file one per line, `key=value` in a
fixed order, so FileCheck can test every field; exits 1 when a field is missing."""
import json
import sys

FINDING = ["check", "severity", "file", "line", "column", "function", "message", "fix",
           "site_id", "expression", "risk", "precision", "aten_ops"]
SITE = ["id", "check", "severity", "file", "line", "column", "function", "expression",
        "aten_ops", "risk", "precision"]

doc = json.load(open(sys.argv[1]))
if isinstance(doc, dict):
    print("schema_version=%s generated_by=%s" % (doc["schema_version"], doc["generated_by"]))
    items, keys = doc["sites"], SITE
else:
    items, keys = doc, FINDING
status = 0
for item in items:
    missing = [k for k in keys if k not in item]
    if missing:
        print("MISSING " + ",".join(missing))
        status = 1
    print(" ".join("%s=%s" % (k, ",".join(item[k]) if isinstance(item.get(k), list) else item.get(k))
                   for k in keys))
sys.exit(status)
