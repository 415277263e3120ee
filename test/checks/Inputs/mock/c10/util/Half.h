// Mock of c10's reduced-precision scalar types, the ones kernels dispatch on (scalar_t =
// at::Half / at::BFloat16): storage, conversions to and from float, and the operators of
// c10/util/Half-inl.h (which compute in float and round the result back).
#pragma once
#include <cstdint>

// c10/macros/Macros.h: callable from kernels when compiled as CUDA.
#if defined(__CUDACC__) || defined(__CUDA__)
#define C10_HOST_DEVICE __host__ __device__
#else
#define C10_HOST_DEVICE
#endif

namespace c10 {
struct alignas(2) Half {
  uint16_t x;
  Half() = default;
  C10_HOST_DEVICE Half(float value);
  C10_HOST_DEVICE operator float() const;
};
struct alignas(2) BFloat16 {
  uint16_t x;
  BFloat16() = default;
  C10_HOST_DEVICE BFloat16(float value);
  C10_HOST_DEVICE operator float() const;
};

#define C10_MOCK_HALF_OPERATORS(T)                                                                 \
  C10_HOST_DEVICE T operator+(const T &a, const T &b);                                             \
  C10_HOST_DEVICE T operator-(const T &a, const T &b);                                             \
  C10_HOST_DEVICE T operator*(const T &a, const T &b);                                             \
  C10_HOST_DEVICE T operator/(const T &a, const T &b);                                             \
  C10_HOST_DEVICE T operator-(const T &a);                                                         \
  C10_HOST_DEVICE T &operator+=(T &a, const T &b);                                                 \
  C10_HOST_DEVICE T &operator-=(T &a, const T &b);                                                 \
  C10_HOST_DEVICE T &operator*=(T &a, const T &b);                                                 \
  C10_HOST_DEVICE T &operator/=(T &a, const T &b);
C10_MOCK_HALF_OPERATORS(Half)
C10_MOCK_HALF_OPERATORS(BFloat16)
#undef C10_MOCK_HALF_OPERATORS
} // namespace c10

namespace at {
using c10::BFloat16;
using c10::Half;
} // namespace at
