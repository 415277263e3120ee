// Mock of ATen/AccumulateType.h: the type a kernel accumulates a scalar_t in.
#pragma once
#include <c10/util/Half.h>

namespace at {
template <typename T, bool is_cuda> struct AccumulateType {};
template <> struct AccumulateType<c10::Half, true> { using type = float; };
template <> struct AccumulateType<c10::BFloat16, true> { using type = float; };
template <> struct AccumulateType<float, true> { using type = float; };
template <> struct AccumulateType<double, true> { using type = double; };
template <> struct AccumulateType<c10::Half, false> { using type = float; };
template <> struct AccumulateType<c10::BFloat16, false> { using type = float; };
template <> struct AccumulateType<float, false> { using type = double; };
template <> struct AccumulateType<double, false> { using type = double; };
template <typename T, bool is_cuda> using acc_type = typename AccumulateType<T, is_cuda>::type;
} // namespace at
