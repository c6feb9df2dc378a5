/* Hand-written kernels of the cpu_c backend (declarations cffi reads: plain C, no macros). */
void ccc_gemm_float32(long long batch, int n, int m, int k, const void* a_base, const long long* a_offs, int ta,
                      int lda, const void* b_base, const long long* b_offs, int tb, int ldb, void* c_base,
                      long long c_off);
void ccc_gemm_float64(long long batch, int n, int m, int k, const void* a_base, const long long* a_offs, int ta,
                      int lda, const void* b_base, const long long* b_offs, int tb, int ldb, void* c_base,
                      long long c_off);
/* out = act(A @ B + bias + residual) (bias, residual NULL for none; act 0 none, 1 relu): 0, or -1 for another act */
int ccc_linear_float32(int n, int m, int k, const void* a, int ta, int lda, const void* b, int tb, int ldb,
                       const void* bias, const void* residual, int activation, void* c);
/* half GEMMs: 0, or -1 when the float32 scratch could not be allocated */
int ccc_gemm_float16(long long batch, int n, int m, int k, const void* a_base, const long long* a_offs, int ta,
                     int lda, const void* b_base, const long long* b_offs, int tb, int ldb, void* c_base,
                     long long c_off);
int ccc_gemm_bfloat16(long long batch, int n, int m, int k, const void* a_base, const long long* a_offs, int ta,
                      int lda, const void* b_base, const long long* b_offs, int tb, int ldb, void* c_base,
                      long long c_off);
int ccc_half_path(void);
void ccc_set_num_threads(int n);
int ccc_get_num_threads(void);
int ccc_blas_num_threads(void);
/* 1: OpenBLAS's parallel jobs run on cpu_c's OpenMP threads (installed), 0: on OpenBLAS's own pool */
int ccc_blas_pool(int install);
/* how many parallel OpenBLAS calls ran on the OpenMP threads, and how many of them on threads made for the call */
long long ccc_blas_pool_calls(int fallback);
int ccc_has_openmp(void);
/* 0: libm scalar transcendentals; else the float32 lanes of the libmvec calls (csrc/vecmath.h) */
int ccc_vector_math(void);
