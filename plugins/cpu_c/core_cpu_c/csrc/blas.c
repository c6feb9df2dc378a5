/* Batched GEMM through OpenBLAS (scipy-openblas32's prefixed CBLAS, see cblas.h), the shared thread count, and
   OpenBLAS's parallel work on cpu_c's OpenMP threads. */
#include <stdio.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <pthread.h>
#endif

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

/* out = act(A @ B + bias + residual), one float32 product on OpenBLAS (operands as ccc_gemm_float32's; bias: m
   elements or NULL; residual: dense n x m or NULL): as PyTorch's addmm, the bias is written into C first and sgemm
   adds the product (beta 1); then one pass adds the residual and applies the activation, 0 none or 1 relu (relu's
   NaN and -0.0 as the relu kernel's). The roundings are eager's: linear, then add, then relu, so a traced graph
   whose epilogue pass fused them gives eager's bits. -1, nothing written, for another activation. */
int ccc_linear_float32(int n, int m, int k, const void* a_, int ta, int lda, const void* b_, int tb, int ldb,
                       const void* bias_, const void* residual_, int activation, void* c_) {
    const float *a = (const float*)a_, *b = (const float*)b_, *bias = (const float*)bias_;
    const float* residual = (const float*)residual_;
    float* c = (float*)c_;
    if (activation != 0 && activation != 1) return -1;
    const long long nm = (long long)n * m;
    if (bias) {
        #pragma omp parallel for schedule(static) if(nm >= 32768)
        for (int i = 0; i < n; i++) {
            float* row = c + (long long)i * m;
            #pragma omp simd
            for (int j = 0; j < m; j++) row[j] = bias[j];
        }
    }
    scipy_cblas_sgemm(CBLAS_ROW_MAJOR, ta ? CBLAS_TRANS : CBLAS_NO_TRANS, tb ? CBLAS_TRANS : CBLAS_NO_TRANS, n, m, k,
                      1.0f, a, lda, b, ldb, bias ? 1.0f : 0.0f, c, m);
    if (residual || activation) {
        #pragma omp parallel for simd schedule(static) if(parallel: nm >= 32768)
        for (long long i = 0; i < nm; i++) {
            const float v = residual ? c[i] + residual[i] : c[i];
            c[i] = activation == 0 || v > 0 || v != v ? v : 0.0f;
        }
    }
    return 0;
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

/* One thread pool. OpenBLAS's pthreads build keeps a pool of its own, and a GEMM's workers then compete with the
   OpenMP team of cpu_c's kernels and oneDNN for the same cores (session 38: the MLP step at 97-120 steps/s on
   OpenBLAS against 160-216 on oneDNN, whose matmul shares the OpenMP team). OpenBLAS >= 0.3.27 can hand its
   parallel jobs to a callback instead: pool_callback runs them on the OpenMP team.
   - Every job of a call must run at the same time: OpenBLAS's level-3 drivers spin until the other jobs have
     packed their parts. So the team's size is checked before any job starts; a team short of the jobs (a call from
     inside a parallel region with nesting off, a thread limit) runs them on threads made for the call.
   - One call at a time: job i uses OpenBLAS's static buffer i whichever call it belongs to (its own pool
     serialises callers through its queue, which the callback bypasses).
   - A child made by fork() gets OpenBLAS's own pool back (libgomp is not usable there once a team ran). */
#ifdef _OPENMP
typedef struct {
    scipy_openblas_dojob dojob;
    char* jobdata;
    size_t size;
    int data, index;
} blas_job;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static long long pool_calls[2]; /* calls run on the OpenMP team, on threads made for the call (under pool_lock) */

static void* run_blas_job(void* arg) {
    const blas_job* j = (const blas_job*)arg;
    j->dojob(j->index, j->jobdata + (size_t)j->index * j->size, j->data);
    return NULL;
}

static void run_on_new_threads(scipy_openblas_dojob dojob, int numjobs, size_t size, char* jobdata, int data) {
    blas_job* jobs = (blas_job*)malloc(sizeof(blas_job) * (size_t)numjobs);
    pthread_t* threads = (pthread_t*)malloc(sizeof(pthread_t) * (size_t)numjobs);
    if (!jobs || !threads) {
        fprintf(stderr, "core_cpu_c: cannot allocate %d OpenBLAS jobs; aborting (the jobs wait on each other)\n",
                numjobs);
        abort();
    }
    for (int i = 0; i < numjobs; ++i) {
        jobs[i] = (blas_job){dojob, jobdata, size, data, i};
        if (i > 0 && pthread_create(&threads[i], NULL, run_blas_job, &jobs[i])) {
            /* the jobs already started spin until this one has run: no way back */
            fprintf(stderr, "core_cpu_c: cannot start a thread for OpenBLAS job %d of %d; aborting\n", i, numjobs);
            abort();
        }
    }
    run_blas_job(&jobs[0]);
    for (int i = 1; i < numjobs; ++i) pthread_join(threads[i], NULL);
    free(threads);
    free(jobs);
}

static void pool_callback(int sync, scipy_openblas_dojob dojob, int numjobs, size_t size, void* jobdata, int data) {
    (void)sync; /* OpenBLAS passes 1: every job done on return, as here */
    char* base = (char*)jobdata;
    pthread_mutex_lock(&pool_lock);
    int team = 0;
    if (numjobs > 1) {
        #pragma omp parallel num_threads(numjobs)
        {
            #pragma omp single
            team = omp_get_num_threads();
            /* the single's barrier: no job starts before the whole team is known */
            if (team == numjobs) {
                const int i = omp_get_thread_num();
                dojob(i, base + (size_t)i * size, data);
            }
        }
    }
    if (numjobs == 1)
        dojob(0, base, data);
    else if (numjobs > 1 && team != numjobs)
        run_on_new_threads(dojob, numjobs, size, base, data);
    pool_calls[numjobs > 1 && team != numjobs]++;
    pthread_mutex_unlock(&pool_lock);
}

static void reset_in_child(void) {
    scipy_openblas_set_threads_callback_function(NULL);
    pthread_mutex_init(&pool_lock, NULL); /* a parent's thread may have held it at fork() */
}
#endif

int ccc_blas_pool(int install) {
#ifdef _OPENMP
    static int registered;
    if (install && !registered) registered = !pthread_atfork(NULL, NULL, reset_in_child);
    install = install && registered;
    scipy_openblas_set_threads_callback_function(install ? pool_callback : NULL);
    return install;
#else
    (void)install; /* no OpenMP team to share: OpenBLAS keeps its pool */
    return 0;
#endif
}

long long ccc_blas_pool_calls(int fallback) {
#ifdef _OPENMP
    pthread_mutex_lock(&pool_lock);
    long long n = pool_calls[fallback != 0];
    pthread_mutex_unlock(&pool_lock);
    return n;
#else
    (void)fallback;
    return 0;
#endif
}

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
