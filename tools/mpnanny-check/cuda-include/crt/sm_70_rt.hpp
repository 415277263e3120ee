// Warp match functions (Programming Guide, "Warp Match Functions"), which Clang's
// __clang_cuda_intrinsics.h expects the toolkit to declare over its __match32/__match64
// builtins; mpnanny stand-in (see ../host_defines.h).
#pragma once

__device__ unsigned int __match_any_sync(unsigned int mask, int value);
__device__ unsigned int __match_any_sync(unsigned int mask, unsigned int value);
__device__ unsigned int __match_any_sync(unsigned int mask, long value);
__device__ unsigned int __match_any_sync(unsigned int mask, unsigned long value);
__device__ unsigned int __match_any_sync(unsigned int mask, long long value);
__device__ unsigned int __match_any_sync(unsigned int mask, unsigned long long value);
__device__ unsigned int __match_any_sync(unsigned int mask, float value);
__device__ unsigned int __match_any_sync(unsigned int mask, double value);
__device__ unsigned int __match_all_sync(unsigned int mask, int value, int *pred);
__device__ unsigned int __match_all_sync(unsigned int mask, unsigned int value, int *pred);
__device__ unsigned int __match_all_sync(unsigned int mask, long value, int *pred);
__device__ unsigned int __match_all_sync(unsigned int mask, unsigned long value, int *pred);
__device__ unsigned int __match_all_sync(unsigned int mask, long long value, int *pred);
__device__ unsigned int __match_all_sync(unsigned int mask, unsigned long long value, int *pred);
__device__ unsigned int __match_all_sync(unsigned int mask, float value, int *pred);
__device__ unsigned int __match_all_sync(unsigned int mask, double value, int *pred);
