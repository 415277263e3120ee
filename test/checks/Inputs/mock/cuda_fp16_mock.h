// What kernels use from cuda_fp16.h, cuda_bf16.h, the CUDA runtime and cuBLAS, as plain C++
// declarations, so that the check tests can be .cpp files (no __device__, no CUDA toolkit).
#pragma once

struct __half {
  unsigned short __x;
  __half() = default;
  __half(float f);
  operator float() const;
};
struct __half2 {
  __half x, y;
};
typedef __half half;
typedef __half2 half2;
struct __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f);
  operator float() const;
};
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};

// Conversions.
__half __float2half(float a);
__half __float2half_rn(float a);
float __half2float(__half a);
__half2 __float2half2_rn(float a);
__half2 __floats2half2_rn(float a, float b);
__nv_bfloat16 __float2bfloat16(float a);
float __bfloat162float(__nv_bfloat16 a);

// Arithmetic, rounded to the format.
__half __hadd(__half a, __half b);
__half __hsub(__half a, __half b);
__half __hmul(__half a, __half b);
__half __hfma(__half a, __half b, __half c);
__half2 __hadd2(__half2 a, __half2 b);
__half2 __hsub2(__half2 a, __half2 b);
__half2 __hmul2(__half2 a, __half2 b);
__half2 __hfma2(__half2 a, __half2 b, __half2 c);
__nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b);
__nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c);
__half operator+(const __half &a, const __half &b);
__half operator-(const __half &a, const __half &b);
__half operator*(const __half &a, const __half &b);
__half operator/(const __half &a, const __half &b);
__half &operator+=(__half &a, const __half &b);
__half &operator-=(__half &a, const __half &b);
__nv_bfloat16 operator+(const __nv_bfloat16 &a, const __nv_bfloat16 &b);
__nv_bfloat16 operator*(const __nv_bfloat16 &a, const __nv_bfloat16 &b);
__nv_bfloat16 &operator+=(__nv_bfloat16 &a, const __nv_bfloat16 &b);

// Math.
__half hexp(__half a);
__half2 h2exp(__half2 a);
__half hrsqrt(__half a);
__half2 h2rsqrt(__half2 a);
__half hmax(__half a, __half b);
float rsqrtf(float x);
float __expf(float x);

// Atomics.
float atomicAdd(float *address, float val);
double atomicAdd(double *address, double val);
__half atomicAdd(__half *address, __half val);
__half2 atomicAdd(__half2 *address, __half2 val);
__nv_bfloat16 atomicAdd(__nv_bfloat16 *address, __nv_bfloat16 val);

// cuBLAS.
typedef struct cublasContext *cublasHandle_t;
typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum cudaDataType_t { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 } cudaDataType;
typedef enum { CUBLAS_COMPUTE_16F = 64, CUBLAS_COMPUTE_32F = 68 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;
cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const __half *alpha,
                           const __half *A, int lda, const __half *B, int ldb, const __half *beta,
                           __half *C, int ldc);
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void *alpha,
                            const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo);
// CUDA 10's signature, kept by CUDA 11+ for C++: the compute type as a cudaDataType.
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void *alpha,
                            const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C,
                            cudaDataType Ctype, int ldc, cudaDataType computeType,
                            cublasGemmAlgo_t algo);
