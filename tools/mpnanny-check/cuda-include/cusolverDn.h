// cuSOLVER's dense API: the handle type and its life cycle (cuSOLVER reference); mpnanny
// stand-in (see host_defines.h).
#pragma once
#include "cublas_api.h"
#include "cuda_runtime_api.h"
#include "cusolver_common.h"

typedef struct cusolverDnContext *cusolverDnHandle_t;
#ifdef __cplusplus
extern "C" {
#endif
cusolverStatus_t cusolverDnCreate(cusolverDnHandle_t *handle);
cusolverStatus_t cusolverDnDestroy(cusolverDnHandle_t handle);
cusolverStatus_t cusolverDnSetStream(cusolverDnHandle_t handle, cudaStream_t streamId);
#ifdef __cplusplus
}
#endif
