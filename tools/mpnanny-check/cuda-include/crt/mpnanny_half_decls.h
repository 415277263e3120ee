// The intrinsics cuda_fp16.h and cuda_bf16.h both declare, with the same names, for a scalar type
// T and its pair type T2 (CUDA Math API, "Half Precision Intrinsics" and "Bfloat16 Precision
// Intrinsics"): arithmetic, comparisons, math functions, warp shuffles, loads and atomicAdd.
// mpnanny stand-in (see ../host_defines.h): declarations only.
#pragma once
#include "../host_defines.h"

#define __MPNANNY_HALF_INTRINSICS(T, T2)                                                           \
  __device__ T __hadd(const T a, const T b);                                                       \
  __device__ T __hsub(const T a, const T b);                                                       \
  __device__ T __hmul(const T a, const T b);                                                       \
  __device__ T __hdiv(const T a, const T b);                                                       \
  __device__ T __hadd_sat(const T a, const T b);                                                   \
  __device__ T __hsub_sat(const T a, const T b);                                                   \
  __device__ T __hmul_sat(const T a, const T b);                                                   \
  __device__ T __hadd_rn(const T a, const T b);                                                    \
  __device__ T __hsub_rn(const T a, const T b);                                                    \
  __device__ T __hmul_rn(const T a, const T b);                                                    \
  __device__ T __hfma(const T a, const T b, const T c);                                            \
  __device__ T __hfma_sat(const T a, const T b, const T c);                                        \
  __device__ T __hfma_relu(const T a, const T b, const T c);                                       \
  __device__ T __hneg(const T a);                                                                  \
  __device__ T __habs(const T a);                                                                  \
  __device__ T2 __hadd2(const T2 a, const T2 b);                                                   \
  __device__ T2 __hsub2(const T2 a, const T2 b);                                                   \
  __device__ T2 __hmul2(const T2 a, const T2 b);                                                   \
  __device__ T2 __h2div(const T2 a, const T2 b);                                                   \
  __device__ T2 __hadd2_sat(const T2 a, const T2 b);                                               \
  __device__ T2 __hsub2_sat(const T2 a, const T2 b);                                               \
  __device__ T2 __hmul2_sat(const T2 a, const T2 b);                                               \
  __device__ T2 __hadd2_rn(const T2 a, const T2 b);                                                \
  __device__ T2 __hsub2_rn(const T2 a, const T2 b);                                                \
  __device__ T2 __hmul2_rn(const T2 a, const T2 b);                                                \
  __device__ T2 __hfma2(const T2 a, const T2 b, const T2 c);                                       \
  __device__ T2 __hfma2_sat(const T2 a, const T2 b, const T2 c);                                   \
  __device__ T2 __hfma2_relu(const T2 a, const T2 b, const T2 c);                                  \
  __device__ T2 __hcmadd(const T2 a, const T2 b, const T2 c);                                      \
  __device__ T2 __hneg2(const T2 a);                                                               \
  __device__ T2 __habs2(const T2 a);                                                               \
  __device__ bool __heq(const T a, const T b);                                                     \
  __device__ bool __hne(const T a, const T b);                                                     \
  __device__ bool __hle(const T a, const T b);                                                     \
  __device__ bool __hge(const T a, const T b);                                                     \
  __device__ bool __hlt(const T a, const T b);                                                     \
  __device__ bool __hgt(const T a, const T b);                                                     \
  __device__ bool __hequ(const T a, const T b);                                                    \
  __device__ bool __hneu(const T a, const T b);                                                    \
  __device__ bool __hleu(const T a, const T b);                                                    \
  __device__ bool __hgeu(const T a, const T b);                                                    \
  __device__ bool __hltu(const T a, const T b);                                                    \
  __device__ bool __hgtu(const T a, const T b);                                                    \
  __host__ __device__ bool __hisnan(const T a);                                                    \
  __device__ int __hisinf(const T a);                                                              \
  __device__ T __hmax(const T a, const T b);                                                       \
  __device__ T __hmin(const T a, const T b);                                                       \
  __device__ T __hmax_nan(const T a, const T b);                                                   \
  __device__ T __hmin_nan(const T a, const T b);                                                   \
  __device__ T2 __heq2(const T2 a, const T2 b);                                                    \
  __device__ T2 __hne2(const T2 a, const T2 b);                                                    \
  __device__ T2 __hle2(const T2 a, const T2 b);                                                    \
  __device__ T2 __hge2(const T2 a, const T2 b);                                                    \
  __device__ T2 __hlt2(const T2 a, const T2 b);                                                    \
  __device__ T2 __hgt2(const T2 a, const T2 b);                                                    \
  __device__ T2 __hisnan2(const T2 a);                                                             \
  __device__ T2 __hmax2(const T2 a, const T2 b);                                                   \
  __device__ T2 __hmin2(const T2 a, const T2 b);                                                   \
  __device__ T2 __hmax2_nan(const T2 a, const T2 b);                                               \
  __device__ T2 __hmin2_nan(const T2 a, const T2 b);                                               \
  __device__ bool __hbeq2(const T2 a, const T2 b);                                                 \
  __device__ bool __hbne2(const T2 a, const T2 b);                                                 \
  __device__ bool __hble2(const T2 a, const T2 b);                                                 \
  __device__ bool __hbge2(const T2 a, const T2 b);                                                 \
  __device__ bool __hblt2(const T2 a, const T2 b);                                                 \
  __device__ bool __hbgt2(const T2 a, const T2 b);                                                 \
  __device__ T hsqrt(const T a);                                                                   \
  __device__ T hrsqrt(const T a);                                                                  \
  __device__ T hrcp(const T a);                                                                    \
  __device__ T hlog(const T a);                                                                    \
  __device__ T hlog2(const T a);                                                                   \
  __device__ T hlog10(const T a);                                                                  \
  __device__ T hexp(const T a);                                                                    \
  __device__ T hexp2(const T a);                                                                   \
  __device__ T hexp10(const T a);                                                                  \
  __device__ T hcos(const T a);                                                                    \
  __device__ T hsin(const T a);                                                                    \
  __device__ T hceil(const T a);                                                                   \
  __device__ T hfloor(const T a);                                                                  \
  __device__ T htrunc(const T a);                                                                  \
  __device__ T hrint(const T a);                                                                   \
  __device__ T htanh_approx(const T a);                                                            \
  __device__ T2 h2sqrt(const T2 a);                                                                \
  __device__ T2 h2rsqrt(const T2 a);                                                               \
  __device__ T2 h2rcp(const T2 a);                                                                 \
  __device__ T2 h2log(const T2 a);                                                                 \
  __device__ T2 h2log2(const T2 a);                                                                \
  __device__ T2 h2log10(const T2 a);                                                               \
  __device__ T2 h2exp(const T2 a);                                                                 \
  __device__ T2 h2exp2(const T2 a);                                                                \
  __device__ T2 h2exp10(const T2 a);                                                               \
  __device__ T2 h2cos(const T2 a);                                                                 \
  __device__ T2 h2sin(const T2 a);                                                                 \
  __device__ T2 h2ceil(const T2 a);                                                                \
  __device__ T2 h2floor(const T2 a);                                                               \
  __device__ T2 h2trunc(const T2 a);                                                               \
  __device__ T2 h2rint(const T2 a);                                                                \
  __device__ T2 h2tanh_approx(const T2 a);                                                         \
  __device__ T __shfl_sync(unsigned mask, T var, int srcLane, int width = 32);                     \
  __device__ T __shfl_up_sync(unsigned mask, T var, unsigned int delta, int width = 32);           \
  __device__ T __shfl_down_sync(unsigned mask, T var, unsigned int delta, int width = 32);         \
  __device__ T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = 32);                \
  __device__ T2 __shfl_sync(unsigned mask, T2 var, int srcLane, int width = 32);                   \
  __device__ T2 __shfl_up_sync(unsigned mask, T2 var, unsigned int delta, int width = 32);         \
  __device__ T2 __shfl_down_sync(unsigned mask, T2 var, unsigned int delta, int width = 32);       \
  __device__ T2 __shfl_xor_sync(unsigned mask, T2 var, int laneMask, int width = 32);              \
  __device__ T __ldg(const T *ptr);                                                                \
  __device__ T2 __ldg(const T2 *ptr);                                                              \
  __device__ T atomicAdd(T *address, T val);                                                       \
  __device__ T2 atomicAdd(T2 *address, T2 val);                                                    \
  __device__ T2 __lowhigh2highlow(const T2 a);

// Arithmetic and comparison operators, present unless __CUDA_NO_HALF_OPERATORS__ (or the bf16
// and pair spellings) is defined, as torch's extension builds define them.
#define __MPNANNY_HALF_OPERATORS(T)                                                                \
  __host__ __device__ T operator+(const T &lh, const T &rh);                                       \
  __host__ __device__ T operator-(const T &lh, const T &rh);                                       \
  __host__ __device__ T operator*(const T &lh, const T &rh);                                       \
  __host__ __device__ T operator/(const T &lh, const T &rh);                                       \
  __host__ __device__ T &operator+=(T &lh, const T &rh);                                           \
  __host__ __device__ T &operator-=(T &lh, const T &rh);                                           \
  __host__ __device__ T &operator*=(T &lh, const T &rh);                                           \
  __host__ __device__ T &operator/=(T &lh, const T &rh);                                           \
  __host__ __device__ T &operator++(T &h);                                                         \
  __host__ __device__ T &operator--(T &h);                                                         \
  __host__ __device__ T operator++(T &h, int);                                                     \
  __host__ __device__ T operator--(T &h, int);                                                     \
  __host__ __device__ T operator+(const T &h);                                                     \
  __host__ __device__ T operator-(const T &h);                                                     \
  __host__ __device__ bool operator==(const T &lh, const T &rh);                                   \
  __host__ __device__ bool operator!=(const T &lh, const T &rh);                                   \
  __host__ __device__ bool operator>(const T &lh, const T &rh);                                    \
  __host__ __device__ bool operator<(const T &lh, const T &rh);                                    \
  __host__ __device__ bool operator>=(const T &lh, const T &rh);                                   \
  __host__ __device__ bool operator<=(const T &lh, const T &rh);
