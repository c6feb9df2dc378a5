/* OpenBLAS' CBLAS entry points under scipy-openblas32's prefixed names, for the C sources (cffi does not read
   this header). They are resolved at load time from libscipy_openblas.so, which core_cpu_c preloads with
   RTLD_GLOBAL: the extension is not linked against it (an rpath into pip's temporary build environment would
   dangle). */
#ifndef CCC_CBLAS_H
#define CCC_CBLAS_H

#include <stddef.h>

enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };

void scipy_cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda,
                       const float* b, int ldb, float beta, float* c, int ldc);
void scipy_cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha, const double* a, int lda,
                       const double* b, int ldb, double beta, double* c, int ldc);
void scipy_openblas_set_num_threads(int n);
int scipy_openblas_get_num_threads(void);
/* OpenBLAS >= 0.3.27: its parallel jobs handed to the caller's threads instead of its own pool (NULL: its pool) */
typedef void (*scipy_openblas_dojob)(int thread_num, void* jobdata, int dojob_data);
typedef void (*scipy_openblas_threads)(int sync, scipy_openblas_dojob dojob, int numjobs, size_t jobdata_elsize,
                                       void* jobdata, int dojob_data);
void scipy_openblas_set_threads_callback_function(scipy_openblas_threads callback);

#endif
