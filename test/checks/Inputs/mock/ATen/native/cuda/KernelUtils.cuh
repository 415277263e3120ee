// Mock of ATen/native/cuda/KernelUtils.cuh: fastAtomicAdd(tensor, index, numel, value, fast).
#pragma once
template <typename scalar_t, typename index_t>
void fastAtomicAdd(scalar_t *tensor, index_t index, const index_t numel, scalar_t value,
                   bool fast_atomics);
