// Half precision (CUDA Math API, "Half Precision Intrinsics", and the __half / __half2 types);
// mpnanny stand-in (see host_defines.h): the types, their conversions and operators as the
// toolkit declares them (switched off by the same __CUDA_NO_HALF_* macros), and the intrinsics.
#pragma once
#include "crt/mpnanny_half_decls.h"
#include "host_defines.h"
#include "vector_types.h"

typedef struct __align__(2) { unsigned short x; }
__half_raw;
typedef struct __align__(4) {
  unsigned short x;
  unsigned short y;
}
__half2_raw;

struct __align__(2) __half {
protected:
  unsigned short __x;

public:
  __half() = default;
  __host__ __device__ __half(const __half_raw &hr) : __x(hr.x) {}
  __host__ __device__ __half &operator=(const __half_raw &hr);
  __host__ __device__ operator __half_raw() const;
#if !defined(__CUDA_NO_HALF_CONVERSIONS__)
  __host__ __device__ __half(float f);
  __host__ __device__ __half(double f);
  __host__ __device__ __half(short val);
  __host__ __device__ __half(unsigned short val);
  __host__ __device__ __half(int val);
  __host__ __device__ __half(unsigned int val);
  __host__ __device__ __half(long val);
  __host__ __device__ __half(unsigned long val);
  __host__ __device__ __half(long long val);
  __host__ __device__ __half(unsigned long long val);
  __host__ __device__ operator float() const;
  __host__ __device__ __half &operator=(float f);
  __host__ __device__ __half &operator=(double f);
  __host__ __device__ explicit operator short() const;
  __host__ __device__ explicit operator unsigned short() const;
  __host__ __device__ explicit operator int() const;
  __host__ __device__ explicit operator unsigned int() const;
  __host__ __device__ explicit operator long long() const;
  __host__ __device__ explicit operator unsigned long long() const;
  __host__ __device__ __half &operator=(short val);
  __host__ __device__ __half &operator=(unsigned short val);
  __host__ __device__ __half &operator=(int val);
  __host__ __device__ __half &operator=(unsigned int val);
  __host__ __device__ __half &operator=(long long val);
  __host__ __device__ __half &operator=(unsigned long long val);
  __host__ __device__ explicit operator bool() const;
#endif
};

struct __align__(4) __half2 {
  __half x;
  __half y;
  __half2() = default;
  __host__ __device__ __half2(const __half &a, const __half &b) : x(a), y(b) {}
  __host__ __device__ __half2(const __half2_raw &h2r);
  __host__ __device__ __half2 &operator=(const __half2_raw &h2r);
  __host__ __device__ operator __half2_raw() const;
};

typedef __half half;
typedef __half2 half2;
typedef __half __nv_half;
typedef __half2 __nv_half2;
typedef __half_raw __nv_half_raw;
typedef __half2_raw __nv_half2_raw;
typedef __half nv_half;
typedef __half2 nv_half2;

// Conversions and data movement.
__host__ __device__ __half __float2half(const float a);
__host__ __device__ __half __float2half_rn(const float a);
__host__ __device__ __half __float2half_rz(const float a);
__host__ __device__ __half __float2half_rd(const float a);
__host__ __device__ __half __float2half_ru(const float a);
__host__ __device__ __half __double2half(const double a);
__host__ __device__ float __half2float(const __half a);
__host__ __device__ __half2 __float2half2_rn(const float a);
__host__ __device__ __half2 __floats2half2_rn(const float a, const float b);
__host__ __device__ __half2 __float22half2_rn(const float2 a);
__host__ __device__ float2 __half22float2(const __half2 a);
__host__ __device__ float __low2float(const __half2 a);
__host__ __device__ float __high2float(const __half2 a);
__host__ __device__ __half __low2half(const __half2 a);
__host__ __device__ __half __high2half(const __half2 a);
__host__ __device__ __half2 __low2half2(const __half2 a);
__host__ __device__ __half2 __high2half2(const __half2 a);
__host__ __device__ __half2 __lows2half2(const __half2 a, const __half2 b);
__host__ __device__ __half2 __highs2half2(const __half2 a, const __half2 b);
__host__ __device__ __half2 __halves2half2(const __half a, const __half b);
__host__ __device__ __half2 __half2half2(const __half a);
__host__ __device__ __half2 make_half2(const __half x, const __half y);
__host__ __device__ short int __half_as_short(const __half h);
__host__ __device__ unsigned short int __half_as_ushort(const __half h);
__host__ __device__ __half __short_as_half(const short int i);
__host__ __device__ __half __ushort_as_half(const unsigned short int i);
__host__ __device__ int __half2int_rn(const __half h);
__host__ __device__ int __half2int_rz(const __half h);
__host__ __device__ int __half2int_rd(const __half h);
__host__ __device__ int __half2int_ru(const __half h);
__host__ __device__ __half __int2half_rn(const int i);
__host__ __device__ __half __int2half_rz(const int i);
__host__ __device__ __half __int2half_rd(const int i);
__host__ __device__ __half __int2half_ru(const int i);
__host__ __device__ unsigned int __half2uint_rn(const __half h);
__host__ __device__ unsigned int __half2uint_rz(const __half h);
__host__ __device__ __half __uint2half_rn(const unsigned int i);
__host__ __device__ __half __uint2half_rz(const unsigned int i);
__host__ __device__ short int __half2short_rn(const __half h);
__host__ __device__ short int __half2short_rz(const __half h);
__host__ __device__ __half __short2half_rn(const short int i);
__host__ __device__ __half __short2half_rz(const short int i);
__host__ __device__ unsigned short int __half2ushort_rn(const __half h);
__host__ __device__ unsigned short int __half2ushort_rz(const __half h);
__host__ __device__ __half __ushort2half_rn(const unsigned short int i);
__host__ __device__ __half __ushort2half_rz(const unsigned short int i);
__host__ __device__ long long int __half2ll_rn(const __half h);
__host__ __device__ long long int __half2ll_rz(const __half h);
__host__ __device__ __half __ll2half_rn(const long long int i);
__host__ __device__ __half __ll2half_rz(const long long int i);
__host__ __device__ unsigned long long int __half2ull_rn(const __half h);
__host__ __device__ unsigned long long int __half2ull_rz(const __half h);
__host__ __device__ __half __ull2half_rn(const unsigned long long int i);
__host__ __device__ __half __ull2half_rz(const unsigned long long int i);
__host__ __device__ signed char __half2char_rz(const __half h);
__host__ __device__ unsigned char __half2uchar_rz(const __half h);

__MPNANNY_HALF_INTRINSICS(__half, __half2)
#if !defined(__CUDA_NO_HALF_OPERATORS__)
__MPNANNY_HALF_OPERATORS(__half)
#endif
#if !defined(__CUDA_NO_HALF2_OPERATORS__)
__MPNANNY_HALF_OPERATORS(__half2)
#endif

#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7C00U)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7BFFU)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half((unsigned short)0x8000U)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000U)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3C00U)
