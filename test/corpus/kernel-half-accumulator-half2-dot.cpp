// Hand-written fp16 GEMV: a half2 dot product over K, and the cuBLAS calls around it.
#include <cuda_fp16_mock.h>

half2 dot_half2(const half2 *a, const half2 *b, int k) {
  half2 acc = __float2half2_rn(0.f); // expect: mpnanny-kernel-half-accumulator
  for (int i = 0; i < k; ++i)
    acc = __hfma2(a[i], b[i], acc);
  return acc;
}

float dot_float(const __half *a, const __half *b, int k) {
  float acc = 0.f; // ok: mpnanny-kernel-half-accumulator
  for (int i = 0; i < k; ++i)
    acc += __half2float(a[i]) * __half2float(b[i]);
  return acc;
}

void project(cublasHandle_t h, const __half *A, const __half *B, __half *C, int m, int n, int k,
             const __half *alpha, const __half *beta, const float *alpha32, const float *beta32) {
  cublasHgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, alpha, A, m, B, k, beta, C, m); // expect: mpnanny-kernel-half-accumulator
  cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, alpha32, A, CUDA_R_16F, m, B, CUDA_R_16F, k,
               beta32, C, CUDA_R_16F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT); // ok: mpnanny-kernel-half-accumulator
}
