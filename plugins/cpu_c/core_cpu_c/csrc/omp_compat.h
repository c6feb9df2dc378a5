/* OpenMP when compiled with -fopenmp, a single thread otherwise. */
#ifndef CCC_OMP_COMPAT_H
#define CCC_OMP_COMPAT_H
#ifdef _OPENMP
#include <omp.h>
#else
static inline int omp_get_num_threads(void) { return 1; }
static inline int omp_get_thread_num(void) { return 0; }
static inline int omp_get_max_threads(void) { return 1; }
static inline void omp_set_num_threads(int n) { (void)n; }
#endif
#endif
