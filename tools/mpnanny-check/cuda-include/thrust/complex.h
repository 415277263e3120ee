// thrust::complex and its math functions, as c10/util/complex.h uses them (Thrust's documented
// API: thrust/complex.h); mpnanny stand-in (see ../host_defines.h): declarations and trivial
// accessors only.
#pragma once
#include "../host_defines.h"
#include <complex>

namespace thrust {
template <typename T> struct complex {
  typedef T value_type;
  __host__ __device__ complex(const T &re = T(), const T &im = T()) : re_(re), im_(im) {}
  template <typename U>
  __host__ __device__ complex(const complex<U> &z) : re_(T(z.real())), im_(T(z.imag())) {}
  template <typename U>
  __host__ complex(const std::complex<U> &z) : re_(T(z.real())), im_(T(z.imag())) {}
  __host__ __device__ T real() const volatile { return re_; }
  __host__ __device__ T imag() const volatile { return im_; }
  __host__ __device__ T real() const { return re_; }
  __host__ __device__ T imag() const { return im_; }
  __host__ __device__ void real(T re) { re_ = re; }
  __host__ __device__ void imag(T im) { im_ = im; }
  template <typename U> __host__ __device__ complex &operator+=(const complex<U> &z);
  template <typename U> __host__ __device__ complex &operator-=(const complex<U> &z);
  template <typename U> __host__ __device__ complex &operator*=(const complex<U> &z);
  template <typename U> __host__ __device__ complex &operator/=(const complex<U> &z);
  __host__ operator std::complex<T>() const { return std::complex<T>(re_, im_); }

private:
  T re_, im_;
};

template <typename T> __host__ __device__ T abs(const complex<T> &z);
template <typename T> __host__ __device__ T arg(const complex<T> &z);
template <typename T> __host__ __device__ T norm(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> conj(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> polar(const T &m, const T &theta = T());
template <typename T> __host__ __device__ complex<T> proj(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> exp(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> log(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> log10(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> sqrt(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> sin(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> cos(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> tan(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> asin(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> acos(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> atan(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> sinh(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> cosh(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> tanh(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> asinh(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> acosh(const complex<T> &z);
template <typename T> __host__ __device__ complex<T> atanh(const complex<T> &z);
template <typename T, typename U>
__host__ __device__ complex<T> pow(const complex<T> &x, const complex<U> &y);
template <typename T, typename U>
__host__ __device__ complex<T> pow(const complex<T> &x, const U &y);
template <typename T, typename U>
__host__ __device__ complex<U> pow(const T &x, const complex<U> &y);
template <typename T>
__host__ __device__ complex<T> operator+(const complex<T> &a, const complex<T> &b);
template <typename T>
__host__ __device__ complex<T> operator-(const complex<T> &a, const complex<T> &b);
template <typename T>
__host__ __device__ complex<T> operator*(const complex<T> &a, const complex<T> &b);
template <typename T>
__host__ __device__ complex<T> operator/(const complex<T> &a, const complex<T> &b);
template <typename T> __host__ __device__ bool operator==(const complex<T> &a, const complex<T> &b);
template <typename T> __host__ __device__ bool operator!=(const complex<T> &a, const complex<T> &b);
} // namespace thrust
