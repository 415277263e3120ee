#!/usr/bin/env python3
"""Data-parallel step overhead: examples/train_ddp.cpp with 2 ranks (Gloo on the loopback
address), three ways, interleaved round by round so that a change in the machine's load hits
every variant alike:

  off      the nanny switched off (Options::enabled = false): the training alone
  solo     the nanny on each rank without the process group (as before data parallelism)
  group    the nanny with Options::process_group (the agreement all-reduce on traced steps)

Each rank prints the time of its training loop (start-up, rendezvous and the nanny's close are
outside it); a round's time is the slower rank's. Prints the medians, the step overhead of
`group` and `solo` against `off` (median of each round's ratio), and the agreement's cost
(group - solo) per traced step. The agreement all-reduce is also timed alone
(build/bench/mpnanny_bench_agreement: 2 ranks as threads, RankAgreement::exchange only) and set
beside the step time, since group - solo is smaller than the run-to-run noise of 2 ranks on a
2-core machine. Not a test: the numbers depend on the machine.

  bench/ddp-bench.py --build build [--steps 3000] [--rounds 7] [--trace-interval 100]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

VARIANTS = {"off": ["--no-nanny"], "solo": ["--no-group"], "group": []}


def run_once(example, steps, interval, extra, work):
    store = os.path.join(work, "store")
    if os.path.exists(store):
        os.remove(store)
    command = [example, "--world-size", "2", "--steps", str(steps), "--trace-interval", str(interval),
               "--nanny-dir", os.path.join(work, "nanny"), "--store", store] + extra
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPNANNY_") and k not in ("RANK", "WORLD_SIZE")}
    # One intra-op thread per rank, as torchrun sets it: two ranks on two cores, not four spinning threads.
    env.setdefault("OMP_NUM_THREADS", "1")
    result = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        sys.exit("train_ddp failed:\n" + result.stdout + result.stderr)
    times = re.findall(r"rank \d+: \d+ steps in ([0-9.]+) ms, after the first step ([0-9.]+) ms", result.stdout)
    if len(times) != 2:
        sys.exit("expected two ranks' loop times in:\n" + result.stdout)
    return max(float(whole) for whole, _ in times), max(float(later) for _, later in times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--trace-interval", type=int, default=100)
    args = parser.parse_args()
    example = os.path.abspath(os.path.join(args.build, "bin", "train_ddp"))
    if not os.path.exists(example):
        sys.exit(example + " is not built (it needs libgloo-dev)")
    whole = {name: [] for name in VARIANTS}
    later = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory() as work:
        run_once(example, 50, args.trace_interval, [], work)  # warm the page cache
        for round_index in range(args.rounds):
            for name, extra in VARIANTS.items():
                total, after_first = run_once(example, args.steps, args.trace_interval, extra, work)
                whole[name].append(total)
                later[name].append(after_first)
            print("round %d: %s" % (round_index + 1, "  ".join("%s %.0f ms" % (n, whole[n][-1]) for n in VARIANTS)),
                  flush=True)
    traced = len(range(0, args.steps, args.trace_interval)) if args.trace_interval > 0 else 1
    print("\n2 ranks, %d steps, trace interval %d (%d traced steps), %d rounds, medians" %
          (args.steps, args.trace_interval, traced, args.rounds))
    for label, times, steps, traced_steps in (("whole loop", whole, args.steps, traced),
                                              ("after the first step", later, args.steps - 1, traced - 1)):
        print(label + ":")
        for name in VARIANTS:
            print("  %-6s %8.1f ms  (%.3f ms/step)" % (name, statistics.median(times[name]),
                                                       statistics.median(times[name]) / steps))
        for name in ("solo", "group"):
            ratios = [t / o for t, o in zip(times[name], times["off"])]
            print("  step overhead of %-5s vs off: %+.2f %% (median of per-round ratios)" %
                  (name, 100 * (statistics.median(ratios) - 1)))
        if traced_steps > 0:
            agreement = [(g - s) / traced_steps for g, s in zip(times["group"], times["solo"])]
            print("  agreement (group - solo): %.3f ms per traced step (median)" % statistics.median(agreement))
    alone = os.path.abspath(os.path.join(args.build, "bench", "mpnanny_bench_agreement"))
    if os.path.exists(alone) and args.trace_interval > 0:
        out = subprocess.run([alone, "--ranks", "2"], capture_output=True, text=True, timeout=600).stdout
        found = re.search(r"agreement exchange: ([0-9.]+) us", out)
        if found:
            exchange_ms = float(found.group(1)) / 1000
            step_ms = statistics.median(later["off"]) / (args.steps - 1)
            print("agreement all-reduce alone: %.3f ms per exchange, one per %d steps: %.4f ms per step, "
                  "%.3f %% of the off step (%.3f ms)" % (exchange_ms, args.trace_interval,
                                                         exchange_ms / args.trace_interval,
                                                         100 * exchange_ms / args.trace_interval / step_ms, step_ms))

if __name__ == "__main__":
    main()
