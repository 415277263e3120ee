#!/usr/bin/env python3
"""The README's first command as a newcomer runs it, then an install from what it built.

Usage: run_demo.py --source-dir SRC --work DIR --consumer CONSUMER --torch-dir D [--libdir L]
                   [--clang-tidy CLANG_TIDY]

1. `BUILD_DIR=WORK/build bash tools/demo.sh` in a fresh build folder: it must succeed, show the
   build's progress ([n/N] lines), and print no warning or note that is not about the user's
   code (the bundled example): a configure warning, a facts file nobody asked for, a compiler
   warning from our own sources would each be noise on a newcomer's first screen.
2. `cmake --install WORK/build` after exactly that build, then a project of its own built
   against the prefix with find_package(mpnanny) (test/install/run_install.py does that part).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# Lines of the demo's own making, or the example's: anything else with a diagnostic in it fails.
EXAMPLE = "examples/train_attention.cpp"
DIAGNOSTIC = re.compile(r"\b(warning|note|error)\b\s*:|CMake (Warning|Deprecation)", re.IGNORECASE)


def about_the_users_code(line):
    """A finding or its notes: file:line:col: in the bundled example."""
    head = line.split(": ", 1)[0]
    return re.search(re.escape(EXAMPLE) + r":\d+:\d+$", head) is not None


def run_demo(source_dir, build_dir):
    """Runs the demo, streaming its output; returns (exit code, lines, longest silence in s)."""
    env = dict(os.environ, BUILD_DIR=build_dir)
    for name in list(env):
        if name.startswith("MPNANNY_"):
            del env[name]
    process = subprocess.Popen(["bash", "tools/demo.sh"], cwd=source_dir, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines, longest, last = [], 0.0, time.monotonic()
    for line in process.stdout:
        now = time.monotonic()
        longest = max(longest, now - last)
        last = now
        sys.stdout.write(line)
        lines.append(line.rstrip("\n"))
    return process.wait(), lines, longest


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--consumer", required=True)
    parser.add_argument("--torch-dir", default="")
    parser.add_argument("--libdir", default="lib")
    parser.add_argument("--clang-tidy", default="")
    args = parser.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    build_dir = os.path.join(args.work, "build")
    code, lines, longest = run_demo(args.source_dir, build_dir)
    failures = []
    if code != 0:
        failures.append(f"tools/demo.sh exited {code}")
    if not any(re.match(r"\[\d+/\d+\] ", line) for line in lines):
        failures.append("the build showed no [n/N] progress line")
    if not any(line.startswith("build: ") and (" about " in line or "under a minute" in line)
               for line in lines):
        failures.append("the build did not say up front how long it takes")
    noise = [line for line in lines if DIAGNOSTIC.search(line) and not about_the_users_code(line)]
    for line in noise:
        failures.append("not about the user's code: " + line)
    if not any(about_the_users_code(line) and "warning:" in line for line in lines):
        failures.append("the scan reported no finding in the example")
    # Informational: the build prints a line at least every 20 s (tools/build.sh); a test asserts
    # that mechanism with a slow stand-in for ninja, not the clock of this machine.
    print(f"run_demo: longest silence between two lines of output: {longest:.1f} s")

    if not failures:
        install = [sys.executable, os.path.join(HERE, "..", "install", "run_install.py"),
                   "--build-dir", build_dir, "--consumer", args.consumer,
                   "--work", os.path.join(args.work, "install"), "--libdir", args.libdir]
        if args.torch_dir:
            install += ["--torch-dir", args.torch_dir]
        if args.clang_tidy:
            install += ["--clang-tidy", args.clang_tidy]
        print("$ " + " ".join(install), flush=True)
        if subprocess.run(install).returncode != 0:
            failures.append("install after the demo's build, or the project built against it, failed")

    for failure in failures:
        print("FAIL: " + failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
