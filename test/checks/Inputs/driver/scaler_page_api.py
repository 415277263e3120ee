"""Checks that a knowledge page uses mpnanny::GradScalerOptions as the runtime declares it:
plain fields (`options.init_scale = 1e9;`), no setters (`GradScalerOptions().init_scale(1e9)`).
Usage: scaler_page_api.py GradScaler.h page.md... Prints each misuse; exit 1 when any."""
import re
import sys

header = open(sys.argv[1], encoding="utf-8").read()
body = re.search(r"struct GradScalerOptions\s*\{(.*?)\};", header, re.S).group(1)
fields = set(re.findall(r"^\s*[\w:]+\s+(\w+)\s*=", body, re.M))
bad = []
for page in sys.argv[2:]:
    text = open(page, encoding="utf-8").read()
    for m in re.finditer(r"GradScalerOptions\(\)\s*\.\s*(\w+)\s*\(", text):
        bad.append("%s: setter %s() does not exist (GradScalerOptions has fields)" % (page, m.group(1)))
    for var in set(re.findall(r"GradScalerOptions\s+(\w+)\s*[;{(]", text)):
        for field in re.findall(r"\b%s\.(\w+)\s*=" % re.escape(var), text):
            if field not in fields:
                bad.append("%s: %s.%s is not a field of GradScalerOptions" % (page, var, field))
print("\n".join(bad) if bad else "GradScalerOptions used as declared: %d field(s)" % len(fields))
sys.exit(1 if bad else 0)
