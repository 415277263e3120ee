// Mock of ATen/cuda/Atomic.cuh: atomic additions for every scalar type (at::Half included).
#pragma once
template <typename T> T gpuAtomicAdd(T *address, T val);
template <typename T> void gpuAtomicAddNoReturn(T *address, T val);
