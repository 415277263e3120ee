#!/usr/bin/env python3
"""CMake's clang-tidy hook with the installed plugin: the build must fail on a hazard and
pass once it is fixed, with CMAKE_CXX_CLANG_TIDY set by hand and with the installed
package's mpnanny_enable_clang_tidy(target).

Usage: run_tidy_hook.py --build-dir BUILD --project SRC --work DIR --clang-tidy CLANG_TIDY_16
                        --torch-mock DIR [--generator G] [--torch-dir D] [--with-runtime]

Only the tools' component (and, with --with-runtime, the library's, which holds
mpnannyConfig.cmake) is installed, into a fresh prefix. The project compiles one small
file against the mock LibTorch headers, so the test takes seconds.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys

FAILURES = []


def expect(condition, message):
    print(("ok: " if condition else "FAIL: ") + message, flush=True)
    if not condition:
        FAILURES.append(message)


def run(command, **kwargs):
    print("$ " + " ".join(command), flush=True)
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, **kwargs)
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--project", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--clang-tidy", required=True)
    parser.add_argument("--torch-mock", required=True)
    parser.add_argument("--generator", default="Ninja")
    parser.add_argument("--torch-dir", default="")
    parser.add_argument("--with-runtime", action="store_true")
    args = parser.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    prefix = os.path.join(args.work, "prefix")
    components = ["mpnanny"] + (["libmpnanny-dev"] if args.with_runtime else [])
    for component in components:
        installed = run(["cmake", "--install", args.build_dir, "--prefix", prefix, "--component", component])
        if installed.returncode != 0:
            sys.stderr.write(installed.stdout + installed.stderr)
            raise SystemExit("cmake --install --component %s failed" % component)
    plugins = glob.glob(os.path.join(prefix, "**", "libmpnanny-tidy.so"), recursive=True)
    helpers = glob.glob(os.path.join(prefix, "**", "cmake", "mpnanny", "mpnannyClangTidy.cmake"), recursive=True)
    expect(len(plugins) == 1, "the tools' component installs the plugin: %s" % plugins)
    expect(len(helpers) == 1, "the tools' component installs mpnannyClangTidy.cmake: %s" % helpers)
    if FAILURES:
        return 1
    plugin, helper = plugins[0], helpers[0]

    hooks = {
        # What a user writes on the command line, with no help from the package.
        "variable": ["-DCMAKE_CXX_CLANG_TIDY=%s;--load=%s;-checks=-*,mpnanny-*;--warnings-as-errors=mpnanny-*"
                     % (args.clang_tidy, plugin)],
        # The helper file on its own (the tools without the library).
        "include": ["-DMPNANNY_HELPER=" + helper, "-DMPNANNY_CLANG_TIDY_EXECUTABLE=" + args.clang_tidy],
    }
    if args.with_runtime:
        hooks["helper"] = ["-DCMAKE_PREFIX_PATH=" + prefix, "-DMPNANNY_CLANG_TIDY_EXECUTABLE=" + args.clang_tidy]
        if args.torch_dir:
            hooks["helper"].append("-DTorch_DIR=" + args.torch_dir)
    for hook, flags in hooks.items():
        for model, should_build in (("hazard.cpp", False), ("fixed.cpp", True)):
            build = os.path.join(args.work, "%s-%s" % (hook, model.split(".")[0]))
            configure = run(["cmake", "-S", args.project, "-B", build, "-G", args.generator,
                             "-DHOOK=" + hook, "-DMODEL=" + model, "-DTORCH_MOCK=" + args.torch_mock] + flags)
            if configure.returncode != 0:
                sys.stderr.write(configure.stdout[-3000:] + configure.stderr[-3000:])
                expect(False, "%s hook: the project configures" % hook)
                continue
            with open(os.path.join(build, "CMakeCache.txt")) as f:
                cache = f.read()
            if hook == "helper":
                expect("mpnanny_DIR:PATH=" in cache and prefix in cache.split("mpnanny_DIR:PATH=")[1].splitlines()[0],
                       "helper hook: find_package(mpnanny) took the installed package")
            built = run(["cmake", "--build", build])
            output = built.stdout + built.stderr
            if should_build:
                expect(built.returncode == 0, "%s hook: %s builds" % (hook, model))
                expect("mpnanny-" not in output.replace("libmpnanny-tidy", ""),
                       "%s hook: %s builds without a finding" % (hook, model))
            else:
                expect(built.returncode != 0, "%s hook: the build of %s fails" % (hook, model))
                expect("hazard.cpp:6:30: error:" in output and "[mpnanny-fp16-constant-range,-warnings-as-errors]" in output,
                       "%s hook: the failure is the finding at hazard.cpp:6:30, as an error" % hook)
            if FAILURES and FAILURES[-1].startswith(hook):
                sys.stderr.write(output[-3000:])
    if not args.with_runtime:
        print("note: the runtime is not built: find_package(mpnanny) + mpnanny_enable_clang_tidy not tested")
    print("%d failure(s)" % len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
