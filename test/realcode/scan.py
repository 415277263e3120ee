"""The scan half of score.py: the compile database, the declared precision, the facts pass,
running mpnanny-check on a repository and reading its parse status (score.py matches and
prints). See score.py for the corpus and README.md for the labels."""
import glob
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))

SOURCE_EXTS = (".cpp", ".cc", ".cxx", ".c++", ".C")
HEADER_EXTS = (".h", ".hpp", ".hh", ".hxx", ".h++", ".inl", ".ipp", ".cuh")
CUDA_EXTS = (".cu", ".cuh")
# The folders mpnanny-check itself leaves out of a whole-project scan (tools/mpnanny-check
# README): never sampled as the repository's own code.
THIRD_PARTY = {"_deps", "third_party", "third-party", "thirdparty", "3rdparty", "external",
               "extern", "vendor", "deps", "CMakeFiles"}
BUILD_FOLDER = ".mpnanny-build"
PROJECT_FILE = ".mpnanny.yaml"
PROJECT_FILE_MARK = "# written by test/realcode/score.py"
USES_TORCH = re.compile(r"\b(?:torch|at)::")
COMPILE_ERRORS = re.compile(
    r"^mpnanny-check: error: (?P<file>.+?): (?P<n>\d+) compile error\(s\) \(first: (?P<first>.*?)\); "
    r"(?:the scan of this file is incomplete|\d+ of \d+ function|its \d+ function)")
STOPPED = re.compile(r"^mpnanny-check: error: (?P<file>.+?): scan stopped after (?P<s>\d+) s")
NAMES_FILE = re.compile(r"^mpnanny-check: \w+: (?P<file>/[^:]+): ")
NOT_CHECKED = re.compile(r"\bnot checked\b")


# ---------------------------------------------------------------------------------------
# How the scan is built
# ---------------------------------------------------------------------------------------

def find_torch_include_dirs():
    """LibTorch's include folders as its CMake package gives them (<prefix>/include and
    <prefix>/include/torch/csrc/api/include), found the way mpnanny-check finds them
    (tools/mpnanny-check/TorchHeaders.cpp): TORCH_DIR, CMAKE_PREFIX_PATH, /usr, /usr/local,
    /opt/libtorch, a pip-installed torch."""
    prefixes = []
    if os.environ.get("TORCH_DIR"):
        p = os.environ["TORCH_DIR"]
        for _ in range(5):
            prefixes.append(p)
            p = os.path.dirname(p.rstrip("/")) or "/"
    for entry in filter(None, os.environ.get("CMAKE_PREFIX_PATH", "").split(":")):
        p = entry
        for _ in range(4):
            prefixes.append(p)
            p = os.path.dirname(p.rstrip("/")) or "/"
    prefixes += ["/usr", "/usr/local", "/opt/libtorch", "/usr/local/libtorch"]
    envs = [os.environ[v] for v in ("VIRTUAL_ENV", "CONDA_PREFIX") if os.environ.get(v)]
    for env in envs + ["/usr/local", "/usr"]:
        for py in sorted(glob.glob(os.path.join(env, "lib", "python3*"))):
            for packages in ("site-packages", "dist-packages"):
                prefixes.append(os.path.join(py, packages, "torch"))
    for p in prefixes:
        inc = os.path.join(p, "include")
        if os.path.exists(os.path.join(inc, "torch", "csrc", "api", "include", "torch", "torch.h")):
            return [os.path.join(inc, "torch", "csrc", "api", "include"), inc]
    return []


def find_cuda_include_dir():
    """The CUDA toolkit's include folder (CUDA_HOME, CUDA_PATH, /usr/local/cuda, the newest
    /usr/local/cuda-X.Y), or None. A CUDA build of LibTorch hands it to every target that
    links torch (its CMake package's include directories), so a user's compile_commands.json
    names it; these projects include <ATen/cuda/...>, <c10/cuda/...> and <cuda_runtime.h>."""
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")]
    versions = glob.glob("/usr/local/cuda-*")
    versions.sort(key=lambda p: [int(x) if x.isdigit() else -1 for x in re.split(r"[-.]", os.path.basename(p))[1:]],
                  reverse=True)
    roots += ["/usr/local/cuda"] + versions
    for r in filter(None, roots):
        inc = os.path.join(r, "include")
        if os.path.exists(os.path.join(inc, "cuda_runtime.h")):
            return inc
    return None


def torch_flags(dirs):
    flags = []
    for d in dirs:
        # Already a system folder: -isystem would move it before the C++ library's own
        # headers and break <cstdlib>'s #include_next (as mpnanny-check skips it too).
        if os.path.normpath(d) in ("/usr/include", "/usr/local/include"):
            continue
        flags += ["-isystem", d]
    return flags


def compile_args(doc, root, path, torch_dirs, extra_flags):
    """The compiler command of one scanned file, as its project's build would give it."""
    args = ["c++", "-std=" + str(doc.get("std") or "c++17")]
    for inc in doc.get("include") or []:
        args.append("-I" + os.path.normpath(os.path.join(root, inc)))
    for d in doc.get("defines") or []:
        d = str(d)
        args.append(d if d.startswith("-D") else "-D" + d)
    args += torch_flags(torch_dirs)
    args += list(extra_flags)
    low = path.lower()
    # Headers are scanned as C++ translation units of their own. CUDA files (.cu, .cuh) are
    # parsed as C++ too: clang's CUDA mode would need a CUDA installation and a GPU
    # architecture, and the nvcc commands of a CUDA build are not something clang tooling
    # reads; their __global__ kernels and <<<>>> launches then show up as compile errors.
    # TODO(issue 47): once mpnanny-check reads .cu/.cuh through Clang's CUDA mode (host and
    # device side, -nocudainc with its own header set where no readable toolkit is found),
    # give CUDA files that mode here instead of -x c++: the kernel labels (kind: kernel) are
    # mostly in .cu/.cuh files and their findings depend on it. Not invented here: the
    # flags are the parser's to define.
    if low.endswith(HEADER_EXTS) or low.endswith(CUDA_EXTS):
        args += ["-x", "c++"]
    args += ["-c", os.path.join(root, path)]
    return args


def write_compile_db(doc, root, files, torch_dirs, extra_flags):
    """src/OWNER+NAME/.mpnanny-build/compile_commands.json; returns the folder."""
    build = os.path.join(root, BUILD_FOLDER)
    os.makedirs(build, exist_ok=True)
    entries = [{"directory": root, "file": os.path.join(root, f),
                "arguments": compile_args(doc, root, f, torch_dirs, extra_flags)} for f in files]
    with open(os.path.join(build, "compile_commands.json"), "w") as out:
        json.dump(entries, out, indent=1)
        out.write("\n")
    return build


def declare_precision(doc, root, help_text):
    """THE ONE PLACE where a repository's precision is declared, the way a user declares it.

    `precision_how: inferred`: nothing (the checks must find it in the code).
    `precision_how: declared`: a project file `.mpnanny.yaml` (key `Precision`) at the
    repository's root, found from the compilation database's folder upward, once
    mpnanny-check knows that file (its --help names it); until then `--precision=P`.
    Returns the extra arguments of the scan."""
    project_file = os.path.join(root, PROJECT_FILE)
    if doc["precision_how"] == "declared" and PROJECT_FILE in help_text:
        with open(project_file, "w") as out:
            out.write("%s from %s's label header\nPrecision: %s\n"
                      % (PROJECT_FILE_MARK, doc["repo"], doc["precision"]))
        return []
    # Not (or no longer) declared through the file: remove one this script wrote before.
    if os.path.exists(project_file):
        with open(project_file, errors="replace") as f:
            if f.readline().startswith(PROJECT_FILE_MARK):
                os.remove(project_file)
    if doc["precision_how"] == "declared":
        return ["--precision=" + doc["precision"]]
    return []


def collect_facts(tool, build, root, help_text, timeout):
    """HOOK: THE FACTS PASS. When mpnanny-check offers `--collect-facts` (its --help names it),
    the whole-project facts are collected before the scan, as a user would run it:
        mpnanny-check --collect-facts -p DIR
    Returns None when the checker has no such pass, else {rc, wall_s, stderr}."""
    if "--collect-facts" not in help_text:
        return None
    start = time.time()
    try:
        proc = subprocess.run([tool, "--collect-facts", "-p", build], cwd=root,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              errors="replace", timeout=timeout or None)
        rc, err = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired:
        rc, err = None, "facts pass stopped after %s s" % timeout
    return {"rc": rc, "wall_s": round(time.time() - start, 1), "stderr": err[-4000:]}


def is_third_party(rel):
    return any(part in THIRD_PARTY or part.startswith(".") for part in rel.split("/")[:-1])


def unlabelled_sample(root, exclude, n):
    """Up to n of the repository's own C++ sources that use LibTorch and carry no label,
    ordered by the sha1 of their path: deterministic, spread over the tree, and stable when
    files are added elsewhere."""
    if n <= 0:
        return []
    candidates = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in THIRD_PARTY)
        for name in filenames:
            if not name.endswith(SOURCE_EXTS):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            if rel in exclude or is_third_party(rel):
                continue
            try:
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                    if USES_TORCH.search(f.read()):
                        candidates.append(rel)
            except OSError:
                continue
    candidates.sort(key=lambda r: hashlib.sha1(r.encode("utf-8")).hexdigest())
    return sorted(candidates[:n])


def count_lines(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return len(f.read().splitlines())


# ---------------------------------------------------------------------------------------
# Running the scan
# ---------------------------------------------------------------------------------------

def checker_help(tool):
    try:
        proc = subprocess.run([tool, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", timeout=60)
        return proc.stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SystemExit("score.py: cannot run %s --help: %s" % (tool, e))


def scan_command(args, build, precision_args, files_abs):
    cmd = [args.mpnanny_check, "-p", build, "--format=json", "-j", str(args.jobs),
           "--timeout=%d" % args.timeout]
    if args.no_cache:
        cmd.append("--no-cache")
    if args.cache_dir:
        cmd.append("--cache-dir=" + args.cache_dir)
    if args.rules:
        cmd.append("--rules=" + args.rules)
    cmd += precision_args + list(args.checker_arg) + files_abs
    return cmd


def run_checker(cmd, root, nfiles, args):
    """(rc, stdout, stderr); rc is -SIGNAL for a signal, None when the safety timeout hit."""
    # Safety net only: the checker stops a file itself after --timeout seconds.
    limit = None
    if args.timeout:
        limit = (args.timeout + 30) * max(1, -(-nfiles // max(1, args.jobs))) + 600
    try:
        proc = subprocess.run(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, errors="replace", timeout=limit)
        return proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode("utf-8", "replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode("utf-8", "replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return None, out, err + "\nscore.py: the whole scan ran past %d s and was stopped" % limit


def describe_rc(rc):
    if rc is None:
        return "stopped by score.py's safety timeout"
    if rc < 0:
        try:
            return "killed by %s" % signal.Signals(-rc).name
        except ValueError:
            return "killed by signal %d" % -rc
    return "exit %d" % rc


def is_crash(rc):
    return rc is None or rc < 0 or rc not in (0, 1, 2, 3)


def parse_stderr(stderr, root):
    """{relpath: {"errors": n, "first": text} | {"timeout": s}, "not_checked": [...]}, and the
    lines that name no scanned file. "not checked" is looked for in every line that names a
    file, whatever else the line says (mpnanny-check is learning to report the functions it
    leaves out of a file that did not parse), and in the summary line."""
    per_file = defaultdict(dict)
    other = []
    real_root = os.path.realpath(root)

    def rel(path):
        return os.path.relpath(os.path.realpath(path), real_root).replace(os.sep, "/")

    for line in stderr.splitlines():
        where = None
        m = COMPILE_ERRORS.match(line)
        if m:
            where = rel(m.group("file"))
            per_file[where].update(errors=int(m.group("n")), first=m.group("first"))
        m = m or STOPPED.match(line)
        if m and where is None:
            where = rel(m.group("file"))
            per_file[where]["timeout"] = int(m.group("s"))
        if where is None:
            m = NAMES_FILE.match(line)
            if m:
                where = rel(m.group("file"))
        if NOT_CHECKED.search(line):
            m = NAMES_FILE.match(line)
            text = line[m.end():] if m else line  # without "mpnanny-check: LEVEL: FILE: "
            clauses = [c.strip() for c in re.split(r"; |\. (?=[A-Z0-9])", text) if NOT_CHECKED.search(c)]
            if where is not None:
                per_file[where].setdefault("not_checked", []).extend(clauses)
            else:
                other.append(line)
        elif where is None and line.startswith("mpnanny-check: error:"):
            other.append(line)
    return per_file, other


def scan_repo(args, doc, root, files, precision_args):
    """Runs the scan of one repository. Returns (findings, per-file status, notes, rc, wall)."""
    files_abs = [os.path.join(root, f) for f in files]
    build = os.path.join(root, BUILD_FOLDER)
    start = time.time()
    cmd = scan_command(args, build, precision_args, files_abs)
    rc, out, err = run_checker(cmd, root, len(files), args)
    notes = []
    status = {}
    findings = []
    if rc == 2:
        notes.append("mpnanny-check could not run (exit 2): " + err.strip()[-1500:])
        for f in files:
            status[f] = {"status": "error", "detail": "mpnanny-check exit 2"}
        return findings, status, notes, rc, time.time() - start, " ".join(cmd)
    parsed = None
    if not is_crash(rc):
        try:
            parsed = json.loads(out)
        except ValueError as e:
            notes.append("bad JSON from mpnanny-check (%s): treated as a crash" % e)
    if parsed is None:
        # The process died (or wrote no JSON): find the file that kills it, one file a
        # process, and keep the others' findings.
        notes.append("the scan of %d files ended with %s; rescanning file by file"
                     % (len(files), describe_rc(rc)))
        for f, fa in zip(files, files_abs):
            one_rc, one_out, one_err = run_checker(scan_command(args, build, precision_args, [fa]),
                                                   root, 1, args)
            one = None
            if not is_crash(one_rc) and one_rc != 2:
                try:
                    one = json.loads(one_out)
                except ValueError:
                    one = None
            if one is None:
                tail = [l for l in one_err.strip().splitlines() if l.strip()][-1:] or [""]
                status[f] = {"status": "crash", "detail": "%s; %s" % (describe_rc(one_rc), tail[0][:300])}
                continue
            findings += one
            pf, other = parse_stderr(one_err, root)
            status[f] = file_status(pf.get(f, {}))
            notes += other
    else:
        findings = parsed
        pf, other = parse_stderr(err, root)
        for f in files:
            status[f] = file_status(pf.get(f, {}))
        notes += other
        for f, st in pf.items():
            if f not in status and st.get("not_checked"):
                notes.append("%s: %s" % (f, "; ".join(st["not_checked"])))
    return findings, status, notes, rc, time.time() - start, " ".join(cmd)


def file_status(info):
    st = {"status": "ok", "detail": ""}
    if "timeout" in info:
        st = {"status": "timeout", "detail": "scan stopped after %d s" % info["timeout"]}
    elif "errors" in info:
        st = {"status": "errors", "errors": info["errors"], "detail": info["first"]}
    if info.get("not_checked"):
        st["not_checked"] = info["not_checked"]
        # the count is the first number of the clause that says so ("3 of 20 functions not
        # checked", "functions not checked: 3")
        counts = [int(m.group(0)) for m in (re.search(r"\d+", msg) for msg in info["not_checked"]) if m]
        if counts:
            st["not_checked_count"] = sum(counts)
    return st


def status_text(st):
    s = st["status"]
    if s == "ok":
        text = "ok"
    elif s == "errors":
        text = "%d compile error(s) (first: %s)" % (st["errors"], st["detail"])
    else:
        text = "%s: %s" % (s, st["detail"])
    if st.get("not_checked"):
        text += "; " + "; ".join(st["not_checked"])
    return text
