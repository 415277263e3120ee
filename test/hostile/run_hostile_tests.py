#!/usr/bin/env python3
"""mpnanny-check on hostile code: no crash, no hang, findings at the user's spelling, the same output twice.

  run_hostile_tests.py --mpnanny-check BIN --mock DIR --work DIR code
      The committed inputs (Inputs/: parse errors, a missing header, a missing library's types,
      macros, templates, Unicode)
      and the ones generated here at run time (a 10k-statement function, a sum of 10k terms,
      calls nested 200 deep, 30 locals each made of the last one twice, a local in its own initializer, 500 generated functions
      behind #line directives, CRLF copies).
      Lines marked HOSTILE-FINDING must carry the findings and no other line may; lines marked
      MACRO-DEFINITION never do.
  run_hostile_tests.py --mpnanny-check BIN --mock DIR --work DIR --source-dir SRC sweep
      Every .cpp under test/ and examples/ (mock LibTorch headers, the runtime's include folder):
      each file is scanned or refused with exit code 0, 1 or 3, never a crash or a hang.

A crash is an exit by signal, an exit code other than 0, 1 or 3, or a sanitizer or LLVM crash
report on stderr. A hang is a scan that outlives --limit seconds.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAILURES = []
CRASH_MARKERS = ("Stack dump", "PLEASE submit a bug report", "Sanitizer", "runtime error:", "Segmentation fault")


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL: " + message, flush=True)


def scan(args, path, fmt="json", extra=()):
    """Runs mpnanny-check on one file; returns (exit code, stdout, stderr, seconds)."""
    command = [args.mpnanny_check, "--format=" + fmt, *args.tool_limit, *extra, path, "--", "-std=c++17",
               "-isystem", args.mock]
    if args.runtime_include:
        command += ["-I", args.runtime_include]
    # The header cache goes to the work folder, not the user's home.
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(args.work, "cache"))
    start = time.monotonic()
    try:
        proc = subprocess.run(command, capture_output=True, timeout=args.limit, env=env)
    except subprocess.TimeoutExpired:
        check(False, "%s: no answer within %d s (a hang)" % (path, args.limit))
        return None, "", "", args.limit
    seconds = time.monotonic() - start
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    crashed = proc.returncode not in (0, 1, 3) or any(marker in err for marker in CRASH_MARKERS)
    check(not crashed, "%s: crashed (exit %d): %s" % (path, proc.returncode, err[-2000:]))
    return proc.returncode, out, err, seconds


def findings_of(out):
    data = json.loads(out) if out.strip() else []
    return data["findings"] if isinstance(data, dict) else data


def marked_lines(path, marker):
    with open(path, encoding="utf-8", newline="") as f:
        return {n for n, line in enumerate(f.read().split("\n"), 1) if marker in line}


def scan_twice(args, path, expect_code):
    """Scans twice: the same exit code and byte for byte the same output. Returns the findings.
    expect_code None: any exit that is not a crash."""
    first = scan(args, path)
    second = scan(args, path)
    if first[0] is None or second[0] is None:
        return []
    name = os.path.basename(path)
    check(expect_code is None or first[0] == expect_code, "%s: exit %s, expected %s; stderr: %s" % (name, first[0], expect_code, first[2][-1500:]))
    check(first[0] == second[0] and first[1] == second[1], "%s: two scans differ" % name)
    print("%-34s exit %d, %3d findings, %.1f s" % (name, first[0], len(findings_of(first[1])), first[3]), flush=True)
    return findings_of(first[1])


def check_marked(path, findings):
    """Findings exactly on the HOSTILE-FINDING lines, never on a MACRO-DEFINITION line, none twice."""
    name = os.path.basename(path)
    expected = marked_lines(path, "HOSTILE-FINDING")
    got = {f["line"] for f in findings}
    check(got == expected, "%s: findings on lines %s, expected on %s" % (name, sorted(got), sorted(expected)))
    inside = got & marked_lines(path, "MACRO-DEFINITION")
    check(not inside, "%s: findings inside macro definitions, lines %s" % (name, sorted(inside)))
    keys = [(f["line"], f["column"], f["check"]) for f in findings]
    check(len(keys) == len(set(keys)), "%s: a finding reported twice: %s" % (name, keys))
    for f in findings:
        check(os.path.basename(f["file"]) == name, "%s: a finding in %s" % (name, f["file"]))


def write(path, text, newline="\n"):
    with open(path, "w", encoding="utf-8", newline=newline) as f:
        f.write(text)
    return path


def committed(args):
    for name, code in [("parse-error.cpp", 3), ("missing-header.cpp", 3), ("unknown-types.cpp", 3),
                       ("macros.cpp", 1), ("templates.cpp", 1), ("unicode.cpp", 1)]:
        path = os.path.join(HERE, "Inputs", name)
        findings = scan_twice(args, path, code)
        check_marked(path, findings)
        if code == 3:
            # The text output names the first error at its place, as the compiler does.
            _, out, err, _ = scan(args, path, fmt="text")
            first_error = {"parse-error.cpp": r":10:1: error: unknown type name 'NoSuchType'",
                           "missing-header.cpp": r":3:10: error: 'no/such/header.h' file not found",
                           "unknown-types.cpp": r":12:37: error: no type named 'PluginFieldCollection' in "
                                                r"namespace 'nvinfer1'"}[name]
            check(re.search(re.escape(name + first_error), out + err),
                  "%s: no %s%s in the text output" % (name, name, first_error))
        if name == "unicode.cpp":
            # Byte columns: the column of torch::log on each marked line is its byte offset + 1.
            with open(path, "rb") as f:
                lines = f.read().split(b"\n")
            for f_ in findings:
                if f_["check"] == "mpnanny-log-softmax":
                    expected = lines[f_["line"] - 1].index(b"torch::log(") + 1
                    check(f_["column"] == expected, "unicode.cpp:%d: column %d, expected byte column %d"
                          % (f_["line"], f_["column"], expected))
        if code == 1:
            # The same file with CRLF line ends: the same findings at the same lines and columns.
            with open(path, encoding="utf-8") as f:
                text = f.read()
            crlf = write(os.path.join(args.work, "crlf-" + name), text, newline="\r\n")
            crlf_findings = scan_twice(args, crlf, 1)
            key = lambda f: (f["line"], f["column"], f["check"])
            check(sorted(map(key, crlf_findings)) == sorted(map(key, findings)),
                  "%s with CRLF line ends: findings differ from LF" % name)


HEADER = '#include <torch/torch.h>\n'


def generated(args):
    # A 10k-statement function: each local made from the last, the risky call at the end.
    n = 10000
    lines = [HEADER.rstrip("\n"), "torch::Tensor huge(torch::Tensor x) {", "  auto y0 = x.to(torch::kHalf);"]
    lines += ["  auto y%d = torch::relu(y%d);" % (i, i - 1) for i in range(1, n + 1)]
    lines += ["  return torch::log(torch::softmax(y%d, 1)); // HOSTILE-FINDING" % n, "}"]
    path = write(os.path.join(args.work, "huge-function.cpp"), "\n".join(lines) + "\n")
    check_marked(path, scan_twice(args, path, 1))

    # Deep nesting: a sum of 10k terms is a left-leaning tree 10k deep (clang itself parses it),
    # and calls nested 200 deep (below clang's bracket depth of 256).
    terms = " + ".join(["h"] * 10000)
    path = write(os.path.join(args.work, "deep-sum.cpp"), HEADER + "torch::Tensor f(torch::Tensor x) {\n"
                 "  auto h = x.to(torch::kHalf);\n"
                 "  return torch::log(torch::softmax(%s, 1)); // HOSTILE-FINDING\n}\n" % terms)
    findings = scan_twice(args, path, 1)
    # The log of an fp16 softmax: log-softmax reports it (softmax-dtype leaves a log to it).
    check(any(f["check"] == "mpnanny-log-softmax" for f in findings), "deep-sum.cpp: the log of the fp16 softmax is reported")
    check_marked(path, findings)
    path = write(os.path.join(args.work, "deep-calls.cpp"), HEADER + "torch::Tensor f(torch::Tensor x) {\n"
                 "  auto h = x.to(torch::kHalf);\n  return %sh%s;\n}\n" % ("torch::exp(" * 200, ")" * 200))
    scan_twice(args, path, None)

    # Each local used twice in the next: a walk that follows locals without remembering them
    # doubles at every line (2^30 here).
    lines = [HEADER.rstrip("\n"), "torch::Tensor doubling(torch::Tensor x) {",
             "  auto a0 = torch::sigmoid(x.to(torch::kHalf));"]
    lines += ["  auto a%d = a%d + a%d;" % (i, i - 1, i - 1) for i in range(1, 31)]
    lines += ["  return torch::log(a30);", "}"]
    path = write(os.path.join(args.work, "doubling.cpp"), "\n".join(lines) + "\n")
    scan_twice(args, path, None)

    # A local used in its own initializer compiles (with a warning): following locals to their
    # initializers must not go round in a circle.
    path = write(os.path.join(args.work, "self-initializer.cpp"), HEADER + "torch::Tensor f(torch::Tensor x) {\n"
                 "  torch::Tensor y = torch::log(torch::softmax(y.to(torch::kHalf) + y, 1));\n"
                 "  return y + x;\n}\n")
    scan_twice(args, path, None)

    # Generated code: 500 functions, as a code generator writes them, behind #line directives that
    # name a file that does not exist. Each function gives what one such function gives alone.
    def function(i):
        return ("torch::Tensor gen_%d(torch::Tensor x) {\n  auto h = x.to(torch::kHalf);\n"
                "  return torch::log(torch::softmax(h, %d));\n}\n" % (i, i % 3))
    one = write(os.path.join(args.work, "generated-one.cpp"), HEADER + function(0))
    per_function = len(findings_of(scan(args, one)[1]))
    check(per_function > 0, "generated-one.cpp: a generated function has findings")
    body = "".join('#line %d "model.proto"\n%s' % (10 * i + 1, function(i)) for i in range(500))
    path = write(os.path.join(args.work, "generated.cpp"), HEADER + body)
    findings = scan_twice(args, path, 1)
    check(len(findings) == 500 * per_function,
          "generated.cpp: %d findings, expected 500 x %d" % (len(findings), per_function))


def sweep(args):
    files = []
    # The real-code corpus that tools/realcode.sh fetches (git-ignored, 1800 files of other
    # projects) is not ours: a checkout that holds it would sweep it for an hour and time out.
    fetched = os.path.join(args.source_dir, "test", "realcode", "src")
    for top in ("test", "examples"):
        for folder, subfolders, names in os.walk(os.path.join(args.source_dir, top)):
            subfolders[:] = [d for d in subfolders if os.path.join(folder, d) != fetched]
            files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".cpp")]
    print("sweeping %d files with %s" % (len(files), args.mpnanny_check), flush=True)
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda f: (f, scan(args, f)), sorted(files)))
    codes = {}
    for path, (code, _, _, seconds) in results:
        codes[code] = codes.get(code, 0) + 1
        if seconds > 30:
            print("slow: %s %.1f s" % (os.path.relpath(path, args.source_dir), seconds))
    print("exit codes: %s; %.0f s" % (codes, time.monotonic() - start), flush=True)
    check(len(results) > 50, "the sweep found only %d files" % len(results))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mpnanny-check", required=True)
    parser.add_argument("--mock", required=True, help="the mock LibTorch headers (test/checks/Inputs/mock)")
    parser.add_argument("--runtime-include", help="runtime/include, for the sweep")
    parser.add_argument("--source-dir")
    parser.add_argument("--work", required=True)
    parser.add_argument("--limit", type=int, default=300, help="seconds one scan may take")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("group", choices=["code", "sweep"])
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    # mpnanny-check's own per-file limit, when it has one, stops a hang first and says so; the
    # subprocess limit above stays as the backstop.
    usage = subprocess.run([args.mpnanny_check, "--help"], capture_output=True, text=True).stdout
    args.tool_limit = ["--timeout=%d" % max(1, args.limit - 30)] if "--timeout" in usage else []
    if args.group == "code":
        committed(args)
        generated(args)
    else:
        sweep(args)
    if FAILURES:
        print("%d failure(s)" % len(FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
