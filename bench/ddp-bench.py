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

--paired B measures instead inside each run: the nanny (with the group, and without it) on and
paused (Nanny::pause) in alternate blocks of B steps of the same processes, on off off on, after a
first block that warms up; and, as a control, the same blocks with no nanny at all. A block's time is the slower rank's; the overhead is the median of the
ratios of neighbouring on and off blocks, pooled over the rounds, with their quartiles. On this
kind of machine whole runs drift by more than the nanny costs; neighbouring blocks, a second or two
apart, mostly do not.

  bench/ddp-bench.py --build build [--steps 3000] [--rounds 7] [--trace-interval 100]
  bench/ddp-bench.py --build build --paired 200 [--steps 8200] [--rounds 3]
"""
import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

VARIANTS = {"off": ["--no-nanny"], "solo": ["--no-group"], "group": []}


def run_example(example, steps, interval, extra, work):
    """Two ranks of train_ddp over a fresh FileStore in `work`; its standard output."""
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
    return result


def run_once(example, steps, interval, extra, work):
    result = run_example(example, steps, interval, extra, work)
    times = re.findall(r"rank \d+: \d+ steps in ([0-9.]+) ms, after the first step ([0-9.]+) ms", result.stdout)
    if len(times) != 2:
        sys.exit("expected two ranks' loop times in:\n" + result.stdout)
    return max(float(whole) for whole, _ in times), max(float(later) for _, later in times)


def run_blocks(example, steps, interval, block, extra, work):
    """One run with --pause-blocks: {block index: (on, slower rank's wall ms, summed CPU ms of the ranks)}."""
    result = run_example(example, steps, interval, ["--pause-blocks", str(block)] + extra, work)
    blocks = {}
    for index, state, ms, cpu in re.findall(r"rank \d+: block (\d+) nanny (on|off) ([0-9.]+) ms cpu ([0-9.]+) ms",
                                           result.stdout):
        on, slowest, cpu_sum = blocks.get(int(index), (state == "on", 0.0, 0.0))
        blocks[int(index)] = (on, max(slowest, float(ms)), cpu_sum + float(cpu))
    if not blocks:
        sys.exit("expected block times in:\n" + result.stdout)
    return blocks


def bootstrap_interval(pairs, draws=4000, seed=7):
    """5th and 95th percentiles of sum(on) / sum(off) over pairs drawn again with replacement."""
    rng = random.Random(seed)
    ratios = []
    for _ in range(draws):
        drawn = [pairs[rng.randrange(len(pairs))] for _ in pairs]
        ratios.append(sum(on for on, _ in drawn) / sum(off for _, off in drawn))
    ratios.sort()
    return ratios[int(0.05 * draws)], ratios[int(0.95 * draws) - 1]


def quartiles(values):
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return q[0], q[2]


def paired(args, example):
    # "none" is the same blocks without a nanny (pause and resume do nothing): what the method reads
    # where there is nothing to find, its bias and its noise.
    variants = {"group": [], "solo": ["--no-group"], "none": ["--no-nanny"]}
    clocks = ("wall", "cpu")
    ratios = {(name, clock): [] for name in variants for clock in clocks}
    pairs = {(name, clock): [] for name in variants for clock in clocks}
    with tempfile.TemporaryDirectory() as work:
        for round_index in range(args.rounds):
            for name, extra in variants.items():
                blocks = run_blocks(example, args.steps, args.trace_interval, args.paired, extra, work)
                for first in range(0, max(blocks) + 1, 2):
                    if first + 1 not in blocks or first not in blocks:
                        continue
                    pair = (blocks[first], blocks[first + 1])
                    for column, clock in enumerate(clocks, start=1):
                        on = [block[column] for block in pair if block[0]]
                        off = [block[column] for block in pair if not block[0]]
                        if len(on) == 1 and len(off) == 1:
                            ratios[name, clock].append(on[0] / off[0])
                            pairs[name, clock].append((on[0], off[0]))
                print("round %d, %s: %d pairs so far" % (round_index + 1, name, len(ratios[name, "wall"])), flush=True)
    traced = args.paired // args.trace_interval if args.trace_interval > 0 else 0
    print("\n2 ranks, blocks of %d steps (%d traced per on block at trace interval %d), %d rounds of %d steps"
          % (args.paired, traced, args.trace_interval, args.rounds, args.steps))
    print("  the step overhead is sum(on blocks) / sum(off blocks) - 1, with a 90 % bootstrap interval over "
          "the pairs; the median of the pairs' ratios and their quartiles show the spread. wall: the slower "
          "rank's time; cpu: the CPU time of both ranks' processes")
    for clock in clocks:
        for name in variants:
            values = ratios[name, clock]
            low, high = quartiles(values)
            ratio = sum(on for on, _ in pairs[name, clock]) / sum(off for _, off in pairs[name, clock])
            lowest, highest = bootstrap_interval(pairs[name, clock])
            print("  %-4s %-6s on vs paused: %+.2f %% [%+.2f %%, %+.2f %%] over %d pairs; median pair %+.2f %% "
                  "(quartiles %+.2f %%, %+.2f %%)"
                  % (clock, name, 100 * (ratio - 1), 100 * (lowest - 1), 100 * (highest - 1), len(values),
                     100 * (statistics.median(values) - 1), 100 * (low - 1), 100 * (high - 1)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--trace-interval", type=int, default=100)
    parser.add_argument("--paired", type=int, default=0, metavar="B",
                        help="on and paused in alternate blocks of B steps inside each run")
    args = parser.parse_args()
    example = os.path.abspath(os.path.join(args.build, "bin", "train_ddp"))
    if not os.path.exists(example):
        sys.exit(example + " is not built (it needs libgloo-dev)")
    if args.paired > 0:
        if args.steps < 3 * args.paired:
            sys.exit("--steps must hold at least three blocks of --paired steps")
        paired(args, example)
        return
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
