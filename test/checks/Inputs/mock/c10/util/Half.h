// Mock of c10/util/Half.h and c10/util/BFloat16.h: the storage types, their conversions to and
// from float, and the arithmetic of Half-inl.h (Half op Half is Half; Half op float is float;
// Half op double is double; Half op int is Half).
#pragma once
#include <cstdint>
#include <limits>

// c10/macros/Macros.h: callable from kernels when compiled as CUDA.
#if defined(__CUDACC__) || defined(__CUDA__)
#define C10_HOST_DEVICE __host__ __device__
#else
#define C10_HOST_DEVICE
#endif

namespace c10 {

#define MPNANNY_MOCK_REDUCED_FLOAT(T)                                                              \
  struct alignas(2) T {                                                                            \
    unsigned short x;                                                                              \
    struct from_bits_t {};                                                                         \
    static constexpr from_bits_t from_bits() { return from_bits_t(); }                             \
    T() = default;                                                                                 \
    C10_HOST_DEVICE constexpr T(unsigned short bits, from_bits_t) : x(bits) {}                     \
    C10_HOST_DEVICE T(float value);                                                                \
    C10_HOST_DEVICE operator float() const;                                                        \
  };                                                                                               \
  C10_HOST_DEVICE T operator+(const T &a, const T &b);                                             \
  C10_HOST_DEVICE T operator-(const T &a, const T &b);                                             \
  C10_HOST_DEVICE T operator*(const T &a, const T &b);                                             \
  C10_HOST_DEVICE T operator/(const T &a, const T &b);                                             \
  C10_HOST_DEVICE T operator-(const T &a);                                                         \
  C10_HOST_DEVICE T &operator+=(T &a, const T &b);                                                 \
  C10_HOST_DEVICE T &operator-=(T &a, const T &b);                                                 \
  C10_HOST_DEVICE T &operator*=(T &a, const T &b);                                                 \
  C10_HOST_DEVICE T &operator/=(T &a, const T &b);                                                 \
  C10_HOST_DEVICE float operator+(T a, float b);                                                   \
  C10_HOST_DEVICE float operator-(T a, float b);                                                   \
  C10_HOST_DEVICE float operator*(T a, float b);                                                   \
  C10_HOST_DEVICE float operator/(T a, float b);                                                   \
  C10_HOST_DEVICE float operator+(float a, T b);                                                   \
  C10_HOST_DEVICE float operator-(float a, T b);                                                   \
  C10_HOST_DEVICE float operator*(float a, T b);                                                   \
  C10_HOST_DEVICE float operator/(float a, T b);                                                   \
  C10_HOST_DEVICE float &operator+=(float &a, const T &b);                                         \
  C10_HOST_DEVICE float &operator-=(float &a, const T &b);                                         \
  C10_HOST_DEVICE double operator+(T a, double b);                                                 \
  C10_HOST_DEVICE double operator-(T a, double b);                                                 \
  C10_HOST_DEVICE double operator*(T a, double b);                                                 \
  C10_HOST_DEVICE double operator/(T a, double b);                                                 \
  C10_HOST_DEVICE double operator+(double a, T b);                                                 \
  C10_HOST_DEVICE double operator-(double a, T b);                                                 \
  C10_HOST_DEVICE double operator*(double a, T b);                                                 \
  C10_HOST_DEVICE double operator/(double a, T b);                                                 \
  C10_HOST_DEVICE T operator+(T a, int b);                                                         \
  C10_HOST_DEVICE T operator-(T a, int b);                                                         \
  C10_HOST_DEVICE T operator*(T a, int b);                                                         \
  C10_HOST_DEVICE T operator/(T a, int b);                                                         \
  C10_HOST_DEVICE T operator+(int a, T b);                                                         \
  C10_HOST_DEVICE T operator-(int a, T b);                                                         \
  C10_HOST_DEVICE T operator*(int a, T b);                                                         \
  C10_HOST_DEVICE T operator/(int a, T b);

MPNANNY_MOCK_REDUCED_FLOAT(Half)
MPNANNY_MOCK_REDUCED_FLOAT(BFloat16)
#undef MPNANNY_MOCK_REDUCED_FLOAT

} // namespace c10

namespace at {
using c10::BFloat16;
using c10::Half;
} // namespace at

namespace std {
template <> class numeric_limits<c10::Half> {
public:
  static constexpr bool is_specialized = true;
  static constexpr c10::Half lowest() { return c10::Half(0xFBFF, c10::Half::from_bits()); }
  static constexpr c10::Half max() { return c10::Half(0x7BFF, c10::Half::from_bits()); }
  static constexpr c10::Half min() { return c10::Half(0x0400, c10::Half::from_bits()); }
  static constexpr c10::Half epsilon() { return c10::Half(0x1400, c10::Half::from_bits()); }
};
template <> class numeric_limits<c10::BFloat16> {
public:
  static constexpr bool is_specialized = true;
  static constexpr c10::BFloat16 lowest() {
    return c10::BFloat16(0xFF7F, c10::BFloat16::from_bits());
  }
  static constexpr c10::BFloat16 max() { return c10::BFloat16(0x7F7F, c10::BFloat16::from_bits()); }
};
} // namespace std
