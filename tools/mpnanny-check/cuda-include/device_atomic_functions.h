// Atomic functions (Programming Guide, "Atomic Functions"), declared for device code; mpnanny
// stand-in (see host_defines.h). The __half, __half2, __nv_bfloat16 and __nv_bfloat162
// overloads of atomicAdd are in cuda_fp16.h and cuda_bf16.h, as in the toolkit.
#pragma once
#include "host_defines.h"

#define __MPNANNY_ATOMIC(name, type)                                                               \
  __device__ type name(type *address, type val);                                                   \
  __device__ type name##_block(type *address, type val);                                           \
  __device__ type name##_system(type *address, type val);

__MPNANNY_ATOMIC(atomicAdd, int)
__MPNANNY_ATOMIC(atomicAdd, unsigned int)
__MPNANNY_ATOMIC(atomicAdd, unsigned long long int)
__MPNANNY_ATOMIC(atomicAdd, float)
__MPNANNY_ATOMIC(atomicAdd, double)
__MPNANNY_ATOMIC(atomicSub, int)
__MPNANNY_ATOMIC(atomicSub, unsigned int)
__MPNANNY_ATOMIC(atomicExch, int)
__MPNANNY_ATOMIC(atomicExch, unsigned int)
__MPNANNY_ATOMIC(atomicExch, unsigned long long int)
__MPNANNY_ATOMIC(atomicExch, float)
__MPNANNY_ATOMIC(atomicMin, int)
__MPNANNY_ATOMIC(atomicMin, unsigned int)
__MPNANNY_ATOMIC(atomicMin, long long int)
__MPNANNY_ATOMIC(atomicMin, unsigned long long int)
__MPNANNY_ATOMIC(atomicMax, int)
__MPNANNY_ATOMIC(atomicMax, unsigned int)
__MPNANNY_ATOMIC(atomicMax, long long int)
__MPNANNY_ATOMIC(atomicMax, unsigned long long int)
__MPNANNY_ATOMIC(atomicInc, unsigned int)
__MPNANNY_ATOMIC(atomicDec, unsigned int)
__MPNANNY_ATOMIC(atomicAnd, int)
__MPNANNY_ATOMIC(atomicAnd, unsigned int)
__MPNANNY_ATOMIC(atomicAnd, unsigned long long int)
__MPNANNY_ATOMIC(atomicOr, int)
__MPNANNY_ATOMIC(atomicOr, unsigned int)
__MPNANNY_ATOMIC(atomicOr, unsigned long long int)
__MPNANNY_ATOMIC(atomicXor, int)
__MPNANNY_ATOMIC(atomicXor, unsigned int)
__MPNANNY_ATOMIC(atomicXor, unsigned long long int)
#undef __MPNANNY_ATOMIC

__device__ int atomicCAS(int *address, int compare, int val);
__device__ unsigned int atomicCAS(unsigned int *address, unsigned int compare, unsigned int val);
__device__ unsigned long long int atomicCAS(unsigned long long int *address,
                                            unsigned long long int compare,
                                            unsigned long long int val);
__device__ unsigned short int atomicCAS(unsigned short int *address, unsigned short int compare,
                                        unsigned short int val);
__device__ int atomicCAS_block(int *address, int compare, int val);
__device__ unsigned int atomicCAS_block(unsigned int *address, unsigned int compare,
                                        unsigned int val);
__device__ unsigned long long int atomicCAS_system(unsigned long long int *address,
                                                   unsigned long long int compare,
                                                   unsigned long long int val);
