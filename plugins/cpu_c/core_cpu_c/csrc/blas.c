/* Batched GEMM through OpenBLAS (scipy-openblas32's prefixed CBLAS, see cblas.h), and the shared thread count. */
#include "cblas.h"
#include "kernels.h"
#include "omp_compat.h"

/* C[i] = A[i] @ B[i] for every batch i; operands given by element offsets from their bases (validated in Python).
   ta/tb: 1 = the operand is stored transposed (column-major), so BLAS reads it with a transpose flag, no copy. */
void ccc_gemm_float32(long long batch, int n, int m, int k, const void* a_base, const long long* a_offs, int ta,
                      int lda, const void* b_base, const long long* b_offs, int tb, int ldb, void* c_base,
                      long long c_off) {
    const float* a = (const float*)a_base;
    const float* b = (const float*)b_base;
    float* c = (float*)c_base + c_off;
    for (long long i = 0; i < batch; i++)
        scipy_cblas_sgemm(CBLAS_ROW_MAJOR, ta ? CBLAS_TRANS : CBLAS_NO_TRANS, tb ? CBLAS_TRANS : CBLAS_NO_TRANS,
                          n, m, k, 1.0f, a + a_offs[i], lda, b + b_offs[i], ldb, 0.0f, c + i * (long long)n * m, m);
}

void ccc_gemm_float64(long long batch, int n, int m, int k, const void* a_base, const long long* a_offs, int ta,
                      int lda, const void* b_base, const long long* b_offs, int tb, int ldb, void* c_base,
                      long long c_off) {
    const double* a = (const double*)a_base;
    const double* b = (const double*)b_base;
    double* c = (double*)c_base + c_off;
    for (long long i = 0; i < batch; i++)
        scipy_cblas_dgemm(CBLAS_ROW_MAJOR, ta ? CBLAS_TRANS : CBLAS_NO_TRANS, tb ? CBLAS_TRANS : CBLAS_NO_TRANS,
                          n, m, k, 1.0, a + a_offs[i], lda, b + b_offs[i], ldb, 0.0, c + i * (long long)n * m, m);
}

void ccc_set_num_threads(int n) {
    omp_set_num_threads(n);
    scipy_openblas_set_num_threads(n);
}

int ccc_get_num_threads(void) { return omp_get_max_threads(); }

int ccc_blas_num_threads(void) { return scipy_openblas_get_num_threads(); }

int ccc_has_openmp(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}
