#!/usr/bin/env python3
"""The pre-commit hook (.pre-commit-hooks.yaml) on a throwaway git repository: a commit
that stages a hazard is refused and names it, the fixed file goes in, and a hazard already
committed does not block a commit that does not touch its line (the hook scans staged
lines only). The hook is declared as a `repo: local` hook built from the repository's
.pre-commit-hooks.yaml (its entry made absolute, language system): nothing is fetched.

Exits 77 (CTest: skipped), saying why, when pre-commit or git is not installed.

Usage: run_pre_commit.py --source-dir SRC --mpnanny-check BIN --torch-mock DIR --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import yaml

FAILURES = []


def expect(condition, message):
    print(("ok: " if condition else "FAIL: ") + message, flush=True)
    if not condition:
        FAILURES.append(message)


def run(command, cwd, env):
    print("$ " + " ".join(command), flush=True)
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--mpnanny-check", required=True)
    parser.add_argument("--torch-mock", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    for tool in ("pre-commit", "git"):
        if not shutil.which(tool):
            print("SKIP: %s is not installed (apt-get install %s; tools/bootstrap.sh installs it)"
                  % (tool, tool))
            return 77

    shutil.rmtree(args.work, ignore_errors=True)
    repo = os.path.join(args.work, "repo")
    os.makedirs(os.path.join(repo, "build"))
    env = dict(os.environ, PRE_COMMIT_HOME=os.path.join(args.work, "pre-commit-home"),
               GIT_AUTHOR_NAME="mpnanny", GIT_AUTHOR_EMAIL="mpnanny@example.com",
               GIT_COMMITTER_NAME="mpnanny", GIT_COMMITTER_EMAIL="mpnanny@example.com",
               GIT_CONFIG_NOSYSTEM="1", HOME=args.work)
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)

    # The repository's own manifest, as a local hook.
    with open(os.path.join(args.source_dir, ".pre-commit-hooks.yaml")) as f:
        manifest = yaml.safe_load(f)
    hook = dict(manifest[0])
    expect(hook["id"] == "mpnanny-check", "the manifest declares the mpnanny-check hook")
    hook["entry"] = os.path.join(args.source_dir, hook["entry"])
    hook["language"] = "system"
    hook["args"] = ["--mpnanny-check", args.mpnanny_check]
    with open(os.path.join(repo, ".pre-commit-config.yaml"), "w") as f:
        yaml.safe_dump({"repos": [{"repo": "local", "hooks": [hook]}]}, f)

    # The compilation database the hook must find (./build/compile_commands.json).
    model = os.path.join(repo, "model.cpp")
    with open(os.path.join(repo, "build", "compile_commands.json"), "w") as f:
        json.dump([{"directory": os.path.join(repo, "build"), "file": model,
                    "command": "clang++ -std=c++17 -isystem %s -c %s -o model.o" % (args.torch_mock, model)}], f)

    inputs = os.path.join(args.source_dir, "test", "checks", "Inputs", "driver", "diff")
    def stage(name):
        shutil.copy(os.path.join(inputs, name), model)
        return run(["git", "add", "model.cpp", ".pre-commit-config.yaml"], repo, env)

    run(["git", "init", "-q"], repo, env)
    installed = run(["pre-commit", "install"], repo, env)
    expect(installed.returncode == 0, "pre-commit install: " + (installed.stdout + installed.stderr).strip())

    # v1.cpp has a hazard at line 6, committed without the hook: an old finding.
    stage("v1.cpp")
    legacy = run(["git", "commit", "--no-verify", "-m", "legacy"], repo, env)
    expect(legacy.returncode == 0, "the old hazard is committed (--no-verify)")

    # v2.cpp adds a hazard at line 11: refused, and the output names that line, not line 6.
    stage("v2.cpp")
    refused = run(["git", "commit", "-m", "hazard"], repo, env)
    output = refused.stdout + refused.stderr
    sys.stdout.write(output[-3000:])
    expect(refused.returncode != 0, "a commit that stages a hazard is refused")
    expect("model.cpp:11:30: warning: Tensor::masked_fill fill value -1e10" in output,
           "the refusal names the staged hazard at model.cpp:11:30")
    expect("model.cpp:6:" not in output, "the old hazard at line 6 (not staged) is not reported")
    expect(run(["git", "rev-list", "--count", "HEAD"], repo, env).stdout.strip() == "1",
           "the refused commit is not in the history")

    # The fixed line 11 goes in, through the hook, although line 6 still holds the old hazard.
    stage("v2-fixed.cpp")
    fixed = run(["git", "commit", "-m", "fixed"], repo, env)
    output = fixed.stdout + fixed.stderr
    sys.stdout.write(output[-3000:])
    expect(fixed.returncode == 0, "the fixed file is committed")
    expect("mpnanny" in output and "Passed" in output, "the hook ran on the fixed commit and passed")
    print("%d failure(s)" % len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
