// Synchronization, warp and miscellaneous device functions that Clang's own CUDA headers
// (included by mpnanny_cuda_prelude.h) leave to the toolkit; mpnanny stand-in (see
// host_defines.h).
#pragma once
#include "device_atomic_functions.h"
#include "host_defines.h"

__device__ unsigned int __reduce_add_sync(unsigned int mask, unsigned int value);
__device__ unsigned int __reduce_max_sync(unsigned int mask, unsigned int value);
__device__ unsigned int __reduce_min_sync(unsigned int mask, unsigned int value);
__device__ void __nanosleep(unsigned int ns);
__device__ unsigned int __cvta_generic_to_shared(const void *ptr);
__device__ void *__cvta_shared_to_generic(unsigned int rawbits);
__device__ void __prof_trigger(int counter);
// Address space predicates (Programming Guide, "Address Space Predicate Functions"): Clang 19's
// __clang_cuda_intrinsics.h calls __isShared in __isCtaShared.
__device__ unsigned int __isGlobal(const void *ptr);
__device__ unsigned int __isShared(const void *ptr);
__device__ unsigned int __isConstant(const void *ptr);
__device__ unsigned int __isGridConstant(const void *ptr);
__device__ unsigned int __isLocal(const void *ptr);
__device__ void __pipeline_commit();
__device__ void __pipeline_wait_prior(unsigned int prior);
__device__ void __pipeline_memcpy_async(void *dst, const void *src, unsigned int size);

// Loads and stores with cache hints (Programming Guide, "Load Functions Using Cache Hints").
template <typename T> __device__ T __ldcg(const T *ptr);
template <typename T> __device__ T __ldca(const T *ptr);
template <typename T> __device__ T __ldcs(const T *ptr);
template <typename T> __device__ T __ldlu(const T *ptr);
template <typename T> __device__ T __ldcv(const T *ptr);
template <typename T> __device__ void __stwb(T *ptr, T value);
template <typename T> __device__ void __stcg(T *ptr, T value);
template <typename T> __device__ void __stcs(T *ptr, T value);
template <typename T> __device__ void __stwt(T *ptr, T value);
