// What nvcc (cuda_runtime.h) and Clang (__clang_cuda_runtime_wrapper.h) put in front of every
// CUDA file, for a parse with -nocudainc: mpnanny-check force-includes it (-include) when no
// CUDA toolkit that this Clang reads is installed. Clang's own CUDA headers from its resource
// directory give the builtin variables, the libdevice-backed math and the warp intrinsics; this
// folder's headers give the rest of the runtime (see host_defines.h).
#ifndef MPNANNY_CUDA_PRELUDE_H
#define MPNANNY_CUDA_PRELUDE_H

#if defined(__CUDA__) && defined(__clang__)

// Before <cmath>: with a __device__ declaration first, libstdc++'s constexpr math functions do
// not become implicitly host+device (Clang's wrapper does the same).
#include <__clang_cuda_math_forward_declares.h>

// libstdc++'s headers avoid __float128, which CUDA lacks, when __CUDACC__ is defined.
#define __CUDACC__
#include <climits>
#include <cmath>
#include <cstdlib>
#include <stdlib.h>
#include <string.h>

// Clang's device headers declare more with a high architecture: make everything visible to a
// host-side parse, as Clang's wrapper does, and restore the real value afterwards.
#pragma push_macro("__CUDA_ARCH__")
#ifndef __CUDA_ARCH__
#define __CUDA_ARCH__ 9999
#endif

#include "cuda.h"
#include <__clang_cuda_builtin_vars.h>
#define __DEVICE_LAUNCH_PARAMETERS_H__
#include "cuda_runtime.h"
#include "math_constants.h"

// In this order, as in Clang's wrapper: the device functions call the libdevice declarations.
// clang-format off
#include <__clang_cuda_libdevice_declares.h>
#include <__clang_cuda_device_functions.h>
#include <__clang_cuda_math.h>
// clang-format on

#pragma pop_macro("__CUDA_ARCH__")

extern "C" {
__device__ int vprintf(const char *, const char *);
__device__ void free(void *) __attribute((nothrow));
__device__ void *malloc(size_t) __attribute((nothrow)) __attribute__((malloc));
__device__ void __assertfail(const char *__message, const char *__file, unsigned __line,
                             const char *__function, size_t __charSize);
__device__ static inline void __assert_fail(const char *__message, const char *__file,
                                            unsigned __line, const char *__function) {
  __assertfail(__message, __file, __line, __function, sizeof(char));
}
__device__ int printf(const char *, ...);
}
namespace std {
__device__ static inline void free(void *__ptr) { ::free(__ptr); }
__device__ static inline void *malloc(size_t __size) { return ::malloc(__size); }
} // namespace std

// The builtin variables convert to dim3 and uint3 (declared in __clang_cuda_builtin_vars.h).
__device__ inline __cuda_builtin_threadIdx_t::operator dim3() const { return dim3(x, y, z); }
__device__ inline __cuda_builtin_threadIdx_t::operator uint3() const { return {x, y, z}; }
__device__ inline __cuda_builtin_blockIdx_t::operator dim3() const { return dim3(x, y, z); }
__device__ inline __cuda_builtin_blockIdx_t::operator uint3() const { return {x, y, z}; }
__device__ inline __cuda_builtin_blockDim_t::operator dim3() const { return dim3(x, y, z); }
__device__ inline __cuda_builtin_blockDim_t::operator uint3() const { return {x, y, z}; }
__device__ inline __cuda_builtin_gridDim_t::operator dim3() const { return dim3(x, y, z); }
__device__ inline __cuda_builtin_gridDim_t::operator uint3() const { return {x, y, z}; }

#pragma push_macro("__CUDA_ARCH__")
#ifndef __CUDA_ARCH__
#define __CUDA_ARCH__ 9999
#endif
// clang-format off
#include <__clang_cuda_cmath.h>
#include <__clang_cuda_intrinsics.h>
#include <__clang_cuda_complex_builtins.h>
// clang-format on
#pragma pop_macro("__CUDA_ARCH__")

#endif // __CUDA__ && __clang__
#endif // MPNANNY_CUDA_PRELUDE_H
