#!/usr/bin/env bash
# Checks mpnanny's CUDA stat kernel on a CUDA machine with a Python PyTorch 2.x install:
# builds the runtime with CUDA against that PyTorch's LibTorch, then runs
# mpnanny_gpu_stats_check (CUDA results against the CPU kernel on every dtype; the caching
# allocator's statistics as the nanny samples them; bandwidth as a share of a device-to-device
# copy). Documented in runtime/cuda/README.md.
#
#   tools/gpu-check.sh [build-dir]        (default: build-gpu next to this checkout's sources)
#
# Environment: PYTHON (default python3), CMAKE_CUDA_ARCHITECTURES (default: this GPU's, "native",
# with CMake 3.24+; "80;90" before),
# MPNANNY_GPU_CHECK_JOBS (default: all cores). Exit status: the check program's (0 pass,
# 1 mismatch, 2 no GPU), or the failing step's.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-gpu}
python=${PYTHON:-python3}
jobs=${MPNANNY_GPU_CHECK_JOBS:-$(nproc)}
start=$SECONDS

step() { printf '\n== %s (%ds)\n' "$*" $((SECONDS - start)); }

step "PyTorch"
prefix=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)') ||
  { echo "gpu-check: '$python' cannot import torch; install PyTorch 2.x (CUDA) or set PYTHON" >&2; exit 2; }
"$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "devices", torch.cuda.device_count())'
command -v nvidia-smi >/dev/null && nvidia-smi -L || true
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || { echo "gpu-check: nvcc not found (set CUDACXX)" >&2; exit 2; }

# "native" (only this GPU's architecture: the quickest build) needs CMake 3.24.
archs=${CMAKE_CUDA_ARCHITECTURES:-}
if [ -z "$archs" ]; then
  if printf '3.24\n%s\n' "$(cmake --version | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')" | sort -V -C; then
    archs=native
  else
    archs="80;90"
  fi
fi

step "configure ($build)"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# Only the runtime: the static checks need Clang 16, the tests GoogleTest built for this ABI.
cmake -S "$root" -B "$build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CUDA_COMPILER="$nvcc" \
  -DCMAKE_CUDA_ARCHITECTURES="$archs" \
  -DMPNANNY_BUILD_CHECKS=OFF -DMPNANNY_BUILD_TESTS=OFF -DMPNANNY_BUILD_BENCHMARKS=OFF

step "build"
cmake --build "$build" --target mpnanny_gpu_stats_check -j "$jobs"

step "check"
set +e
timeout 180 "$build/runtime/cuda/mpnanny_gpu_stats_check"
status=$?
set -e
step "done: exit $status"
exit $status
