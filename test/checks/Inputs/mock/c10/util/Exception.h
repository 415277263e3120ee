// Mock of c10/util/Exception.h: TORCH_CHECK.
#pragma once
#define TORCH_CHECK(cond, ...)                                                                     \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
    }                                                                                              \
  } while (false)
