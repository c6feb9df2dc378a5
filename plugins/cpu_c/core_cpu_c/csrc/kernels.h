/* Hand-written kernels of the cpu_c backend (declarations cffi reads: plain C, no macros). */
void ccc_gemm_float32(long long batch, int n, int m, int k, const void* a_base, const long long* a_offs, int ta,
                      int lda, const void* b_base, const long long* b_offs, int tb, int ldb, void* c_base,
                      long long c_off);
void ccc_gemm_float64(long long batch, int n, int m, int k, const void* a_base, const long long* a_offs, int ta,
                      int lda, const void* b_base, const long long* b_offs, int tb, int ldb, void* c_base,
                      long long c_off);
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
int ccc_has_openmp(void);
/* 0: libm scalar transcendentals; else the float32 lanes of the libmvec calls (csrc/vecmath.h) */
int ccc_vector_math(void);
