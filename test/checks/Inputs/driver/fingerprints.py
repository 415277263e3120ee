"""Prints each SARIF result's rule, line and partial fingerprints, one line each:
`RULE line=N lineHash=H siteId=S` (driver-diff-sarif.test compares two runs with them)."""
import json
import sys

log = json.load(open(sys.argv[1]))
for result in log["runs"][0]["results"]:
    region = result["locations"][0]["physicalLocation"]["region"]
    prints = result.get("partialFingerprints", {})
    print("%s line=%d lineHash=%s siteId=%s" % (result["ruleId"], region["startLine"],
                                               prints.get("mpnannyLineHash/v1", "-"),
                                               prints.get("mpnannySiteId/v1", "-")))
