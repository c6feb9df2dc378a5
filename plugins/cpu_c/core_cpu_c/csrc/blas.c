/* Batched GEMM through OpenBLAS (scipy-openblas32's prefixed CBLAS, see cblas.h), and the shared thread count. */
#include <stdlib.h>

#include "cblas.h"
#include "half.h"
#include "kernels.h"
#include "omp_compat.h"
#include "vecmath.h"

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

/* float16/bfloat16 GEMM, as PyTorch's CPU one: float32 accumulation, the product rounded once. scipy-openblas32
   exports no half GEMM (no cblas_sbgemm: its builds leave BUILD_BFLOAT16 off), so each batch's operands are
   widened to dense float32 as stored (a transposed operand stays transposed: the flag goes on to sgemm), then
   sgemm, then one rounding per output element. */
static void widen_matrix(const unsigned short* x, int rows, int cols, int ld, float* out, int bf16) {
    #pragma omp parallel for schedule(static) if((long long)rows * cols >= 32768)
    for (int r = 0; r < rows; r++) {
        const unsigned short* row = x + (long long)r * ld;
        float* dst = out + (long long)r * cols;
        if (bf16) {
            for (int j = 0; j < cols; j++) dst[j] = ccc_bf16_load(row[j]);
        } else {
            for (int j = 0; j < cols; j++) dst[j] = ccc_f16_load(row[j]);
        }
    }
}

static int gemm_half(long long batch, int n, int m, int k, const unsigned short* a, const long long* a_offs, int ta,
                     int lda, const unsigned short* b, const long long* b_offs, int tb, int ldb, unsigned short* c,
                     int bf16) {
    float* fa = malloc(sizeof(float) * (size_t)n * (size_t)k);
    float* fb = malloc(sizeof(float) * (size_t)k * (size_t)m);
    float* fc = malloc(sizeof(float) * (size_t)n * (size_t)m);
    if (!fa || !fb || !fc) {
        free(fa), free(fb), free(fc);
        return -1;
    }
    const long long nm = (long long)n * m;
    for (long long i = 0; i < batch; i++) {
        /* the operands as stored: rows x cols, or cols x rows when transposed */
        widen_matrix(a + a_offs[i], ta ? k : n, ta ? n : k, lda, fa, bf16);
        if (i == 0 || b_offs[i] != b_offs[i - 1]) widen_matrix(b + b_offs[i], tb ? m : k, tb ? k : m, ldb, fb, bf16);
        scipy_cblas_sgemm(CBLAS_ROW_MAJOR, ta ? CBLAS_TRANS : CBLAS_NO_TRANS, tb ? CBLAS_TRANS : CBLAS_NO_TRANS, n, m,
                          k, 1.0f, fa, ta ? n : k, fb, tb ? k : m, 0.0f, fc, m);
        unsigned short* ci = c + i * nm;
        #pragma omp parallel for simd schedule(static) if(parallel: nm >= 32768)
        for (long long j = 0; j < nm; j++) ci[j] = bf16 ? ccc_bf16_store(fc[j]) : ccc_f16_store(fc[j]);
    }
    free(fa), free(fb), free(fc);
    return 0;
}

int ccc_gemm_float16(long long batch, int n, int m, int k, const void* a_base, const long long* a_offs, int ta,
                     int lda, const void* b_base, const long long* b_offs, int tb, int ldb, void* c_base,
                     long long c_off) {
    return gemm_half(batch, n, m, k, a_base, a_offs, ta, lda, b_base, b_offs, tb, ldb,
                     (unsigned short*)c_base + c_off, 0);
}

int ccc_gemm_bfloat16(long long batch, int n, int m, int k, const void* a_base, const long long* a_offs, int ta,
                      int lda, const void* b_base, const long long* b_offs, int tb, int ldb, void* c_base,
                      long long c_off) {
    return gemm_half(batch, n, m, k, a_base, a_offs, ta, lda, b_base, b_offs, tb, ldb,
                     (unsigned short*)c_base + c_off, 1);
}

/* Which float16 conversion was compiled (csrc/half.h): 1 = _Float16 with F16C instructions, 0 = portable bits. */
int ccc_half_path(void) { return CCC_F16_NATIVE; }

void ccc_set_num_threads(int n) {
    omp_set_num_threads(n);
    scipy_openblas_set_num_threads(n);
}

int ccc_get_num_threads(void) { return omp_get_max_threads(); }

int ccc_blas_num_threads(void) { return scipy_openblas_get_num_threads(); }

/* csrc/vecmath.h: 0 where libm's scalar functions serve the transcendental loops, else how many float32 lanes the
   libmvec variants they call take (4 SSE, 8 AVX2, 16 AVX-512); a portable build's clones are picked at load time
   (its AVX-512 clone needs more than AVX512F: x86-64-v4, which every AVX-512 processor but Xeon Phi has). */
int ccc_vector_math(void) {
#if !CCC_VECMATH
    return 0;
#elif defined(__AVX512F__)
    return 16;
#elif defined(__AVX2__)
    return 8;
#else
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") ? 16 : __builtin_cpu_supports("avx2") ? 8 : 4;
#endif
}

int ccc_has_openmp(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}
