// Mock of ATen/Dispatch.h (LibTorch 2.x): the dispatch macros switch on a ScalarType and, in
// each case, declare `using scalar_t = <the C++ type>` and call the lambda they are given.
#pragma once
#include <c10/util/Half.h>
#include <torch/torch.h>

namespace c10::impl {
template <c10::ScalarType N> struct ScalarTypeToCPPType;
#define MPNANNY_MOCK_CPP_TYPE(cpp_type, scalar_type)                                               \
  template <> struct ScalarTypeToCPPType<c10::ScalarType::scalar_type> {                           \
    using type = cpp_type;                                                                         \
  };
MPNANNY_MOCK_CPP_TYPE(uint8_t, Byte)
MPNANNY_MOCK_CPP_TYPE(int8_t, Char)
MPNANNY_MOCK_CPP_TYPE(int16_t, Short)
MPNANNY_MOCK_CPP_TYPE(int, Int)
MPNANNY_MOCK_CPP_TYPE(int64_t, Long)
MPNANNY_MOCK_CPP_TYPE(c10::Half, Half)
MPNANNY_MOCK_CPP_TYPE(float, Float)
MPNANNY_MOCK_CPP_TYPE(double, Double)
MPNANNY_MOCK_CPP_TYPE(bool, Bool)
MPNANNY_MOCK_CPP_TYPE(c10::BFloat16, BFloat16)
#undef MPNANNY_MOCK_CPP_TYPE
template <c10::ScalarType N> using ScalarTypeToCPPTypeT = typename ScalarTypeToCPPType<N>::type;
} // namespace c10::impl

#define AT_PRIVATE_CASE_TYPE_USING_HINT(enum_type, HINT, ...)                                      \
  case enum_type: {                                                                                \
    using HINT = c10::impl::ScalarTypeToCPPTypeT<enum_type>;                                       \
    return __VA_ARGS__();                                                                          \
  }

#define AT_DISPATCH_CASE(enum_type, ...)                                                           \
  AT_PRIVATE_CASE_TYPE_USING_HINT(enum_type, scalar_t, __VA_ARGS__)

#define AT_DISPATCH_SWITCH(TYPE, NAME, ...)                                                        \
  [&] {                                                                                            \
    const auto &the_type = TYPE;                                                                   \
    at::ScalarType _st = the_type;                                                                 \
    switch (_st) {                                                                                 \
      __VA_ARGS__                                                                                  \
    default:                                                                                       \
      break;                                                                                       \
    }                                                                                              \
  }()

#define AT_DISPATCH_CASE_FLOATING_TYPES(...)                                                       \
  AT_DISPATCH_CASE(at::ScalarType::Double, __VA_ARGS__)                                            \
  AT_DISPATCH_CASE(at::ScalarType::Float, __VA_ARGS__)
#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...)                                                \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__))

#define AT_DISPATCH_CASE_FLOATING_TYPES_AND_HALF(...)                                              \
  AT_DISPATCH_CASE(at::ScalarType::Double, __VA_ARGS__)                                            \
  AT_DISPATCH_CASE(at::ScalarType::Float, __VA_ARGS__)                                             \
  AT_DISPATCH_CASE(at::ScalarType::Half, __VA_ARGS__)
#define AT_DISPATCH_FLOATING_TYPES_AND_HALF(TYPE, NAME, ...)                                       \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_FLOATING_TYPES_AND_HALF(__VA_ARGS__))

#define AT_DISPATCH_CASE_REDUCED_FLOATING_TYPES(...)                                               \
  AT_DISPATCH_CASE(at::ScalarType::Half, __VA_ARGS__)                                              \
  AT_DISPATCH_CASE(at::ScalarType::BFloat16, __VA_ARGS__)
#define AT_DISPATCH_REDUCED_FLOATING_TYPES(TYPE, NAME, ...)                                        \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_REDUCED_FLOATING_TYPES(__VA_ARGS__))

#define AT_DISPATCH_CASE_FLOATING_TYPES_AND(SCALARTYPE, ...)                                       \
  AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__)                                                     \
  AT_DISPATCH_CASE(SCALARTYPE, __VA_ARGS__)
#define AT_DISPATCH_FLOATING_TYPES_AND(SCALARTYPE, TYPE, NAME, ...)                                \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_FLOATING_TYPES_AND(SCALARTYPE, __VA_ARGS__))

#define AT_DISPATCH_CASE_FLOATING_TYPES_AND2(SCALARTYPE1, SCALARTYPE2, ...)                        \
  AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__)                                                     \
  AT_DISPATCH_CASE(SCALARTYPE1, __VA_ARGS__)                                                       \
  AT_DISPATCH_CASE(SCALARTYPE2, __VA_ARGS__)
#define AT_DISPATCH_FLOATING_TYPES_AND2(SCALARTYPE1, SCALARTYPE2, TYPE, NAME, ...)                 \
  AT_DISPATCH_SWITCH(TYPE, NAME,                                                                   \
                     AT_DISPATCH_CASE_FLOATING_TYPES_AND2(SCALARTYPE1, SCALARTYPE2, __VA_ARGS__))

#define AT_DISPATCH_CASE_FLOATING_TYPES_AND3(SCALARTYPE1, SCALARTYPE2, SCALARTYPE3, ...)           \
  AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__)                                                     \
  AT_DISPATCH_CASE(SCALARTYPE1, __VA_ARGS__)                                                       \
  AT_DISPATCH_CASE(SCALARTYPE2, __VA_ARGS__)                                                       \
  AT_DISPATCH_CASE(SCALARTYPE3, __VA_ARGS__)
#define AT_DISPATCH_FLOATING_TYPES_AND3(SCALARTYPE1, SCALARTYPE2, SCALARTYPE3, TYPE, NAME, ...)    \
  AT_DISPATCH_SWITCH(TYPE, NAME,                                                                   \
                     AT_DISPATCH_CASE_FLOATING_TYPES_AND3(SCALARTYPE1, SCALARTYPE2, SCALARTYPE3,   \
                                                          __VA_ARGS__))
