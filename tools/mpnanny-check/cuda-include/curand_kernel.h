// cuRAND's device API: the generator states and the draws kernels make (cuRAND reference,
// "Device API Overview"); mpnanny stand-in (see host_defines.h).
#pragma once
#include "curand.h"
#include "host_defines.h"
#include "vector_types.h"

struct curandStateXORWOW {
  unsigned int d, v[5];
  int boxmuller_flag, boxmuller_flag_double;
  float boxmuller_extra;
  double boxmuller_extra_double;
};
typedef struct curandStateXORWOW curandStateXORWOW_t;
typedef struct curandStateXORWOW curandState_t;
typedef struct curandStateXORWOW curandState;
struct curandStatePhilox4_32_10 {
  uint4 ctr;
  uint4 output;
  uint2 key;
  unsigned int STATE;
  int boxmuller_flag, boxmuller_flag_double;
  float boxmuller_extra;
  double boxmuller_extra_double;
};
typedef struct curandStatePhilox4_32_10 curandStatePhilox4_32_10_t;
struct curandStateMRG32k3a {
  unsigned int s1[3], s2[3];
  int boxmuller_flag, boxmuller_flag_double;
  float boxmuller_extra;
  double boxmuller_extra_double;
};
typedef struct curandStateMRG32k3a curandStateMRG32k3a_t;

#define __MPNANNY_CURAND_STATE(S)                                                                  \
  __device__ void curand_init(unsigned long long seed, unsigned long long subsequence,             \
                              unsigned long long offset, S *state);                                \
  __device__ unsigned int curand(S *state);                                                        \
  __device__ float curand_uniform(S *state);                                                       \
  __device__ double curand_uniform_double(S *state);                                               \
  __device__ float curand_normal(S *state);                                                        \
  __device__ double curand_normal_double(S *state);                                                \
  __device__ float2 curand_normal2(S *state);                                                      \
  __device__ float curand_log_normal(S *state, float mean, float stddev);                          \
  __device__ unsigned int curand_poisson(S *state, double lambda);
__MPNANNY_CURAND_STATE(curandStateXORWOW_t)
__MPNANNY_CURAND_STATE(curandStatePhilox4_32_10_t)
__MPNANNY_CURAND_STATE(curandStateMRG32k3a_t)
#undef __MPNANNY_CURAND_STATE
__device__ uint4 curand4(curandStatePhilox4_32_10_t *state);
__device__ float4 curand_uniform4(curandStatePhilox4_32_10_t *state);
__device__ float4 curand_normal4(curandStatePhilox4_32_10_t *state);
__device__ double2 curand_uniform2_double(curandStatePhilox4_32_10_t *state);
__device__ double2 curand_normal2_double(curandStatePhilox4_32_10_t *state);
