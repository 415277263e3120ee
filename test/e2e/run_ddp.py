#!/usr/bin/env python3
"""Data-parallel training with the nanny on every rank (examples/train_ddp.cpp, c10d Gloo on the
loopback address): the ranks trace the same steps, the rank where an Inf started is found, and a
rank that dies leaves readable databases behind.

Usage: run_ddp.py --example TRAIN_DDP --mpnanny MPNANNY --work DIR GROUP
GROUP: origin | rank_killed | tcp_store | paused_blocks

Every process is started here and waited for with a deadline; whatever is still running at the
end is killed, and the test fails if it had to.
"""
import argparse
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time

from e2e_support import exit_code, expect, fresh

WORLD = 4
DEADLINE_S = 150


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MPNANNY_") and k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    return env


def run_ranks(args, work, extra, env_for_rank=None, store=True):
    """Starts WORLD rank processes and waits for them all (bounded); returns their exit codes."""
    store_file = os.path.join(work, "store")
    processes = []
    for rank in range(WORLD):
        command = [args.example, "--world-size", str(WORLD), "--nanny-dir", os.path.join(work, "nanny")] + extra
        if store:
            command += ["--store", store_file]
        env = clean_env()
        if env_for_rank:
            env.update(env_for_rank(rank))
        else:
            command += ["--rank", str(rank)]
        log = open(os.path.join(work, "rank%d.log" % rank), "w")
        processes.append(subprocess.Popen(command, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT))
    deadline = time.monotonic() + DEADLINE_S
    codes = []
    for rank, process in enumerate(processes):
        try:
            codes.append(process.wait(timeout=max(1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            expect(False, "rank %d still ran after %d s" % (rank, DEADLINE_S))
            codes.append(None)
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait()
    expect(all(p.poll() is not None for p in processes), "every rank process has ended")
    for rank in range(WORLD):
        with open(os.path.join(work, "rank%d.log" % rank)) as log:
            sys.stderr.write("--- rank %d\n%s" % (rank, log.read()))
    return codes


def database(work, rank):
    return os.path.join(work, "nanny", "metrics-rank%d.db" % rank)


def rows(path, sql, parameters=()):
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        return db.execute(sql, parameters).fetchall()
    finally:
        db.close()


def check_integrity(work, ranks):
    for rank in ranks:
        path = database(work, rank)
        expect(os.path.exists(path), "rank %d wrote %s" % (rank, path))
        if os.path.exists(path):
            expect(rows(path, "PRAGMA integrity_check") == [("ok",)], "rank %d's database passes integrity_check" % rank)


def summary_json(args, work):
    result = subprocess.run([args.mpnanny, "summary", "--db", os.path.join(work, "nanny"), "--format", "json"],
                            capture_output=True, text=True, timeout=60)
    expect(result.returncode == 0, "mpnanny summary succeeds: " + result.stderr)
    text = subprocess.run([args.mpnanny, "summary", "--db", os.path.join(work, "nanny"), "--color", "never"],
                          capture_output=True, text=True, timeout=60)
    sys.stderr.write(text.stdout)
    # One object per rank; in a process group each carries the group's origin and stopped ranks.
    parsed = json.loads(result.stdout) if result.returncode == 0 else []
    return (parsed[0] if isinstance(parsed, list) and parsed else {}), text.stdout


POISON_RANK, POISON_STEP, INTERVAL, STEPS = 2, 10, 5, 30


def origin(args):
    """Rank 2's batch overflows at step 10: every rank traces densely from step 11 on, every file
    says rank 2 was bad before the all-reduce, and the summary names rank 2 and the parameter."""
    work = fresh(os.path.join(args.work, "origin"))
    codes = run_ranks(args, work, ["--steps", str(STEPS), "--trace-interval", str(INTERVAL),
                                   "--poison-rank", str(POISON_RANK), "--poison-step", str(POISON_STEP)])
    expect(codes == [0] * WORLD, "every rank finished: exit codes %s" % codes)
    check_integrity(work, range(WORLD))
    expected_traced = sorted(set(range(0, STEPS, INTERVAL)) | set(range(POISON_STEP + 1, STEPS)))
    for rank in range(WORLD):
        path = database(work, rank)
        if not os.path.exists(path):
            continue
        traced = [s for (s,) in rows(path, "SELECT step FROM steps WHERE traced = 1 ORDER BY step")]
        expect(traced == expected_traced, "rank %d traced steps %s, expected %s" % (rank, traced, expected_traced))
        dense = [s for (s,) in rows(path, "SELECT step FROM steps WHERE dense = 1 ORDER BY step")]
        expect(dense == list(range(POISON_STEP + 1, STEPS)), "rank %d traces densely from step %d: %s" % (rank, POISON_STEP + 1, dense))
        agreement = rows(path, "SELECT rank, bad_before, bad_parameter FROM rank_agreement WHERE step = ? ORDER BY rank",
                         (POISON_STEP,))
        expect([r for (r, _, _) in agreement] == list(range(WORLD)), "rank %d's file holds every rank's report of step %d: %s"
               % (rank, POISON_STEP, agreement))
        for (reporter, bad, parameter) in agreement:
            if reporter == POISON_RANK:
                expect(bad in ("inf", "nan", "overflow") and parameter, "rank %d's file: rank %d was bad before the reduce (%s, %s)"
                       % (rank, reporter, bad, parameter))
            else:
                expect(bad is None, "rank %d's file: rank %d was clean before the reduce, not %s" % (rank, reporter, bad))
        earlier = rows(path, "SELECT COUNT(*) FROM rank_agreement WHERE step < ?", (POISON_STEP,))[0][0]
        expect(earlier == 0, "rank %d's file: nothing notable before step %d" % (rank, POISON_STEP))
        reduced = rows(path, "SELECT COUNT(*) FROM tensor_stats WHERE step = ? AND phase = 'reduced_gradient' "
                       "AND inf_count + nan_count > 0", (POISON_STEP,))[0][0]
        expect(reduced > 0, "rank %d received the bad value in its reduced gradients at step %d" % (rank, POISON_STEP))
    bad_op = rows(database(work, POISON_RANK), "SELECT op FROM tensor_stats WHERE step = ? AND phase = 'forward' "
                  "AND inf_count + nan_count > 0 ORDER BY seq LIMIT 1", (POISON_STEP,))
    expect(bool(bad_op), "rank %d recorded the forward op that first went bad" % POISON_RANK)
    summary, text = summary_json(args, work)
    found = summary.get("origin") or {}
    origin_ranks = [r.get("rank") for r in found.get("ranks", [])]
    expect(found.get("step") == POISON_STEP and origin_ranks == [POISON_RANK],
           "the summary's origin is rank %d at step %d: %s" % (POISON_RANK, POISON_STEP, json.dumps(found)))
    parameter = rows(database(work, 0), "SELECT bad_parameter FROM rank_agreement WHERE step = ? AND rank = ?",
                     (POISON_STEP, POISON_RANK))
    expect(parameter and parameter[0][0] and any("origin" in line and "rank %d" % POISON_RANK in line and parameter[0][0] in line
                                                 for line in text.splitlines()),
           "the summary's origin line names rank %d and parameter %s" % (POISON_RANK, parameter))


def rank_killed(args):
    """Rank 1 is killed at step 12: the others fail as c10d makes them (a closed connection), in
    bounded time; every database stays readable, and the summary says rank 1 stopped."""
    work = fresh(os.path.join(args.work, "rank_killed"))
    codes = run_ranks(args, work, ["--steps", str(STEPS), "--trace-interval", str(INTERVAL),
                                   "--exit-rank", "1", "--exit-step", "12"])
    expect(codes[1] == -signal.SIGKILL, "rank 1 was killed: %s" % codes)
    expect(all(c is not None for c in codes), "no rank hung: %s" % codes)
    check_integrity(work, range(WORLD))
    ended = {rank: rows(database(work, rank), "SELECT ended_at IS NOT NULL FROM runs")[0][0] for rank in range(WORLD)
             if os.path.exists(database(work, rank))}
    expect(ended.get(1) == 0 and all(ended.get(r) == 1 for r in (0, 2, 3)),
           "the killed rank's run did not close, the others' did: %s" % ended)
    summary, text = summary_json(args, work)
    stopped = [s.get("rank") for s in summary.get("stopped", [])]
    expect(stopped == [1], "the summary says rank 1 stopped: %s" % json.dumps(summary.get("stopped")))
    expect("rank 1 stopped" in text, "the summary's text says rank 1 stopped")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tcp_store(args):
    """Multi-node as a launcher starts it (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), on the
    loopback address: the same training, one database per rank."""
    work = fresh(os.path.join(args.work, "tcp_store"))
    port = free_port()
    codes = run_ranks(args, work, ["--steps", "12", "--trace-interval", "4"], store=False,
                      env_for_rank=lambda rank: {"RANK": str(rank), "WORLD_SIZE": str(WORLD),
                                                 "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    expect(codes == [0] * WORLD, "every rank finished over a TCPStore: %s" % codes)
    check_integrity(work, range(WORLD))
    for rank in range(WORLD):
        if os.path.exists(database(work, rank)):
            run = rows(database(work, rank), "SELECT rank, world_size, json_extract(options_json, '$.process_group.size') FROM runs")
            expect(run == [(rank, WORLD, WORLD)], "rank %d's run row names its rank and the group: %s" % (rank, run))


def paused_blocks(args):
    """The benchmark's paired blocks (--pause-blocks, bench/ddp-bench.py --paired): every rank pauses
    and resumes its nanny at the same steps, the paused blocks leave no rows, the traced steps of
    the others are observed, and the collectives of a process group do not stall on it."""
    work = fresh(os.path.join(args.work, "paused_blocks"))
    block, interval = 10, 5
    codes = run_ranks(args, work, ["--steps", str(5 * block), "--trace-interval", str(interval),
                                   "--pause-blocks", str(block)])
    expect(codes == [0] * WORLD, "every rank finished: exit codes %s" % codes)
    check_integrity(work, range(WORLD))
    # Block 0 warms up with the nanny on; then on (10-19), off (20-29), off (30-39), on (40-49).
    on_steps = list(range(0, 2 * block)) + list(range(4 * block, 5 * block))
    for rank in range(WORLD):
        with open(os.path.join(work, "rank%d.log" % rank)) as log:
            states = [line.split(" nanny ")[1].split()[0] for line in log if ": block " in line]
        expect(states == ["on", "off", "off", "on"], "rank %d timed four blocks, on off off on: %s" % (rank, states))
        if not os.path.exists(database(work, rank)):
            continue
        steps = [step for (step,) in rows(database(work, rank), "SELECT step FROM steps ORDER BY step")]
        expect(steps == on_steps, "rank %d's steps are those of the blocks with the nanny on: %s" % (rank, steps))
        traced = [step for (step,) in rows(database(work, rank),
                                           "SELECT DISTINCT step FROM tensor_stats WHERE phase = 'gradient' ORDER BY step")]
        expect(traced == [s for s in on_steps if s % interval == 0],
               "rank %d observed the gradients of the traced steps of the blocks with the nanny on: %s" % (rank, traced))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--example", required=True)
    parser.add_argument("--mpnanny", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("group", choices=["origin", "rank_killed", "tcp_store", "paused_blocks"])
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    {"origin": origin, "rank_killed": rank_killed, "tcp_store": tcp_store,
     "paused_blocks": paused_blocks}[args.group](args)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
