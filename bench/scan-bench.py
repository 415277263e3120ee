#!/usr/bin/env python3
"""Scan benchmark: mpnanny-check and the clang-tidy plugin against the parser's floor.

Runs, side by side and interleaved (so that a change in the machine's load hits every
variant alike), on the example model and on a generated project whose units all include
<torch/torch.h>:

  parse     clang++ -fsyntax-only (the clang-tidy's LLVM)  the floor
  tidy      clang-tidy-16 --load <plugin> -checks='-*,mpnanny-*'
  nocache   mpnanny-check --no-cache
  cold      mpnanny-check with an empty header cache (a detached process builds the
            entry after the scan; the time until it is ready is printed, not compared)
  warm      mpnanny-check with the cache built

and prints medians, the ratios the issue sets targets for (for the model, the median of each
rep's ratio), peak memory (max RSS of the process) and the per-check cost table (clang-tidy's check profile,
with and without the traversal limited to the user's code). Not a test: the numbers
depend on the machine. Python 3 standard library only.

  bench/scan-bench.py --build build            # full run (tens of minutes on 2 cores)
  bench/scan-bench.py --build build --quick    # one rep on a mock-header snippet
  bench/scan-bench.py --build build --realcode [OWNER/NAME]
      only the real-code project measure: the facts pass from nothing plus a warm
      `mpnanny-check -p -jN` scan of a real-code repository (default: the one with the most
      files in its database), against clang-tidy-16 with the plugin over the same files one
      after another. Needs the database and sources test/realcode/score.py left in
      test/realcode/src/OWNER+NAME/.mpnanny-build/ (run tools/realcode.sh first).
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(HERE)
TARGETS = {"cold / parse": 1.10, "tidy / parse": 1.25, "warm / parse": 0.40,
           "project -j2 warm / tidy one by one": 0.25}


def torch_flags():
    """LibTorch's include folders as -isystem (as mpnanny-check finds them by itself)."""
    for prefix in [os.environ.get("TORCH_DIR", ""), "/usr", "/usr/local", "/opt/libtorch"]:
        inc = os.path.join(prefix, "include")
        if prefix and os.path.exists(os.path.join(inc, "torch/csrc/api/include/torch/torch.h")):
            flags = ["-isystem", os.path.join(inc, "torch/csrc/api/include")]
            if os.path.normpath(inc) not in ("/usr/include", "/usr/local/include"):
                flags += ["-isystem", inc]
            return flags
    sys.exit("scan-bench: LibTorch's headers not found (set TORCH_DIR)")


def timed(cmd, env=None, ok=(0, 1)):
    """(seconds, peak RSS in MiB) of one run; exits when the command fails (an exit code not
    in ok)."""
    with tempfile.TemporaryFile("w+") as err:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True)
        # wait4: the resource usage of this child alone (its peak RSS), not of all children.
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in ok:
            err.seek(0)
            sys.exit("scan-bench: %s failed (exit %d):\n%s" % (" ".join(cmd), proc.returncode,
                                                              err.read()[-3000:]))
    return seconds, usage.ru_maxrss / 1024


def wait_for_entry(directory, timeout=900):
    """Seconds until the entry a detached --build-cache-only process builds is finished: its
    manifest (written last) is there and no build lock is held."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if glob.glob(os.path.join(directory, "*.json")) and not glob.glob(os.path.join(directory, "*.lock*")):
            return time.monotonic() - start
        time.sleep(0.05)
    sys.exit("scan-bench: no header cache entry in %s after %d s" % (directory, timeout))


def realcode_project(args, check, plugin, repo):
    """The facts pass plus a warm -p -jN scan of a real-code repository, against clang-tidy one
    file after another over the same files. Real files exit 3 (compile errors of headers the
    machine lacks): both tools still scan them, so that exit counts as a finished run."""
    src = os.path.join(SOURCE_DIR, "test", "realcode", "src")
    databases = glob.glob(os.path.join(src, "*", ".mpnanny-build", "compile_commands.json"))
    if repo:
        databases = [d for d in databases if d.split(os.sep)[-3] == repo.replace("/", "+")]
    if not databases:
        sys.exit("scan-bench: no real-code database%s under %s (run tools/realcode.sh first)"
                 % (" for " + repo if repo else "", src))

    def entries(db):
        with open(db) as f:
            return json.load(f)
    database = max(databases, key=lambda d: len(entries(d)))
    build = os.path.dirname(database)
    files = [e["file"] for e in entries(database)]
    name = database.split(os.sep)[-3].replace("+", "/")
    checks = "-checks=-*,mpnanny-*"
    any_rc = tuple(range(0, 4))
    print("real-code project: %s, %d files (%s)" % (name, len(files), build))
    facts = [os.path.join(build, "mpnanny-facts.json"), os.path.join(build, "mpnanny-facts.units")]
    shutil.rmtree(facts[1], ignore_errors=True)
    if os.path.exists(facts[0]):
        os.remove(facts[0])
    facts_s, _ = timed([check, "--collect-facts", "-p", build], ok=any_rc)
    cache = tempfile.mkdtemp(prefix="mpnanny-scan-bench-cache-")
    scan = [check, checks, "--cache-dir=" + cache, "-p", build, "-j", str(args.jobs)]
    cold_s, _ = timed(scan, ok=any_rc)
    warm_s, _ = timed(scan, ok=any_rc)
    shutil.rmtree(cache, ignore_errors=True)
    start = time.monotonic()
    for f in files:
        timed([args.clang_tidy, "--load", plugin, checks, "-p", build, f], ok=any_rc)
    tidy_s = time.monotonic() - start
    print("  facts pass (from nothing):                       %8.1f s" % facts_s)
    print("  mpnanny-check -p -j%d, cold cache:                %8.1f s" % (args.jobs, cold_s))
    print("  mpnanny-check -p -j%d, warm cache:                %8.1f s" % (args.jobs, warm_s))
    print("  clang-tidy-16 + plugin, one file after another:  %8.1f s" % tidy_s)
    print("\n%-48s %7s" % ("ratio", "value"))
    print("%-48s %7.2f" % ("facts / clang-tidy", facts_s / tidy_s))
    print("%-48s %7.2f" % ("warm -j%d scan / clang-tidy" % args.jobs, warm_s / tidy_s))
    print("%-48s %7.2f" % ("(facts + warm -j%d scan) / clang-tidy" % args.jobs,
                            (facts_s + warm_s) / tidy_s))


def generate_project(root, units, flags, compiler):
    """`units` files that each include <torch/torch.h> and hold a small fp16 model step,
    and the compile_commands.json a CMake build would write for them."""
    # Sources beside the build folder, not in it: files inside it count as generated.
    src, build = os.path.join(root, "src"), os.path.join(root, "build")
    os.makedirs(src, exist_ok=True)
    os.makedirs(build, exist_ok=True)
    commands = []
    for i in range(units):
        path = os.path.join(src, "unit%02d.cpp" % i)
        with open(path, "w") as f:
            f.write("""#include <torch/torch.h>

// Unit %d of a generated project: a layer and a loss computed in half precision.
torch::Tensor layer%d(const torch::Tensor &x, const torch::Tensor &w) {
  auto h = torch::matmul(x.to(torch::kHalf), w.to(torch::kHalf));
  auto scores = torch::softmax(h, -1);
  return torch::log(scores).masked_fill(h > 0, -1e9);
}

float loss%d(const torch::Tensor &x, const torch::Tensor &w, const torch::Tensor &y) {
  auto p = layer%d(x, w);
  return torch::mse_loss(p, y.to(torch::kHalf)).sum().item<float>();
}
""" % (i, i, i, i))
        commands.append({"directory": build, "file": path,
                         "arguments": [compiler, "-std=c++17"] + flags +
                                      ["-c", path, "-o", os.path.basename(path) + ".o"]})
    with open(os.path.join(build, "compile_commands.json"), "w") as f:
        json.dump(commands, f, indent=1)
    return build, sorted(c["file"] for c in commands)


def profile_table(stderr):
    """{check: wall seconds} summed over the files of clang-tidy's --enable-check-profile
    table (its columns vary: the wall time is the last one before the name)."""
    totals = {}
    for line in stderr.splitlines():
        times = re.findall(r"([\d.]+)\s*\(\s*[\d.]+%\)", line)
        name = re.search(r"%\)\s+(\S+)\s*$", line)
        if times and name and name.group(1) != "Total":
            # The one matcher that belongs to no check: the traversal scope's, which each
            # mpnanny check registers and the first one to run sets.
            label = "(traversal scope)" if name.group(1) == "<unknown>" else name.group(1)
            totals[label] = totals.get(label, 0.0) + float(times[-1])
    return totals


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(SOURCE_DIR, "build"),
                    help="build folder holding bin/mpnanny-check and the plugin")
    ap.add_argument("--clang", default=None,
                    help="the parser's floor (default: the clang++ of the --clang-tidy given)")
    ap.add_argument("--clang-tidy", default="clang-tidy-16")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of each measure (median)")
    ap.add_argument("--units", type=int, default=20, help="units of the generated project")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--quick", action="store_true",
                    help="one rep on a corpus snippet with the mock headers: a smoke run")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("--realcode", nargs="?", const="", default=None, metavar="OWNER/NAME",
                    help="only the real-code project measure (see the description)")
    return ap.parse_args()


def find_tools(args):
    """(mpnanny-check, the plugin); sets args.clang when not given. Exits when one is missing."""
    if args.clang is None:
        # The floor is the clang of the same LLVM as the clang-tidy (16 on Debian 12, 19 in the
        # Debian 13 root), so that both parse alike.
        tidy = shutil.which(args.clang_tidy)
        sibling = os.path.join(os.path.dirname(os.path.realpath(tidy)), "clang++") if tidy else ""
        args.clang = sibling if os.path.exists(sibling) else "clang++-16"
    check = os.path.join(args.build, "bin", "mpnanny-check")
    plugins = glob.glob(os.path.join(args.build, "**", "libmpnanny-tidy.so"), recursive=True)
    for tool in [check, shutil.which(args.clang), shutil.which(args.clang_tidy)]:
        if not tool or not os.path.exists(tool):
            sys.exit("scan-bench: missing %s (build mpnanny-check and mpnanny-tidy)" % tool)
    if not plugins:
        sys.exit("scan-bench: no libmpnanny-tidy.so under " + args.build)
    return check, plugins[0]


def model_and_flags(args):
    """(the model source, the flags of the generated project); --quick also cuts the reps and
    units to one smoke run."""
    if args.quick:
        args.reps, args.units = 1, 2
        mock = os.path.join(SOURCE_DIR, "test", "checks", "Inputs", "mock")
        flags = ["-std=c++17", "-isystem", mock]
        model = os.path.join(SOURCE_DIR, "test", "corpus", "risky-op-half-model.cpp")
        if not os.path.exists(model):
            model = sorted(glob.glob(os.path.join(SOURCE_DIR, "test", "corpus", "*.cpp")))[0]
    else:
        flags = ["-std=c++17"] + torch_flags()
        model = os.path.join(SOURCE_DIR, "examples", "train_attention.cpp")
    return model, flags


def bench_model(args, check, plugin, checks, model, model_flags, scratch, env):
    """Every variant on the model once per rep, interleaved; prints the table and returns
    {variant: median of the per-rep ratios to parse}."""
    warm_dir = os.path.join(scratch, "cache-warm")
    timed([check, checks, "--wait-for-cache", "--cache-dir=" + warm_dir, model, "--"] + model_flags, env=env)
    variants = {
        "parse": lambda r: [args.clang, "-fsyntax-only"] + model_flags + [model],
        "tidy": lambda r: [args.clang_tidy, "--load", plugin, checks, model, "--"] + model_flags,
        "nocache": lambda r: [check, checks, "--no-cache", model, "--"] + model_flags,
        "cold": lambda r: [check, checks, "--cache-dir=" + os.path.join(scratch, "cold%d" % r),
                           model, "--"] + model_flags,
        "warm": lambda r: [check, checks, "--cache-dir=" + warm_dir, model, "--"] + model_flags,
    }
    times = {k: [] for k in variants}
    rss = {k: [] for k in variants}
    entry_ready = []
    for r in range(args.reps):
        for name, cmd in variants.items():
            s, m = timed(cmd(r), env=env)
            times[name].append(s)
            rss[name].append(m)
            if name == "cold":
                # The next variant must not share the machine with the detached build.
                entry_ready.append(s + wait_for_entry(os.path.join(scratch, "cold%d" % r)))
    med = {k: statistics.median(v) for k, v in times.items()}
    # Each rep's variants ran next to each other: a ratio per rep cancels the machine's slow
    # drifts (this VM's parse time wanders by 20 %), and the median of those is the figure.
    per_rep = {k: [t / p for t, p in zip(times[k], times["parse"])] for k in variants}
    x_parse = {k: statistics.median(v) for k, v in per_rep.items()}
    print("\n%-10s %10s %10s %14s %12s" % ("variant", "median s", "x parse", "x parse range",
                                           "peak RSS MiB"))
    for name in variants:
        print("%-10s %10.2f %10.2f %6.2f - %5.2f %12.0f" % (
            name, med[name], x_parse[name], min(per_rep[name]), max(per_rep[name]),
            max(rss[name])))
    print("cold: the detached build had the entry ready %.2f s after the scan started (median)"
          % statistics.median(entry_ready))
    return x_parse


def bench_project(args, check, plugin, checks, flags, scratch, env):
    """The generated project: a -p -jN scan, cold then warm, against clang-tidy one unit after
    another; prints the times and returns (median warm seconds, clang-tidy seconds)."""
    project, units = generate_project(os.path.join(scratch, "project"), args.units, flags,
                                      shutil.which(args.clang))
    project_cache = os.path.join(scratch, "cache-project")
    build_s, _ = timed([check, checks, "--cache-dir=" + project_cache, "-p", project,
                        "-j", str(args.jobs)], env=env)
    warm_j = []
    warm_rss = []
    for _ in range(args.reps):
        s, m = timed([check, checks, "--cache-dir=" + project_cache, "-p", project, "-j",
                      str(args.jobs)], env=env)
        warm_j.append(s)
        warm_rss.append(m)
    start = time.monotonic()
    for unit in units:
        timed([args.clang_tidy, "--load", plugin, checks, "-p", project, unit], env=env)
    tidy_seq = time.monotonic() - start
    print("\nproject: %d units, each including <torch/torch.h>" % len(units))
    print("  mpnanny-check -p -j%d, cold cache (builds it): %8.2f s" % (args.jobs, build_s))
    print("  mpnanny-check -p -j%d, warm cache (median):    %8.2f s  peak RSS %.0f MiB "
          "(one job: the model's warm scan above)" % (args.jobs, statistics.median(warm_j),
                                                      max(warm_rss)))
    print("  clang-tidy-16 + plugin, one unit after another: %8.2f s" % tidy_seq)
    return statistics.median(warm_j), tidy_seq


def print_ratios(x_parse, warm_median, tidy_seq):
    ratios = {
        "cold / parse": x_parse["cold"],
        "nocache / parse": x_parse["nocache"],
        "tidy / parse": x_parse["tidy"],
        "warm / parse": x_parse["warm"],
        "project -j2 warm / tidy one by one": warm_median / tidy_seq,
    }
    print("\n%-40s %7s %7s" % ("ratio", "value", "target"))
    for name, value in ratios.items():
        target = TARGETS.get(name)
        print("%-40s %7.2f %7s %s" % (name, value, "%.2f" % target if target else "-",
                                      "" if not target else ("ok" if value <= target else "MISSED")))


def print_check_profile(args, plugin, checks, model, model_flags, env):
    """Per-check matching time on the model, with the traversal limited to the user's code and
    over every header."""
    print("\nper-check matching time on %s (s; clang-tidy --enable-check-profile):" %
          os.path.basename(model))
    tables = {}
    for label, extra in [("user code only", []), ("all headers (--system-headers)", ["--system-headers"])]:
        proc = subprocess.run([args.clang_tidy, "--load", plugin, checks, "--enable-check-profile"]
                              + extra + [model, "--"] + model_flags, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        tables[label] = profile_table(proc.stderr)
    names = sorted(set().union(*tables.values()), key=lambda n: -tables["user code only"].get(n, 0))
    print("  %-40s %16s %32s" % ("check", "user code only", "all headers (--system-headers)"))
    for n in names:
        print("  %-40s %16.4f %32.4f" % (n, tables["user code only"].get(n, 0.0),
                                         tables["all headers (--system-headers)"].get(n, 0.0)))
    print("  %-40s %16.4f %32.4f" % ("total", sum(tables["user code only"].values()),
                                     sum(tables["all headers (--system-headers)"].values())))


def main():
    args = parse_args()
    check, plugin = find_tools(args)
    if args.realcode is not None:
        realcode_project(args, check, plugin, args.realcode)
        return

    scratch = tempfile.mkdtemp(prefix="mpnanny-scan-bench-")
    model, flags = model_and_flags(args)
    model_flags = flags + ["-I", os.path.join(SOURCE_DIR, "runtime", "include")]
    checks = "-checks=-*,mpnanny-*"
    env = dict(os.environ)
    env.pop("XDG_CACHE_HOME", None)

    load = os.getloadavg()
    print("scan-bench: %s, %d cores, load %.1f %.1f %.1f, %d rep(s)" % (
        os.uname().nodename, os.cpu_count(), *load, args.reps))
    print("model: %s" % os.path.relpath(model, SOURCE_DIR))

    x_parse = bench_model(args, check, plugin, checks, model, model_flags, scratch, env)
    warm_median, tidy_seq = bench_project(args, check, plugin, checks, flags, scratch, env)
    print_ratios(x_parse, warm_median, tidy_seq)
    print_check_profile(args, plugin, checks, model, model_flags, env)
    print("\nload at the end: %.1f %.1f %.1f" % os.getloadavg())
    if args.keep:
        print("scratch kept in " + scratch)
    else:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
