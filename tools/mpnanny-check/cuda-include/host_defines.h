// mpnanny's stand-in for the CUDA toolkit: declarations written from the documented CUDA API
// (CUDA C++ Programming Guide, CUDA Runtime API and CUDA Math API references), for parsing
// kernels with Clang when no toolkit it can read is installed. Nothing here runs: it only has
// to give kernels the types and signatures nvcc gives them.
#pragma once

// The execution space and memory space specifiers (Programming Guide, "C++ Language Extensions").
#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __grid_constant__
#define __forceinline__ __inline__ __attribute__((always_inline))
// __noinline__ is a keyword of Clang's CUDA mode: a macro would break libstdc++'s
// __attribute__((__noinline__)).
#define __inline_hint__
#define __align__(n) __attribute__((aligned(n)))
#define __thread__ __thread
#define __builtin_align__(n) __align__(n)
#define __device_builtin__
#define __cudart_builtin__
#define __location__(a) __attribute__((a))
#define CUDARTAPI
#define CUDAAPI
#define __CUDA_ALIGN__(n) __align__(n)
