// Mock of ATen/OpMathType.h: the type a kernel computes a scalar_t in.
#pragma once
#include <c10/util/Half.h>

namespace at {
template <typename T> struct OpMathType { using type = T; };
template <> struct OpMathType<c10::Half> { using type = float; };
template <> struct OpMathType<c10::BFloat16> { using type = float; };
template <typename T> using opmath_type = typename OpMathType<T>::type;
} // namespace at
