/* Row reductions (sum, amax, amin) and fused softmax/log_softmax over contiguous rows, OpenMP over rows.

Operands are validated in Python (kernels.py): bounds, dtype, a contiguous trailing block per row.
Sums accumulate in double (per vector lane): as accurate as NumPy's pairwise float32 sum or better.
amax/amin propagate NaN like NumPy.
When there are fewer rows than threads (x.sum() of a whole tensor), each row is split into per-thread chunks. */
#include <math.h>
#include <stdlib.h>

#include "omp_compat.h"
#include "reduce.h"

#define LANES 16 /* independent accumulators per row: several vector registers */
#define PARALLEL_MIN 32768LL /* elements below which a loop stays on one thread, as for the elementwise kernels */

/* Sum / extremum of one contiguous run of n elements (extrema need n >= 1). Lane arrays under `omp simd` let
   the compiler keep LANES accumulators in several vector registers (a reordering plain -O3 would not do). The
   extremum's select drops NaNs: c += v - v turns NaN on a NaN (or an infinity), and then a rescan finds
   whether a NaN was there. */
#define DEFINE_ROW_OPS(T, NAME, CMP)                                                                                   \
    static T row_##NAME##_##T(const T* x, long long n) {                                                               \
        T m[LANES], c[LANES];                                                                                          \
        long long i = 0;                                                                                               \
        for (int l = 0; l < LANES; l++) m[l] = x[0], c[l] = 0;                                                         \
        for (; i + LANES <= n; i += LANES) {                                                                           \
            _Pragma("omp simd") for (int l = 0; l < LANES; l++) {                                                      \
                m[l] = x[i + l] CMP m[l] ? x[i + l] : m[l];                                                            \
                c[l] += x[i + l] - x[i + l];                                                                           \
            }                                                                                                          \
        }                                                                                                              \
        T r = m[0], chk = 0;                                                                                           \
        for (int l = 0; l < LANES; l++) r = m[l] CMP r ? m[l] : r, chk += c[l];                                        \
        for (; i < n; i++) r = x[i] CMP r ? x[i] : r, chk += x[i] - x[i];                                              \
        if (chk != chk)                                                                                                \
            for (i = 0; i < n; i++)                                                                                    \
                if (x[i] != x[i]) return x[i];                                                                         \
        return r;                                                                                                      \
    }

#define DEFINE_ROW_SUM(T)                                                                                              \
    static double row_sum_##T(const T* x, long long n) {                                                               \
        double acc[LANES] = {0}, s = 0;                                                                                \
        long long i = 0;                                                                                               \
        for (; i + LANES <= n; i += LANES) {                                                                           \
            _Pragma("omp simd") for (int l = 0; l < LANES; l++) acc[l] += (double)x[i + l];                            \
        }                                                                                                              \
        for (; i < n; i++) s += (double)x[i];                                                                          \
        for (int l = 0; l < LANES; l++) s += acc[l];                                                                   \
        return s;                                                                                                      \
    }                                                                                                                  \
    /* sign = 1: maximum, -1: minimum */                                                                               \
    static T row_ext_##T(const T* x, long long n, int sign) {                                                          \
        return sign > 0 ? row_max_##T(x, n) : row_min_##T(x, n);                                                       \
    }

DEFINE_ROW_OPS(float, max, >)
DEFINE_ROW_OPS(float, min, <)
DEFINE_ROW_OPS(double, max, >)
DEFINE_ROW_OPS(double, min, <)
DEFINE_ROW_SUM(float)
DEFINE_ROW_SUM(double)

/* Per-thread chunks of one long row (rows < threads): partial results, then combined in order. */
static int split_count(long long rows, long long cols) {
    int threads = omp_get_max_threads();
    if (rows >= threads || rows * cols < PARALLEL_MIN || threads < 2) return 1;
    return threads < 256 ? threads : 256; /* the partial arrays' size */
}

#define DEFINE_REDUCTIONS(T, NAME)                                                                                     \
    void ccc_sum_##NAME(long long rows, long long cols, const void* in_base, long long in_off,                         \
                        long long row_stride, void* out_base) {                                                        \
        const T* in = (const T*)in_base + in_off;                                                                      \
        T* out = (T*)out_base;                                                                                         \
        int parts = split_count(rows, cols);                                                                           \
        if (parts > 1) {                                                                                               \
            long long chunk = (cols + parts - 1) / parts;                                                              \
            for (long long r = 0; r < rows; r++) {                                                                     \
                double partial[256] = {0};                                                                             \
                const T* x = in + r * row_stride;                                                                      \
                _Pragma("omp parallel for num_threads(parts)") for (int p = 0; p < parts; p++) {                       \
                    long long lo = p * chunk, hi = lo + chunk < cols ? lo + chunk : cols;                              \
                    partial[p] = lo < hi ? row_sum_##T(x + lo, hi - lo) : 0.0;                                         \
                }                                                                                                      \
                double s = 0;                                                                                          \
                for (int p = 0; p < parts; p++) s += partial[p];                                                       \
                out[r] = (T)s;                                                                                         \
            }                                                                                                          \
            return;                                                                                                    \
        }                                                                                                              \
        _Pragma("omp parallel for schedule(static) if(rows * cols >= PARALLEL_MIN)")                                   \
        for (long long r = 0; r < rows; r++) out[r] = (T)row_sum_##T(in + r * row_stride, cols);                       \
    }                                                                                                                  \
    static void extremum_##NAME(long long rows, long long cols, const T* in, long long row_stride, T* out,             \
                                int sign) {                                                                            \
        int parts = split_count(rows, cols);                                                                           \
        if (parts > 1) {                                                                                               \
            long long chunk = (cols + parts - 1) / parts;                                                              \
            for (long long r = 0; r < rows; r++) {                                                                     \
                T partial[256];                                                                                        \
                int used = (int)((cols + chunk - 1) / chunk);                                                          \
                const T* x = in + r * row_stride;                                                                      \
                _Pragma("omp parallel for num_threads(parts)") for (int p = 0; p < used; p++) {                        \
                    long long lo = p * chunk, hi = lo + chunk < cols ? lo + chunk : cols;                              \
                    partial[p] = row_ext_##T(x + lo, hi - lo, sign);                                                   \
                }                                                                                                      \
                out[r] = row_ext_##T(partial, used, sign);                                                             \
            }                                                                                                          \
            return;                                                                                                    \
        }                                                                                                              \
        _Pragma("omp parallel for schedule(static) if(rows * cols >= PARALLEL_MIN)")                                   \
        for (long long r = 0; r < rows; r++) out[r] = row_ext_##T(in + r * row_stride, cols, sign);                    \
    }                                                                                                                  \
    void ccc_amax_##NAME(long long rows, long long cols, const void* in_base, long long in_off,                        \
                         long long row_stride, void* out) {                                                            \
        extremum_##NAME(rows, cols, (const T*)in_base + in_off, row_stride, (T*)out, 1);                               \
    }                                                                                                                  \
    void ccc_amin_##NAME(long long rows, long long cols, const void* in_base, long long in_off,                        \
                         long long row_stride, void* out) {                                                            \
        extremum_##NAME(rows, cols, (const T*)in_base + in_off, row_stride, (T*)out, -1);                              \
    }

DEFINE_REDUCTIONS(float, float32)
DEFINE_REDUCTIONS(double, float64)

/* softmax: exp(x - max) / sum(exp(x - max)); log: (x - max) - log(sum(exp(x - max))); the formula of NumPy's
   kernel, so NaN and infinities come out the same (a NaN or +inf in a row makes NaNs). Rows have cols >= 1. */
#define DEFINE_SOFTMAX(T, NAME, EXP, LOG)                                                                              \
    void ccc_softmax_##NAME(long long rows, long long cols, const void* in_base, long long in_off,                     \
                            long long row_stride, void* out_base, int take_log) {                                      \
        const T* in = (const T*)in_base + in_off;                                                                      \
        T* out_all = (T*)out_base;                                                                                     \
        _Pragma("omp parallel for schedule(static) if(rows * cols >= PARALLEL_MIN)")                                   \
        for (long long r = 0; r < rows; r++) {                                                                         \
            const T* x = in + r * row_stride;                                                                          \
            T* y = out_all + r * cols;                                                                                 \
            T m = row_ext_##T(x, cols, 1);                                                                             \
            double s = 0;                                                                                              \
            for (long long i = 0; i < cols; i++) {                                                                     \
                T e = EXP(x[i] - m);                                                                                   \
                s += (double)e;                                                                                        \
                if (!take_log) y[i] = e;                                                                               \
            }                                                                                                          \
            if (take_log) {                                                                                            \
                T ls = (T)LOG(s);                                                                                      \
                for (long long i = 0; i < cols; i++) y[i] = (x[i] - m) - ls;                                           \
            } else {                                                                                                   \
                T ts = (T)s;                                                                                           \
                for (long long i = 0; i < cols; i++) y[i] = y[i] / ts;                                                 \
            }                                                                                                          \
        }                                                                                                              \
    }

DEFINE_SOFTMAX(float, float32, expf, log)
DEFINE_SOFTMAX(double, float64, exp, log)
