// Mock of ATen's dispatch macros: each case binds scalar_t to the C++ type of a dtype and
// calls the lambda, as ATen/Dispatch.h does (AT_PRIVATE_CASE_TYPE, AT_DISPATCH_CASE).
#pragma once
#include <c10/util/Half.h>
#include <torch/torch.h>

#define AT_PRIVATE_CASE_TYPE(enum_type, type, ...)                                                 \
  case enum_type: {                                                                                \
    using scalar_t = type;                                                                         \
    return __VA_ARGS__();                                                                          \
  }

#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...)                                                \
  [&] {                                                                                            \
    switch (TYPE) {                                                                                \
      AT_PRIVATE_CASE_TYPE(at::ScalarType::Double, double, __VA_ARGS__)                            \
      AT_PRIVATE_CASE_TYPE(at::ScalarType::Float, float, __VA_ARGS__)                              \
    default:                                                                                       \
      break;                                                                                       \
    }                                                                                              \
  }()

#define AT_DISPATCH_FLOATING_TYPES_AND_HALF(TYPE, NAME, ...)                                       \
  [&] {                                                                                            \
    switch (TYPE) {                                                                                \
      AT_PRIVATE_CASE_TYPE(at::ScalarType::Double, double, __VA_ARGS__)                            \
      AT_PRIVATE_CASE_TYPE(at::ScalarType::Float, float, __VA_ARGS__)                              \
      AT_PRIVATE_CASE_TYPE(at::ScalarType::Half, at::Half, __VA_ARGS__)                            \
    default:                                                                                       \
      break;                                                                                       \
    }                                                                                              \
  }()

#define AT_DISPATCH_FLOATING_TYPES_AND2(SCALARTYPE1, SCALARTYPE2, TYPE, NAME, ...)                 \
  [&] {                                                                                            \
    switch (TYPE) {                                                                                \
      AT_PRIVATE_CASE_TYPE(at::ScalarType::Double, double, __VA_ARGS__)                            \
      AT_PRIVATE_CASE_TYPE(at::ScalarType::Float, float, __VA_ARGS__)                              \
      AT_PRIVATE_CASE_TYPE(at::ScalarType::Half, at::Half, __VA_ARGS__)                            \
      AT_PRIVATE_CASE_TYPE(at::ScalarType::BFloat16, at::BFloat16, __VA_ARGS__)                    \
    default:                                                                                       \
      break;                                                                                       \
    }                                                                                              \
  }()
