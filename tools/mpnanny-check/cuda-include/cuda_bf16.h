// bfloat16 (CUDA Math API, "Bfloat16 Precision Intrinsics", and the __nv_bfloat16 /
// __nv_bfloat162 types); mpnanny stand-in (see host_defines.h): the types, their conversions and
// operators as the toolkit declares them (switched off by the same __CUDA_NO_BFLOAT16_* macros),
// and the intrinsics.
#pragma once
#include "crt/mpnanny_half_decls.h"
#include "cuda_fp16.h"
#include "host_defines.h"
#include "vector_types.h"

typedef struct __align__(2) { unsigned short x; }
__nv_bfloat16_raw;
typedef struct __align__(4) {
  unsigned short x;
  unsigned short y;
}
__nv_bfloat162_raw;

struct __align__(2) __nv_bfloat16 {
protected:
  unsigned short __x;

public:
  __nv_bfloat16() = default;
  __host__ __device__ __nv_bfloat16(const __nv_bfloat16_raw &hr) : __x(hr.x) {}
  __host__ __device__ __nv_bfloat16 &operator=(const __nv_bfloat16_raw &hr);
  __host__ __device__ operator __nv_bfloat16_raw() const;
#if !defined(__CUDA_NO_BFLOAT16_CONVERSIONS__)
  __host__ __device__ __nv_bfloat16(const __half f);
  __host__ __device__ __nv_bfloat16(float f);
  __host__ __device__ __nv_bfloat16(double f);
  __host__ __device__ __nv_bfloat16(short val);
  __host__ __device__ __nv_bfloat16(unsigned short val);
  __host__ __device__ __nv_bfloat16(int val);
  __host__ __device__ __nv_bfloat16(unsigned int val);
  __host__ __device__ __nv_bfloat16(long val);
  __host__ __device__ __nv_bfloat16(unsigned long val);
  __host__ __device__ __nv_bfloat16(long long val);
  __host__ __device__ __nv_bfloat16(unsigned long long val);
  __host__ __device__ operator float() const;
  __host__ __device__ __nv_bfloat16 &operator=(float f);
  __host__ __device__ __nv_bfloat16 &operator=(double f);
  __host__ __device__ explicit operator short() const;
  __host__ __device__ explicit operator unsigned short() const;
  __host__ __device__ explicit operator int() const;
  __host__ __device__ explicit operator unsigned int() const;
  __host__ __device__ explicit operator long long() const;
  __host__ __device__ explicit operator unsigned long long() const;
  __host__ __device__ __nv_bfloat16 &operator=(short val);
  __host__ __device__ __nv_bfloat16 &operator=(unsigned short val);
  __host__ __device__ __nv_bfloat16 &operator=(int val);
  __host__ __device__ __nv_bfloat16 &operator=(unsigned int val);
  __host__ __device__ __nv_bfloat16 &operator=(long long val);
  __host__ __device__ __nv_bfloat16 &operator=(unsigned long long val);
  __host__ __device__ explicit operator bool() const;
#endif
};

struct __align__(4) __nv_bfloat162 {
  __nv_bfloat16 x;
  __nv_bfloat16 y;
  __nv_bfloat162() = default;
  __host__ __device__ __nv_bfloat162(const __nv_bfloat16 &a, const __nv_bfloat16 &b) : x(a), y(b) {}
  __host__ __device__ __nv_bfloat162(const __nv_bfloat162_raw &h2r);
  __host__ __device__ __nv_bfloat162 &operator=(const __nv_bfloat162_raw &h2r);
  __host__ __device__ operator __nv_bfloat162_raw() const;
};

typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

// Conversions and data movement.
__host__ __device__ __nv_bfloat16 __float2bfloat16(const float a);
__host__ __device__ __nv_bfloat16 __float2bfloat16_rn(const float a);
__host__ __device__ __nv_bfloat16 __float2bfloat16_rz(const float a);
__host__ __device__ __nv_bfloat16 __float2bfloat16_rd(const float a);
__host__ __device__ __nv_bfloat16 __float2bfloat16_ru(const float a);
__host__ __device__ __nv_bfloat16 __double2bfloat16(const double a);
__host__ __device__ float __bfloat162float(const __nv_bfloat16 a);
__host__ __device__ __nv_bfloat162 __float2bfloat162_rn(const float a);
__host__ __device__ __nv_bfloat162 __floats2bfloat162_rn(const float a, const float b);
__host__ __device__ __nv_bfloat162 __float22bfloat162_rn(const float2 a);
__host__ __device__ float2 __bfloat1622float2(const __nv_bfloat162 a);
__host__ __device__ float __low2float(const __nv_bfloat162 a);
__host__ __device__ float __high2float(const __nv_bfloat162 a);
__host__ __device__ __nv_bfloat16 __low2bfloat16(const __nv_bfloat162 a);
__host__ __device__ __nv_bfloat16 __high2bfloat16(const __nv_bfloat162 a);
__host__ __device__ __nv_bfloat162 __low2bfloat162(const __nv_bfloat162 a);
__host__ __device__ __nv_bfloat162 __high2bfloat162(const __nv_bfloat162 a);
__host__ __device__ __nv_bfloat162 __lows2bfloat162(const __nv_bfloat162 a, const __nv_bfloat162 b);
__host__ __device__ __nv_bfloat162 __highs2bfloat162(const __nv_bfloat162 a,
                                                     const __nv_bfloat162 b);
__host__ __device__ __nv_bfloat162 __halves2bfloat162(const __nv_bfloat16 a, const __nv_bfloat16 b);
__host__ __device__ __nv_bfloat162 __bfloat162bfloat162(const __nv_bfloat16 a);
__host__ __device__ __nv_bfloat162 make_bfloat162(const __nv_bfloat16 x, const __nv_bfloat16 y);
__host__ __device__ short int __bfloat16_as_short(const __nv_bfloat16 h);
__host__ __device__ unsigned short int __bfloat16_as_ushort(const __nv_bfloat16 h);
__host__ __device__ __nv_bfloat16 __short_as_bfloat16(const short int i);
__host__ __device__ __nv_bfloat16 __ushort_as_bfloat16(const unsigned short int i);
__host__ __device__ int __bfloat162int_rn(const __nv_bfloat16 h);
__host__ __device__ int __bfloat162int_rz(const __nv_bfloat16 h);
__host__ __device__ __nv_bfloat16 __int2bfloat16_rn(const int i);
__host__ __device__ __nv_bfloat16 __int2bfloat16_rz(const int i);
__host__ __device__ unsigned int __bfloat162uint_rn(const __nv_bfloat16 h);
__host__ __device__ unsigned int __bfloat162uint_rz(const __nv_bfloat16 h);
__host__ __device__ __nv_bfloat16 __uint2bfloat16_rn(const unsigned int i);
__host__ __device__ short int __bfloat162short_rn(const __nv_bfloat16 h);
__host__ __device__ __nv_bfloat16 __short2bfloat16_rn(const short int i);
__host__ __device__ unsigned short int __bfloat162ushort_rn(const __nv_bfloat16 h);
__host__ __device__ __nv_bfloat16 __ushort2bfloat16_rn(const unsigned short int i);
__host__ __device__ long long int __bfloat162ll_rn(const __nv_bfloat16 h);
__host__ __device__ __nv_bfloat16 __ll2bfloat16_rn(const long long int i);
__host__ __device__ unsigned long long int __bfloat162ull_rn(const __nv_bfloat16 h);
__host__ __device__ __nv_bfloat16 __ull2bfloat16_rn(const unsigned long long int i);
__host__ __device__ __half __bfloat162half(const __nv_bfloat16 h);
__host__ __device__ __nv_bfloat16 __half2bfloat16(const __half h);

__MPNANNY_HALF_INTRINSICS(__nv_bfloat16, __nv_bfloat162)
#if !defined(__CUDA_NO_BFLOAT16_OPERATORS__)
__MPNANNY_HALF_OPERATORS(__nv_bfloat16)
#endif
#if !defined(__CUDA_NO_BFLOAT162_OPERATORS__)
__MPNANNY_HALF_OPERATORS(__nv_bfloat162)
#endif

#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7F80U)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7F7FU)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x8000U)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000U)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3F80U)
