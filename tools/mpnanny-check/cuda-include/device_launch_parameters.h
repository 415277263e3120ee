// threadIdx, blockIdx, blockDim, gridDim and warpSize come from Clang's
// __clang_cuda_builtin_vars.h, which mpnanny_cuda_prelude.h includes (mpnanny stand-in: see
// host_defines.h).
#pragma once
