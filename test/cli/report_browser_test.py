#!/usr/bin/env python3
"""Renders mpnanny reports in headless Chromium and checks what the page wrote after rendering.

report.js sets, on <body>: data-rendered, data-errors (uncaught errors plus console.error calls),
data-charts; and on each chart: data-chart (its id), data-kind, data-points. The expected counts
come from the database itself. Exit 77 (skipped) only when Chromium cannot be installed.
"""
import argparse
import html
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL: " + message)


def find_chromium(bootstrap):
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    subprocess.run(["bash", bootstrap, "browser"], check=False)
    return shutil.which("chromium")


def chromium(browser, args, timeout=90):
    profile = tempfile.mkdtemp(prefix="mpnanny-chromium-")
    try:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + profile,
               "--virtual-time-budget=10000"] + args
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def dump_dom(browser, page):
    proc = chromium(browser, ["--dump-dom", "file://" + os.path.abspath(page)])
    check(proc.returncode == 0, "chromium --dump-dom failed: %s" % proc.stderr[-2000:])
    return proc.stdout


def body_attributes(dom):
    match = re.search(r"<body([^>]*)>", dom)
    return dict(re.findall(r'(data-[\w-]+)="([^"]*)"', match.group(1))) if match else {}


def charts(dom):
    found = {}
    for tag in re.findall(r"<div[^>]*data-chart=[^>]*>", dom):
        attrs = dict(re.findall(r'(data-[\w-]+)="([^"]*)"', tag))
        found[html.unescape(attrs["data-chart"])] = attrs
    return found


def expect_rendered(dom, name):
    attrs = body_attributes(dom)
    check(attrs.get("data-rendered") == "1", "%s: the page did not finish rendering: %r" % (name, attrs))
    check(attrs.get("data-errors") == "0", "%s: console errors: %s" % (
        name, re.findall(r'<pre class="errors" id="errors">(.*?)</pre>', dom, re.S)))
    return attrs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mpnanny", required=True)
    parser.add_argument("--dbs", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--bootstrap", required=True)
    args = parser.parse_args()
    browser = find_chromium(args.bootstrap)
    if not browser:
        print("SKIP: Chromium is not installed and tools/bootstrap.sh browser could not install it")
        return 77
    os.makedirs(args.out, exist_ok=True)
    run_db = os.path.join(args.dbs, "run", "metrics.db")

    # 1. The run report: every chart present with the database's number of points.
    page = os.path.join(args.out, "report.html")
    subprocess.run([args.mpnanny, "report", "--db", run_db, "-o", page], check=True, capture_output=True)
    dom = dump_dom(browser, page)
    attrs = expect_rendered(dom, "report")
    found = charts(dom)
    db = sqlite3.connect(run_db)
    run_id = db.execute("SELECT MAX(run_id) FROM runs").fetchone()[0]
    for name, count in db.execute("SELECT name, COUNT(DISTINCT step) FROM scalars WHERE run_id=? GROUP BY name", (run_id,)):
        chart = found.get("r0-scalar-" + name)
        check(chart is not None, "a chart for scalar %s" % name)
        check(chart is None or int(chart["data-points"]) == count,
              "scalar %s: %s points, expected %d" % (name, chart and chart["data-points"], count))
    grad_steps = db.execute("SELECT COUNT(DISTINCT step) FROM tensor_stats WHERE run_id=? AND phase='gradient'", (run_id,)).fetchone()[0]
    chart = found.get("r0-grad-norm")
    check(chart is not None and int(chart["data-points"]) == grad_steps,
          "gradient-norm chart with %d points: %r" % (grad_steps, chart))
    scale_steps = db.execute("SELECT COUNT(*) FROM loss_scale WHERE run_id=?", (run_id,)).fetchone()[0]
    if scale_steps:
        chart = found.get("r0-loss-scale")
        check(chart is not None and int(chart["data-points"]) == scale_steps,
              "loss-scale chart with %d points: %r" % (scale_steps, chart))
    tracks = db.execute(
        "SELECT t.phase, t.op, t.name, t.location_id, COUNT(DISTINCT t.step) FROM tensor_stats t JOIN histograms h "
        "ON h.run_id=t.run_id AND h.step=t.step AND h.seq=t.seq WHERE t.run_id=? "
        "GROUP BY t.phase, t.op, t.name, t.location_id", (run_id,)).fetchall()
    heatmaps = {k: v for k, v in found.items() if v.get("data-kind") == "heatmap"}
    check(len(heatmaps) == min(24, len(tracks)), "%d heatmaps, expected %d" % (len(heatmaps), min(24, len(tracks))))
    if len(tracks) <= 24:
        check(sum(int(v["data-points"]) for v in heatmaps.values()) == sum(t[4] for t in tracks),
              "heatmap columns add up to the traced (site, step) pairs")
    check(int(attrs.get("data-charts", "0")) == len(found), "every chart box holds a drawn chart")
    check("first-bad" in dom, "the localization chain marks the first bad tensor")
    check("CONFIRMED" in dom and "NOT_REACHED" in dom, "the verdicts are shown")
    screenshot = os.path.join(args.out, "report.png")
    proc = chromium(browser, ["--screenshot=" + screenshot, "--window-size=1280,2600", "file://" + os.path.abspath(page)])
    check(proc.returncode == 0 and os.path.exists(screenshot) and os.path.getsize(screenshot) > 20000,
          "screenshot written: %s" % proc.stderr[-500:])
    print("screenshot: " + screenshot)

    # 2. Markup in a layer name is text.
    page = os.path.join(args.out, "script.html")
    subprocess.run([args.mpnanny, "report", "--db", os.path.join(args.dbs, "script", "metrics.db"), "-o", page],
                   check=True, capture_output=True)
    dom = dump_dom(browser, page)
    expect_rendered(dom, "script report")
    check("&lt;script&gt;alert(1)&lt;/script&gt;" in dom, "the layer name is rendered as text")
    check("<script>alert(1)" not in dom, "no script element made from the layer name")
    check("&lt;b&gt;loss&lt;/b&gt;" in dom and "<b>loss</b>" not in dom, "a scalar name is text too")

    # 3. Several ranks in one report.
    page = os.path.join(args.out, "ranks.html")
    subprocess.run([args.mpnanny, "report", "--db", os.path.join(args.dbs, "ranks"), "-o", page], check=True,
                   capture_output=True)
    dom = dump_dom(browser, page)
    expect_rendered(dom, "ranks report")
    check('data-rank="0"' in dom and 'data-rank="1"' in dom, "one section per rank")
    # The rank view: a lane per rank, rank 1's Inf at step 2 as the origin (see summary-ranks golden).
    lanes = charts(dom).get("rank-lanes", {})
    check(lanes.get("data-lanes") == "2" and lanes.get("data-origin-ranks") == "1",
          "the rank view draws two lanes with the origin on rank 1: %r" % lanes)
    check('data-origin-step="2"' in dom, "the rank view names the origin step")

    # 4. The comparison page.
    train = os.path.join(args.dbs, "train")
    page = os.path.join(args.out, "compare.html")
    subprocess.run([args.mpnanny, "compare", os.path.join(train, "fp32", "metrics.db"),
                    os.path.join(train, "bf16", "metrics.db"), "-o", page], check=True, capture_output=True)
    dom = dump_dom(browser, page)
    expect_rendered(dom, "compare")
    found = charts(dom)
    check("compare-over-steps" in found and int(found["compare-over-steps"]["data-points"]) == 8,
          "the comparison chart spans the 8 steps: %r" % found.get("compare-over-steps"))
    check(re.search(r'data-departure-step="\d+"', dom) is not None, "the page names the departure step")
    proc = chromium(browser, ["--screenshot=" + os.path.join(args.out, "compare.png"), "--window-size=1280,1400",
                              "file://" + os.path.abspath(page)])

    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
