#!/usr/bin/env python3
"""Installs the build into a fresh prefix and uses it as a user would, from outside the tree.

Usage: run_install.py --build-dir BUILD --consumer SRC --work DIR [--generator G] [--torch-dir D]
                      [--clang-tidy CLANG_TIDY_16] [--libdir LIBDIR]

A project of its own (consumer/) finds the runtime with find_package(mpnanny), trains with it,
and its alerts must name its own source line; the installed mpnanny-check must find the
installed rules (and so must the installed clang-tidy plugin), and the installed mpnanny must
read the run and write a report.
"""
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys

FAILURES = []


def expect(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL: " + message, file=sys.stderr)


def run(command, **kwargs):
    print("$ " + " ".join(command), flush=True)
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)
    sys.stdout.write(result.stdout[-4000:])
    sys.stderr.write(result.stderr[-4000:])
    return result


def marked_line(source, marker):
    with open(source) as f:
        for number, text in enumerate(f, 1):
            if marker in text:
                return number
    raise SystemExit(f"{source}: no line marked '{marker}'")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--consumer", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--generator", default="Ninja")
    parser.add_argument("--torch-dir", default="")
    parser.add_argument("--clang-tidy", default="")
    parser.add_argument("--libdir", default="lib", help="CMAKE_INSTALL_LIBDIR, relative to the prefix")
    args = parser.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    prefix = os.path.join(args.work, "prefix")
    result = run(["cmake", "--install", args.build_dir, "--prefix", prefix])
    if result.returncode != 0:
        raise SystemExit("cmake --install failed")

    # Only the prefix tells CMake where mpnanny is: a consumer must not reach into the build.
    consumer_build = os.path.join(args.work, "consumer-build")
    configure = ["cmake", "-S", args.consumer, "-B", consumer_build, "-G", args.generator,
                 "-DCMAKE_BUILD_TYPE=RelWithDebInfo", f"-DCMAKE_PREFIX_PATH={prefix}"]
    if args.torch_dir:
        configure.append(f"-DTorch_DIR={args.torch_dir}")
    if run(configure).returncode != 0:
        raise SystemExit("the consumer does not configure against the installed package")
    with open(os.path.join(consumer_build, "CMakeCache.txt")) as f:
        cache = f.read()
    expect(f"mpnanny_DIR:PATH={prefix}" in cache, "find_package(mpnanny) did not take the installed package")
    if run(["cmake", "--build", consumer_build]).returncode != 0:
        raise SystemExit("the consumer does not build against the installed package")

    program = os.path.join(consumer_build, "consumer")
    linked = run(["ldd", program]).stdout
    runtime_lines = [line for line in linked.splitlines() if "libmpnanny_runtime" in line]
    expect(len(runtime_lines) == 1 and os.path.realpath(prefix) in os.path.realpath(runtime_lines[0].split("=>")[1].split()[0]),
           f"the consumer does not load the installed runtime: {runtime_lines}")

    logs = os.path.join(args.work, "logs")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPNANNY_") and k not in ("RANK", "LOCAL_RANK")}
    trained = run([program, logs], env=env)
    expect(trained.returncode == 0, f"the consumer's training exited with {trained.returncode}")
    database = os.path.join(logs, "metrics.db")
    expect(os.path.exists(database), f"no {database}")
    if os.path.exists(database):
        source = os.path.join(args.consumer, "train.cpp")
        line = marked_line(source, "// OVERFLOW")
        db = sqlite3.connect(database)
        alerts = db.execute("SELECT step, type, file, line FROM alerts").fetchall()
        expect(any(a[1] == "OVERFLOW" and a[2] and a[2].endswith("train.cpp") and a[3] == line for a in alerts),
               f"no OVERFLOW at train.cpp:{line} among {alerts}")
        expect(all(a[2] and a[2].endswith("train.cpp") for a in alerts), f"alerts not in the consumer's source: {alerts}")
        expect(all(a[1] in ("OVERFLOW", "OVERFLOW_RISK") for a in alerts), f"alerts beyond the overflow: {alerts}")

        mpnanny = os.path.join(prefix, "bin", "mpnanny")
        summary = run([mpnanny, "summary", "--db", database, "--format", "json"])
        expect(summary.returncode == 0, "the installed mpnanny cannot summarize the run")
        if summary.returncode == 0:
            counts = json.dumps(json.loads(summary.stdout))
            expect("OVERFLOW" in counts, "the installed mpnanny's summary does not count the OVERFLOW")
        report = os.path.join(args.work, "report.html")
        expect(run([mpnanny, "report", "--db", database, "-o", report]).returncode == 0 and os.path.getsize(report) > 0,
               "the installed mpnanny writes no report")

    # The installed tools read the prefix's own rules and pages (not the build-time prefix's, nor
    # the source tree's): a marker added to an installed page shows, a broken installed rule file
    # is reported by its installed path.
    check = os.path.join(prefix, "bin", "mpnanny-check")
    listed = run([check, "--list-checks"], cwd=args.work)
    expect(listed.returncode == 0 and "mpnanny-" in listed.stdout, "the installed mpnanny-check lists no checks")
    share = os.path.join(prefix, "share", "mpnanny")
    pages = sorted(name for name in os.listdir(os.path.join(share, "knowledge")) if name.startswith("mpnanny-"))
    expect(bool(pages), "no check pages installed")
    if pages:
        marker = "installed copy, read from the prefix"
        with open(os.path.join(share, "knowledge", pages[0]), "a") as f:
            f.write("\n" + marker + "\n")
        explained = run([check, "--explain=" + pages[0][:-len(".md")]], cwd=args.work)
        expect(marker in explained.stdout, f"--explain did not read the installed page {pages[0]}")
    broken = os.path.join(share, "rules", "zz-broken.yaml")
    with open(broken, "w") as f:
        f.write("version: 1\nops: [\n")
    empty = os.path.join(args.work, "empty.cpp")
    with open(empty, "w") as f:
        f.write("int main() { return 0; }\n")
    scanned = run([check, empty, "--"], cwd=args.work)
    expect(scanned.returncode != 0 and broken in scanned.stderr,
           f"the installed mpnanny-check did not read the installed rules (exit {scanned.returncode})")
    if args.clang_tidy:
        plugin = os.path.join(prefix, args.libdir, "libmpnanny-tidy.so")
        tidied = run([args.clang_tidy, "--load=" + plugin, "-checks=-*,mpnanny-*", empty, "--"], cwd=args.work)
        # clang-tidy reports a check's configuration errors as warnings ([clang-tidy-config]).
        expect(broken in tidied.stderr + tidied.stdout,
               f"the installed clang-tidy plugin did not read the installed rules (exit {tidied.returncode})")

    if FAILURES:
        print(f"{len(FAILURES)} failure(s)", file=sys.stderr)
        return 1
    print("installed package: found, built against, trained with, queried")
    return 0


if __name__ == "__main__":
    sys.exit(main())
