# lit configuration of the check tests. Each test is a C++ file whose RUN lines
# use these substitutions and whose every warning is expected.
import os
import lit.formats

config.name = "mpnanny-checks"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".cpp", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mpnanny_binary_dir, "test", "checks")

mock = os.path.join(config.test_source_root, "Inputs", "mock")
flags = "-std=c++17 -isystem " + mock
config.substitutions.append(("%torch_mock", mock))
config.substitutions.append(("%rules", os.path.join(config.mpnanny_source_dir, "rules")))
config.substitutions.append(("%mpnanny_check", config.mpnanny_check))
config.substitutions.append(("%clang_tidy", config.clang_tidy))
config.substitutions.append(("%old_clang_tidy", config.old_clang_tidy))
config.substitutions.append(("%llvm_major", config.llvm_major))
config.substitutions.append(("%plugin", config.mpnanny_plugin))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
# The usual shape of a check test: scan with the mock headers, expect every warning.
config.substitutions.append(("%check_flags", flags))
config.substitutions.append(
    ("%FileCheckAll", config.filecheck + " -implicit-check-not='{{warning|error}}:'"))
config.substitutions.append(("%source_dir", config.mpnanny_source_dir))
# What mpnanny-check adds to a CUDA command when no toolkit Clang reads is found
# (tools/mpnanny-check/CudaFlags.h): the clang-tidy door is given them by hand.
cuda_include = os.path.join(config.mpnanny_source_dir, "tools", "mpnanny-check", "cuda-include")
config.substitutions.append(("%cuda_include", cuda_include))
config.substitutions.append(
    ("%cuda_flags", "--cuda-host-only -nocudalib -nocudainc --cuda-path=%s -isystem %s "
     "-include mpnanny_cuda_prelude.h -Wno-unknown-cuda-version" % (cuda_include, cuda_include)))
config.substitutions.append(("%binary_dir", config.mpnanny_binary_dir))

if config.torch_include_dirs:
    config.available_features.add("libtorch")
    # LibTorch 2.x (C++20 parses with its headers; 1.13's do not).
    if config.torch_version.split(".")[0].isdigit() and int(config.torch_version.split(".")[0]) >= 2:
        config.available_features.add("libtorch-2")
    # /usr/include is a system folder already: -isystem would put it before the C++
    # library's headers and break <cstdlib>'s #include_next <stdlib.h>.
    torch_includes = " ".join("-isystem " + d for d in config.torch_include_dirs
                              if os.path.normpath(d) not in ("/usr/include", "/usr/local/include"))
    config.substitutions.append(("%torch_flags", "-std=c++17 " + torch_includes))
    config.substitutions.append(("%torch_includes", torch_includes))
if os.path.exists(config.old_clang_tidy or ""):
    config.available_features.add("old-clang-tidy")

config.environment["PATH"] = os.pathsep.join([config.llvm_tools_dir, config.environment.get("PATH", "")])
# Tests must not depend on the user's environment.
for var in ["MPNANNY_RULES", "MPNANNY_KNOWLEDGE", "TORCH_DIR", "MPNANNY_CUDA_PATH",
            "MPNANNY_CUDA_INCLUDE", "CUDA_PATH", "CUDA_HOME"]:
    config.environment.pop(var, None)
config.pipefail = False

# The official SARIF 2.1.0 schema, fetched by the checks-sarif-schema test from npm; a
# hand-written subset of it when the registry could not be reached.
official_sarif = os.path.join(config.test_exec_root, "sarif-schema", "package", "lib", "schemas",
                              "sarif-2.1.0-rtm.5.json")
if os.path.exists(official_sarif):
    config.substitutions.append(("%sarif_schema", official_sarif))
else:
    lit_config.note("official SARIF schema not fetched: validating against the subset")
    config.substitutions.append(
        ("%sarif_schema", os.path.join(config.test_source_root, "Inputs", "sarif-schema-2.1.0-subset.json")))
