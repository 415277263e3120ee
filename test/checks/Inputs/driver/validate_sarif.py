"""Validates a SARIF log against a JSON schema (draft 4) and prints `valid` or the errors."""
import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1]))
log = json.load(open(sys.argv[2]))
validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())
errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
for e in errors:
    print("invalid at /%s: %s" % ("/".join(map(str, e.absolute_path)), e.message))
if errors:
    sys.exit(1)
print("valid: %d result(s), %d rule(s)" % (len(log["runs"][0]["results"]),
                                          len(log["runs"][0]["tool"]["driver"]["rules"])))
