/* Reductions of the cpu_c backend: row kernels (sum, amax, amin, fused softmax/log_softmax over contiguous rows,
OpenMP over rows), then a strided walk for every reduction over any dims and the scans (below).

Operands are validated in Python (reduce.py): bounds, dtype, non-negative strides; the row kernels get a
contiguous trailing block per row.
Sums accumulate in double (per vector lane): as accurate as NumPy's pairwise float32 sum or better.
amax/amin propagate NaN like NumPy.
When there are fewer rows than threads (x.sum() of a whole tensor), each row is split into per-thread chunks. */
#include <math.h>
#include <stdlib.h>

#include "omp_compat.h"
#include "half.h"
#include "reduce.h"
#include "vecmath.h"

#define LANES 16 /* independent accumulators per row: several vector registers */
#define PARALLEL_MIN 32768LL /* elements below which a loop stays on one thread, as for the elementwise kernels */

/* Sum / extremum of one contiguous run of n elements (extrema need n >= 1). Lane arrays under `omp simd` let
   the compiler keep LANES accumulators in several vector registers (a reordering plain -O3 would not do). The
   extremum's select drops NaNs: c += v - v turns NaN on a NaN (or an infinity), and then a rescan finds
   whether a NaN was there. */
#define DEFINE_ROW_OPS(S, T, D, NAME, CMP)                                                                                   \
    static T row_##NAME##_##D(const S* x, long long n) {                                                               \
        T m[LANES], c[LANES];                                                                                          \
        long long i = 0;                                                                                               \
        for (int l = 0; l < LANES; l++) m[l] = LOAD_##D(x[0]), c[l] = 0;                                                         \
        for (; i + LANES <= n; i += LANES) {                                                                           \
            _Pragma("omp simd") for (int l = 0; l < LANES; l++) {                                                      \
                T v = LOAD_##D(x[i + l]);                                                                              \
                m[l] = v CMP m[l] ? v : m[l];                                                                          \
                c[l] += v - v;                                                                                         \
            }                                                                                                          \
        }                                                                                                              \
        T r = m[0], chk = 0;                                                                                           \
        for (int l = 0; l < LANES; l++) r = m[l] CMP r ? m[l] : r, chk += c[l];                                        \
        for (; i < n; i++) {                                                                                           \
            T v = LOAD_##D(x[i]);                                                                                      \
            r = v CMP r ? v : r, chk += v - v;                                                                         \
        }                                                                                                              \
        if (chk != chk)                                                                                                \
            for (i = 0; i < n; i++)                                                                                    \
                if (LOAD_##D(x[i]) != LOAD_##D(x[i])) return LOAD_##D(x[i]);                                           \
        return r;                                                                                                      \
    }

/* A long run is read as four interleaved streams (its four quarters, side by side): more reads in flight than one
   stream's prefetcher keeps, ~1.3-1.5x the bandwidth of one stream on a 64 MiB sum (AMD EPYC, one and two threads). */
#define STREAMS 4
#define STREAM_MIN 65536LL /* elements from which a row sum reads four streams */
#define DEFINE_ROW_SUM(S, T, D)                                                                                              \
    static double row_sum_##D(const S* x, long long n) {                                                               \
        double acc[LANES] = {0}, s = 0;                                                                                \
        long long i = 0;                                                                                               \
        if (n >= STREAM_MIN) {                                                                                         \
            double b[LANES] = {0}, c[LANES] = {0}, d[LANES] = {0};                                                     \
            long long q = n / (STREAMS * LANES) * LANES;                                                               \
            const S *x1 = x + q, *x2 = x + 2 * q, *x3 = x + 3 * q;                                                     \
            for (; i < q; i += LANES) {                                                                                \
                _Pragma("omp simd") for (int l = 0; l < LANES; l++) {                                                  \
                    acc[l] += (double)WIDE_##D(x[i + l]);                                                              \
                    b[l] += (double)WIDE_##D(x1[i + l]);                                                               \
                    c[l] += (double)WIDE_##D(x2[i + l]);                                                               \
                    d[l] += (double)WIDE_##D(x3[i + l]);                                                               \
                }                                                                                                      \
            }                                                                                                          \
            for (int l = 0; l < LANES; l++) acc[l] += b[l] + c[l] + d[l];                                              \
            i = STREAMS * q;                                                                                           \
        }                                                                                                              \
        for (; i + LANES <= n; i += LANES) {                                                                           \
            _Pragma("omp simd") for (int l = 0; l < LANES; l++) acc[l] += (double)WIDE_##D(x[i + l]);                            \
        }                                                                                                              \
        for (; i < n; i++) s += (double)WIDE_##D(x[i]);                                                                          \
        for (int l = 0; l < LANES; l++) s += acc[l];                                                                   \
        return s;                                                                                                      \
    }                                                                                                                  \
    /* sign = 1: maximum, -1: minimum */                                                                               \
    static T row_ext_##D(const S* x, long long n, int sign) {                                                          \
        return sign > 0 ? row_max_##D(x, n) : row_min_##D(x, n);                                                       \
    }

/* How each dtype's elements load as, and store from, the compute type (half types: float32, csrc/half.h) */
#define LOAD_float32(v) (v)
#define LOAD_float64(v) (v)
#define LOAD_float16(v) ccc_f16_load(v)
#define LOAD_bfloat16(v) ccc_bf16_load(v)
/* what a sum widens to double: GCC folds (double)(float) of a _Float16 into one conversion that F16C lacks (a
   libgcc call per element); the + 0.0f (not foldable: -0 + 0 is +0, which changes no sum) keeps F16C's */
#define WIDE_float32(v) (v)
#define WIDE_float64(v) (v)
#define WIDE_float16(v) (ccc_f16_load(v) + 0.0f)
#define WIDE_bfloat16(v) ccc_bf16_load(v)
#define STORE_float32(v) ((float)(v))
#define STORE_float64(v) ((double)(v))
#define STORE_float16(v) ccc_f16_store((float)(v))
#define STORE_bfloat16(v) ccc_bf16_store((float)(v))

#define DEFINE_ROWS(S, T, D)                                                                                           \
    DEFINE_ROW_OPS(S, T, D, max, >)                                                                                    \
    DEFINE_ROW_OPS(S, T, D, min, <)                                                                                    \
    DEFINE_ROW_SUM(S, T, D)

DEFINE_ROWS(float, float, float32)
DEFINE_ROWS(double, double, float64)
DEFINE_ROWS(unsigned short, float, float16)
DEFINE_ROWS(unsigned short, float, bfloat16)

/* Per-thread chunks of one long row (rows < threads): partial results, then combined in order. */
static int split_count(long long rows, long long cols) {
    int threads = omp_get_max_threads();
    if (rows >= threads || rows * cols < PARALLEL_MIN || threads < 2) return 1;
    return threads < 256 ? threads : 256; /* the partial arrays' size */
}

/* FN: the sum of each row of dtype NAME (storage S), accumulated in double, stored as O by STORE */
#define DEFINE_SUM(S, NAME, O, STORE, FN)                                                                                   \
    void FN(long long rows, long long cols, const void* in_base, long long in_off,                         \
                        long long row_stride, void* out_base) {                                                        \
        const S* in = (const S*)in_base + in_off;                                                                      \
        O* out = (O*)out_base;                                                                                         \
        int parts = split_count(rows, cols);                                                                           \
        if (parts > 1) {                                                                                               \
            long long chunk = (cols + parts - 1) / parts;                                                              \
            for (long long r = 0; r < rows; r++) {                                                                     \
                double partial[256] = {0};                                                                             \
                const S* x = in + r * row_stride;                                                                      \
                _Pragma("omp parallel for num_threads(parts)") for (int p = 0; p < parts; p++) {                       \
                    long long lo = p * chunk, hi = lo + chunk < cols ? lo + chunk : cols;                              \
                    partial[p] = lo < hi ? row_sum_##NAME(x + lo, hi - lo) : 0.0;                                         \
                }                                                                                                      \
                double s = 0;                                                                                          \
                for (int p = 0; p < parts; p++) s += partial[p];                                                       \
                out[r] = STORE(s);                                                                                         \
            }                                                                                                          \
            return;                                                                                                    \
        }                                                                                                              \
        _Pragma("omp parallel for schedule(static) if(rows * cols >= PARALLEL_MIN)")                                   \
        for (long long r = 0; r < rows; r++) out[r] = STORE(row_sum_##NAME(in + r * row_stride, cols));                       \
    }

#define DEFINE_REDUCTIONS(S, T, NAME, C)                                                                                     \
    DEFINE_SUM(S, NAME, S, STORE_##NAME, ccc_sum_##NAME)                                                                \
    static void extremum_##NAME(long long rows, long long cols, const S* in, long long row_stride, S* out,             \
                                int sign) {                                                                            \
        int parts = split_count(rows, cols);                                                                           \
        if (parts > 1) {                                                                                               \
            long long chunk = (cols + parts - 1) / parts;                                                              \
            for (long long r = 0; r < rows; r++) {                                                                     \
                T partial[256];                                                                                        \
                int used = (int)((cols + chunk - 1) / chunk);                                                          \
                const S* x = in + r * row_stride;                                                                      \
                _Pragma("omp parallel for num_threads(parts)") for (int p = 0; p < used; p++) {                        \
                    long long lo = p * chunk, hi = lo + chunk < cols ? lo + chunk : cols;                              \
                    partial[p] = row_ext_##NAME(x + lo, hi - lo, sign);                                                   \
                }                                                                                                      \
                out[r] = STORE_##NAME(row_ext_##C(partial, used, sign));                                                             \
            }                                                                                                          \
            return;                                                                                                    \
        }                                                                                                              \
        _Pragma("omp parallel for schedule(static) if(rows * cols >= PARALLEL_MIN)")                                   \
        for (long long r = 0; r < rows; r++) out[r] = STORE_##NAME(row_ext_##NAME(in + r * row_stride, cols, sign));                    \
    }                                                                                                                  \
    void ccc_amax_##NAME(long long rows, long long cols, const void* in_base, long long in_off,                        \
                         long long row_stride, void* out) {                                                            \
        extremum_##NAME(rows, cols, (const S*)in_base + in_off, row_stride, (S*)out, 1);                               \
    }                                                                                                                  \
    void ccc_amin_##NAME(long long rows, long long cols, const void* in_base, long long in_off,                        \
                         long long row_stride, void* out) {                                                            \
        extremum_##NAME(rows, cols, (const S*)in_base + in_off, row_stride, (S*)out, -1);                              \
    }

DEFINE_REDUCTIONS(float, float, float32, float32)
DEFINE_REDUCTIONS(double, double, float64, float64)
DEFINE_REDUCTIONS(unsigned short, float, float16, float32) /* partial extrema combine in float32 */
DEFINE_REDUCTIONS(unsigned short, float, bfloat16, float32)
DEFINE_SUM(unsigned short, float16, float, STORE_float32, ccc_sum_float16_float32) /* mean's float32 sum */
DEFINE_SUM(unsigned short, bfloat16, float, STORE_float32, ccc_sum_bfloat16_float32)

/* softmax: exp(x - max) / sum(exp(x - max)); log: (x - max) - log(sum(exp(x - max))); the formula of NumPy's
   kernel, so NaN and infinities come out the same (a NaN or +inf in a row makes NaNs). Rows have cols >= 1. */
#define DEFINE_SOFTMAX(T, NAME, EXP, LOG)                                                                              \
    CCC_MATH_CLONES                                                                                                    \
    void ccc_softmax_##NAME(long long rows, long long cols, const void* in_base, long long in_off,                     \
                            long long row_stride, void* out_base, int take_log) {                                      \
        const T* in = (const T*)in_base + in_off;                                                                      \
        T* out_all = (T*)out_base;                                                                                     \
        _Pragma("omp parallel for schedule(static) if(rows * cols >= PARALLEL_MIN)")                                   \
        for (long long r = 0; r < rows; r++) {                                                                         \
            const T* x = in + r * row_stride;                                                                          \
            T* y = out_all + r * cols;                                                                                 \
            T m = row_ext_##NAME(x, cols, 1);                                                                             \
            double s = 0;                                                                                              \
            if (take_log) {                                                                                            \
                _Pragma("omp simd reduction(+ : s)")                                                                   \
                for (long long i = 0; i < cols; i++) s += (double)EXP(x[i] - m);                                       \
                T ls = (T)LOG(s);                                                                                      \
                for (long long i = 0; i < cols; i++) y[i] = (x[i] - m) - ls;                                           \
            } else {                                                                                                   \
                _Pragma("omp simd reduction(+ : s)")                                                                   \
                for (long long i = 0; i < cols; i++) {                                                                 \
                    T e = EXP(x[i] - m);                                                                               \
                    y[i] = e;                                                                                          \
                    s += (double)e;                                                                                    \
                }                                                                                                      \
                const T inv = (T)(1.0 / s); /* one division per row, as PyTorch's vectorised softmax */              \
                _Pragma("omp simd")                                                                                    \
                for (long long i = 0; i < cols; i++) y[i] = y[i] * inv;                                                \
            }                                                                                                          \
        }                                                                                                              \
    }

DEFINE_SOFTMAX(float, float32, expf, log)
DEFINE_SOFTMAX(double, float64, exp, log)

/* ---- Strided reductions over any set of dims, and scans along one dim ------------------------------------------
   The Python side (reduce.py) splits a tensor's dims into kept and reduced ones, collapses each group and checks
   every element lies inside the storage. Each output walks its reduced elements with an odometer whose inner-most
   dim is a plain loop. When the last kept dim has a smaller input stride than the reduced dims (a sum over dim 0
   of a row-major matrix), BLOCK neighbouring outputs are accumulated together instead, so every read of the inner
   loop is contiguous (or evenly strided) and vectorisable.
   An op is ACC (accumulator type), INIT(a), STEP(a, ix, x, j) (block mode, one element; j: its position along
   the reduced dims in row-major order, for the arg-reductions), LSTEP(a, x) and COMBINE(a, b) (lanes of one
   output, then merged), PART/PSTEP (a four-row partial in block mode) and FINAL(a, ix). Integer sums and
   products wrap through unsigned long long (signed overflow is UB in C; NumPy and PyTorch wrap). */
#include <limits.h>
#include <stdint.h>

typedef unsigned long long wrap64; /* integer sums and products wrap through it */
/* The strided walks are compiled twice on x86-64, for AVX2 and the baseline, and picked at load time (ifunc): the
   baseline is SSE2, which has no 64-bit integer compare and half the float lanes. Lanes are explicit arrays, so
   both versions add and compare in the same order (no FMA in either): results do not depend on the machine. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TARGETS __attribute__((target_clones("avx2", "default")))
#else
#define TARGETS
#endif
/* Split `items` work items into one contiguous range per thread (one range when `work` elements are few) and
   run CALL (which sees lo and hi) on each. */
#define PARALLEL_RANGES(items, work, CALL)                                                                             \
    {                                                                                                                  \
        long long parts_ = (work) >= PARALLEL_MIN ? omp_get_max_threads() : 1;                                         \
        if (parts_ > (items)) parts_ = (items);                                                                        \
        if (parts_ < 1) parts_ = 1;                                                                                    \
        _Pragma("omp parallel for schedule(static) num_threads((int)parts_) if(parts_ > 1)")                           \
        for (long long p_ = 0; p_ < parts_; p_++) {                                                                    \
            const long long lo = (items) * p_ / parts_, hi = (items) * (p_ + 1) / parts_;                              \
            CALL;                                                                                                      \
        }                                                                                                              \
    }
#define MAXD 64 /* dims of a collapsed group (reduce.py sends more to NumPy) */
#define BLOCK 256

/* ODOMETER: step `off` to the next run of the reduced dims 0..nr-2 (the inner-most dim is a loop of its own). */
#define ODOMETER(off, idx)                                                                                             \
    for (int d = nr - 2; d >= 0; d--) {                                                                                \
        off += rst[d];                                                                                                 \
        if (++idx[d] < rs[d]) break;                                                                                   \
        off -= rst[d] * rs[d], idx[d] = 0;                                                                             \
    }

/* One output's reduction (no block): LANES accumulators over the inner-most reduced dim, so the loop has no
   dependency chain through one accumulator (and vectorises when that dim is contiguous), then combined.
   LSTEP(a, x) is the op on values, COMBINE(a, b) merges a lane into `a`. */
#define REDUCE_ONE(T, ACC, INIT, LSTEP, COMBINE)                                                                       \
    {                                                                                                                  \
        ACC al[LANES];                                                                                                 \
        for (int l = 0; l < LANES; l++) INIT(al[l]);                                                                   \
        for (long long q = 0; q < router; q++) {                                                                       \
            const T* p = in + off;                                                                                     \
            long long i = 0;                                                                                           \
            if (rinst == 1) {                                                                                          \
                for (; i + LANES <= rin; i += LANES) {                                                                 \
                    _Pragma("omp simd") for (int l = 0; l < LANES; l++) {                                              \
                        T x = p[i + l];                                                                                \
                        LSTEP(al[l], x);                                                                               \
                    }                                                                                                  \
                }                                                                                                      \
            } else {                                                                                                   \
                for (; i + LANES <= rin; i += LANES) {                                                                 \
                    for (int l = 0; l < LANES; l++) {                                                                  \
                        T x = p[(i + l) * rinst];                                                                      \
                        LSTEP(al[l], x);                                                                               \
                    }                                                                                                  \
                }                                                                                                      \
            }                                                                                                          \
            for (; i < rin; i++) {                                                                                     \
                T x = p[i * rinst];                                                                                    \
                LSTEP(al[0], x);                                                                                       \
            }                                                                                                          \
            ODOMETER(off, idx)                                                                                         \
        }                                                                                                              \
        for (int l = 0; l < LANES; l++) COMBINE(a, al[l]);                                                             \
    }

/* One arg-reduction output: chunks of CHUNK elements of the inner-most reduced dim get their extremum with LANES
   accumulators; the first chunk holding the overall extremum (the first NaN: the walk stops there) is then
   searched for its first occurrence. BETTER(c, best): chunk extremum c beats the best so far. */
#define CHUNK 1024
#define DEFINE_ARG_ONE(OP, NAME, T, INIT, LSTEP, BETTER)                                                               \
    TARGETS static long long arg_one_##OP##_##NAME(const T* in, int nr, const long long* rs,                           \
                                                   const long long* rst) {                                             \
        long long idx[MAXD], off = 0, j = 0, best_j = 0, best_n = 0, router = 1;                                       \
        const long long rin = rs[nr - 1], rinst = rst[nr - 1];                                                         \
        for (int d = 0; d < nr - 1; d++) router *= rs[d], idx[d] = 0;                                                  \
        const T* best_p = in;                                                                                          \
        T best;                                                                                                        \
        INIT(best);                                                                                                    \
        for (long long q = 0; q < router; q++) {                                                                       \
            const T* p = in + off;                                                                                     \
            for (long long c0 = 0; c0 < rin; c0 += CHUNK) {                                                            \
                const long long cn = rin - c0 < CHUNK ? rin - c0 : CHUNK;                                              \
                const T* c = p + c0 * rinst;                                                                           \
                T al[LANES], cm;                                                                                       \
                long long i = 0;                                                                                       \
                for (int l = 0; l < LANES; l++) INIT(al[l]);                                                           \
                if (rinst == 1) {                                                                                      \
                    for (; i + LANES <= cn; i += LANES) {                                                              \
                        _Pragma("omp simd") for (int l = 0; l < LANES; l++) LSTEP(al[l], c[i + l]);                    \
                    }                                                                                                  \
                } else {                                                                                               \
                    for (; i + LANES <= cn; i += LANES)                                                                \
                        for (int l = 0; l < LANES; l++) LSTEP(al[l], c[(i + l) * rinst]);                              \
                }                                                                                                      \
                for (; i < cn; i++) LSTEP(al[0], c[i * rinst]);                                                        \
                INIT(cm);                                                                                              \
                for (int l = 0; l < LANES; l++) LSTEP(cm, al[l]);                                                      \
                if ((q == 0 && c0 == 0) || BETTER(cm, best)) {                                                         \
                    best = cm, best_p = c, best_n = cn, best_j = j + c0;                                               \
                    if (best != best) goto found;                                                                      \
                }                                                                                                      \
            }                                                                                                          \
            j += rin;                                                                                                  \
            ODOMETER(off, idx)                                                                                         \
        }                                                                                                              \
    found:;                                                                                                            \
        long long i0 = 0;                                                                                              \
        if (rinst == 1) /* skip LANES elements at a time while none matches (a vectorised test) */                     \
            for (; i0 + LANES <= best_n; i0 += LANES) {                                                                \
                int hit = 0;                                                                                           \
                _Pragma("omp simd reduction(|:hit)") for (int l = 0; l < LANES; l++) {                                 \
                    T x = best_p[i0 + l];                                                                              \
                    hit |= best == best ? x == best : x != x;                                                          \
                }                                                                                                      \
                if (hit) break;                                                                                        \
            }                                                                                                          \
        for (long long i = i0; i < best_n; i++) {                                                                      \
            T x = best_p[i * rinst];                                                                                   \
            if (best == best ? x == best : x != x) return best_j + i;                                                  \
        }                                                                                                              \
        return best_j;                                                                                                 \
    }
#define BETTER_MAX(c, best) ((c > best) | (c != c))
#define BETTER_MIN(c, best) ((c < best) | (c != c))
/* Block mode, order-free ops: rows p0..p3 (in scope) folded into the accumulators a[k] of stride S */
#define FOUR_ROWS(S, ACC, INIT, LSTEP, COMBINE)                                                                        \
    for (long long k = 0; k < kn; k++) {                                                                               \
        ACC t_;                                                                                                        \
        INIT(t_);                                                                                                      \
        LSTEP(t_, p0[k * (S)]);                                                                                        \
        LSTEP(t_, p1[k * (S)]);                                                                                        \
        LSTEP(t_, p2[k * (S)]);                                                                                        \
        LSTEP(t_, p3[k * (S)]);                                                                                        \
        COMBINE(a[k], t_);                                                                                             \
    }
/* MODE_A variants: the lanes of REDUCE_ONE, or the arg-reductions' chunk search */
#define ONE_LANES(OP, NAME, T, ACC, INIT, LSTEP, COMBINE) REDUCE_ONE(T, ACC, INIT, LSTEP, COMBINE)
#define ONE_ARG(OP, NAME, T, ACC, INIT, LSTEP, COMBINE)                                                                \
    ix = arg_one_##OP##_##NAME(in + start, nr, rs, rst), (void)off, (void)idx, (void)a;

#define DEFINE_REDUCE(OP, NAME, T, ACC, OUT, INIT, STEP, LSTEP, COMBINE, FINAL, MODE_A, PLAIN, PART,                   \
                      PSTEP)                                                                                           \
    /* outputs lo..hi (or blocks of outputs lo..hi) */                                                                 \
    TARGETS static void reduce_range_##OP##_##NAME(const long long* meta, const T* in, OUT* out, long long lo,         \
                                                   long long hi) {                                                     \
        const int nk = (int)meta[0], nr = (int)meta[1], block = (int)meta[2];                                          \
        const long long *ks = meta + 4, *kst = ks + nk, *rs = kst + nk, *rst = rs + nr;                                \
        long long nred = 1;                                                                                            \
        for (int d = 0; d < nr; d++) nred *= rs[d];                                                                    \
        const long long rin = rs[nr - 1], rinst = rst[nr - 1], router = nred / rin;                                    \
        if (!block) {                                                                                                  \
            for (long long o = lo; o < hi; o++) {                                                                      \
                long long start = 0, rem = o, idx[MAXD], ix = 0;                                                       \
                for (int d = nk - 1; d >= 0; d--) start += (rem % ks[d]) * kst[d], rem /= ks[d];                       \
                for (int d = 0; d < nr; d++) idx[d] = 0;                                                               \
                long long off = start;                                                                                 \
                ACC a;                                                                                                 \
                INIT(a);                                                                                               \
                MODE_A(OP, NAME, T, ACC, INIT, LSTEP, COMBINE)                                                         \
                out[o] = FINAL(a, ix);                                                                                 \
            }                                                                                                          \
            return;                                                                                                    \
        }                                                                                                              \
        const long long K = ks[nk - 1], kstep = kst[nk - 1], nblk = (K + BLOCK - 1) / BLOCK;                           \
        for (long long t = lo; t < hi; t++) {                                                                          \
            const long long ob = t / nblk, k0 = (t % nblk) * BLOCK, kn = K - k0 < BLOCK ? K - k0 : BLOCK;              \
            long long off = k0 * kstep, rem = ob, idx[MAXD], j = 0, ix[BLOCK];                                         \
            ACC a[BLOCK];                                                                                              \
            for (int d = nk - 2; d >= 0; d--) off += (rem % ks[d]) * kst[d], rem /= ks[d];                             \
            for (int d = 0; d < nr; d++) idx[d] = 0;                                                                   \
            for (long long k = 0; k < kn; k++) {                                                                       \
                INIT(a[k]);                                                                                            \
                ix[k] = 0;                                                                                             \
            }                                                                                                          \
            for (long long q = 0; q < router; q++) {                                                                   \
                long long i = 0;                                                                                       \
                /* sums, products, any/all: four reduced elements per accumulator update */                            \
                for (; !PLAIN && i + 4 <= rin; i += 4, j += 4) {                                                       \
                    const T *p0 = in + off + i * rinst, *p1 = p0 + rinst, *p2 = p1 + rinst, *p3 = p2 + rinst;          \
                    if (kstep == 1) {                                                                                  \
                        FOUR_ROWS(1, PART, INIT, PSTEP, COMBINE)                                                       \
                    } else {                                                                                           \
                        FOUR_ROWS(kstep, PART, INIT, PSTEP, COMBINE)                                                   \
                    }                                                                                                  \
                }                                                                                                      \
                for (; i < rin; i++, j++) {                                                                            \
                    const T* p = in + off + i * rinst;                                                                 \
                    if (kstep == 1) {                                                                                  \
                        for (long long k = 0; k < kn; k++) {                                                           \
                            T x = p[k];                                                                                \
                            STEP(a[k], ix[k], x, j);                                                                   \
                        }                                                                                              \
                    } else {                                                                                           \
                        for (long long k = 0; k < kn; k++) {                                                           \
                            T x = p[k * kstep];                                                                        \
                            STEP(a[k], ix[k], x, j);                                                                   \
                        }                                                                                              \
                    }                                                                                                  \
                }                                                                                                      \
                ODOMETER(off, idx)                                                                                     \
            }                                                                                                          \
            OUT* y = out + ob * K + k0;                                                                                \
            for (long long k = 0; k < kn; k++) y[k] = FINAL(a[k], ix[k]);                                              \
        }                                                                                                              \
    }                                                                                                                  \
    void ccc_reduce_##OP##_##NAME(const long long* meta, const void* in_base, void* out_base) {                        \
        const int nk = (int)meta[0], nr = (int)meta[1];                                                                \
        long long nout = 1, nred = 1, items;                                                                           \
        for (int d = 0; d < nk; d++) nout *= meta[4 + d];                                                              \
        for (int d = 0; d < nr; d++) nred *= meta[4 + 2 * nk + d];                                                     \
        items = meta[2] ? nout / meta[3 + nk] * ((meta[3 + nk] + BLOCK - 1) / BLOCK) : nout;                           \
        PARALLEL_RANGES(items, nout * nred, reduce_range_##OP##_##NAME(meta, (const T*)in_base + meta[3],              \
                                                                       (OUT*)out_base, lo, hi))                        \
    }

/* The ops. Extrema follow NumPy's maximum/minimum (a NaN wins and stays; on ties the later element) and the
   arg-reductions np.argmax/argmin (the first NaN, else the first extremum). */
#define INIT_ZERO(a) a = 0
#define INIT_ONE(a) a = 1
#define STEP_FSUM(a, ix, x, j) a += (double)x
#define STEP_FPROD(a, ix, x, j) a *= x
#define STEP_ISUM(a, ix, x, j) a += (unsigned long long)(long long)x
#define STEP_IPROD(a, ix, x, j) a *= (unsigned long long)(long long)x
#define STEP_MAX(a, ix, x, j) a = ((a != a) | (a > x)) ? a : x
#define STEP_MIN(a, ix, x, j) a = ((a != a) | (a < x)) ? a : x
#define STEP_ANY(a, ix, x, j) a |= (x != 0)
#define STEP_ALL(a, ix, x, j) a &= (x != 0)
#define STEP_ARGMAX(a, ix, x, j)                                                                                       \
    {                                                                                                                  \
        int c_ = (a == a) & ((x > a) | (x != x));                                                                      \
        a = c_ ? x : a, ix = c_ ? j : ix;                                                                              \
    }
#define STEP_ARGMIN(a, ix, x, j)                                                                                       \
    {                                                                                                                  \
        int c_ = (a == a) & ((x < a) | (x != x));                                                                      \
        a = c_ ? x : a, ix = c_ ? j : ix;                                                                              \
    }
/* LSTEP(a, x) and COMBINE(a, b) of the per-output lanes */
#define L_FSUM(a, x) a += (double)x
#define L_TADD(a, x) a += x /* a float32 sum's four-row partial, in float32: half the conversions */
#define L_FPROD(a, x) a *= x
#define L_ISUM(a, x) a += (unsigned long long)(long long)x
#define L_IPROD(a, x) a *= (unsigned long long)(long long)x
#define L_MAX(a, x) a = ((a != a) | (a > x)) ? a : x
#define L_MIN(a, x) a = ((a != a) | (a < x)) ? a : x
#define L_ANY(a, x) a |= (x != 0)
#define L_ALL(a, x) a &= (x != 0)
#define C_ADD(a, b) a += b
#define C_MUL(a, b) a *= b
#define C_OR(a, b) a |= b
#define C_AND(a, b) a &= b
#define FINAL_ACC(a, ix) ((void)(ix), (a))
#define FINAL_INDEX(a, ix) ix

/* One dtype's reductions: NAME, C type, its lowest and highest value (infinities for floats). */
#define DEFINE_EXTREMA(NAME, T, LO, HI)                                                                                \
    DEFINE_REDUCE(amax, NAME, T, T, T, INIT_LO_##NAME, STEP_MAX, L_MAX, L_MAX, FINAL_ACC, ONE_LANES, 1, T, L_MAX)      \
    DEFINE_REDUCE(amin, NAME, T, T, T, INIT_HI_##NAME, STEP_MIN, L_MIN, L_MIN, FINAL_ACC, ONE_LANES, 1, T, L_MIN)      \
    DEFINE_REDUCE(any, NAME, T, uint8_t, uint8_t, INIT_ZERO, STEP_ANY, L_ANY, C_OR, FINAL_ACC,                         \
                  ONE_LANES, 0, uint8_t, L_ANY)                                                                        \
    DEFINE_REDUCE(all, NAME, T, uint8_t, uint8_t, INIT_ONE, STEP_ALL, L_ALL, C_AND, FINAL_ACC,                         \
                  ONE_LANES, 0, uint8_t, L_ALL)
#define DEFINE_ARG(NAME, T)                                                                                            \
    DEFINE_ARG_ONE(argmax, NAME, T, INIT_LO_##NAME, L_MAX, BETTER_MAX)                                                 \
    DEFINE_ARG_ONE(argmin, NAME, T, INIT_HI_##NAME, L_MIN, BETTER_MIN)                                                 \
    DEFINE_REDUCE(argmax, NAME, T, T, long long, INIT_LO_##NAME, STEP_ARGMAX, L_MAX, L_MAX, FINAL_INDEX,               \
                  ONE_ARG, 1, T, L_MAX)                                                                                \
    DEFINE_REDUCE(argmin, NAME, T, T, long long, INIT_HI_##NAME, STEP_ARGMIN, L_MIN, L_MIN, FINAL_INDEX,               \
                  ONE_ARG, 1, T, L_MIN)
#define DEFINE_FLOAT_REDUCTIONS(NAME, T)                                                                               \
    DEFINE_REDUCE(sum, NAME, T, double, T, INIT_ZERO, STEP_FSUM, L_FSUM, C_ADD, FINAL_ACC, ONE_LANES, 0, T, L_TADD)    \
    DEFINE_REDUCE(prod, NAME, T, T, T, INIT_ONE, STEP_FPROD, L_FPROD, C_MUL, FINAL_ACC, ONE_LANES, 0, T, L_FPROD)      \
    DEFINE_EXTREMA(NAME, T, -INFINITY, INFINITY)                                                                       \
    DEFINE_ARG(NAME, T)
#define DEFINE_INT_REDUCTIONS(NAME, T)                                                                                 \
    DEFINE_REDUCE(sum, NAME, T, wrap64, long long, INIT_ZERO, STEP_ISUM, L_ISUM, C_ADD, FINAL_ACC,                     \
                  ONE_LANES, 0, wrap64, L_ISUM)                                                                        \
    DEFINE_REDUCE(prod, NAME, T, wrap64, long long, INIT_ONE, STEP_IPROD, L_IPROD, C_MUL, FINAL_ACC,                   \
                  ONE_LANES, 0, wrap64, L_IPROD)                                                                       \
    DEFINE_EXTREMA(NAME, T, 0, 0)

#define INIT_LO_float32(a) a = -INFINITY
#define INIT_HI_float32(a) a = INFINITY
#define INIT_LO_float64(a) a = -INFINITY
#define INIT_HI_float64(a) a = INFINITY
#define INIT_LO_int8(a) a = SCHAR_MIN
#define INIT_HI_int8(a) a = SCHAR_MAX
#define INIT_LO_uint8(a) a = 0
#define INIT_HI_uint8(a) a = UCHAR_MAX
#define INIT_LO_int16(a) a = SHRT_MIN
#define INIT_HI_int16(a) a = SHRT_MAX
#define INIT_LO_int32(a) a = INT_MIN
#define INIT_HI_int32(a) a = INT_MAX
#define INIT_LO_int64(a) a = LLONG_MIN
#define INIT_HI_int64(a) a = LLONG_MAX
#define INIT_LO_bool(a) a = 0
#define INIT_HI_bool(a) a = 1

DEFINE_FLOAT_REDUCTIONS(float32, float)
DEFINE_FLOAT_REDUCTIONS(float64, double)
DEFINE_INT_REDUCTIONS(int8, int8_t)
DEFINE_ARG(int8, int8_t)
DEFINE_INT_REDUCTIONS(uint8, uint8_t)
DEFINE_ARG(uint8, uint8_t)
DEFINE_INT_REDUCTIONS(int16, int16_t)
DEFINE_ARG(int16, int16_t)
DEFINE_INT_REDUCTIONS(int32, int32_t)
DEFINE_ARG(int32, int32_t)
DEFINE_INT_REDUCTIONS(int64, int64_t)
DEFINE_ARG(int64, int64_t)
DEFINE_INT_REDUCTIONS(bool, uint8_t)

/* float16/bfloat16 sums over any dims (a column sum: a bias's gradient under autocast): each element widened to float
   (exact), summed in double as float32's are (four-row partials in float), the result rounded to the half type as
   the row kernels round theirs */
#define STEP_HSUM_float16(a, ix, x, j) a += (double)ccc_f16_load(x)
#define STEP_HSUM_bfloat16(a, ix, x, j) a += (double)ccc_bf16_load(x)
#define L_HSUM_float16(a, x) a += (double)ccc_f16_load(x)
#define L_HSUM_bfloat16(a, x) a += (double)ccc_bf16_load(x)
#define L_HADD_float16(a, x) a += ccc_f16_load(x)
#define L_HADD_bfloat16(a, x) a += ccc_bf16_load(x)
#define FINAL_float16(a, ix) ((void)(ix), ccc_f16_store((float)(a)))
#define FINAL_bfloat16(a, ix) ((void)(ix), ccc_bf16_store((float)(a)))
#define DEFINE_HALF_SUM(NAME)                                                                                          \
    DEFINE_REDUCE(sum, NAME, unsigned short, double, unsigned short, INIT_ZERO, STEP_HSUM_##NAME, L_HSUM_##NAME,       \
                  C_ADD, FINAL_##NAME, ONE_LANES, 0, float, L_HADD_##NAME)
DEFINE_HALF_SUM(float16)
DEFINE_HALF_SUM(bfloat16)

/* Scans: each kept position runs along the scan dim in order (NumPy's accumulate order, so float cumsum/cumprod
   are bit-exact), or, when the scan dim is not the output's inner-most, BLOCK neighbouring kept positions advance
   together. STEP(a, ix, x, j) updates the running value (and index); the index array is written only by cummax/cummin
   (WRITE_IX). cummax: NumPy's maximum.accumulate value; the index is the latest one where the input equals the
   running value or is NaN (core's reference kernel, PyTorch's rule). */
#define STEP_CUMMAX(a, ix, x, j)                                                                                       \
    a = ((a != a) | (a > x)) ? a : x;                                                                                  \
    ix = ((x == a) | (x != x)) ? j : ix
#define STEP_CUMMIN(a, ix, x, j)                                                                                       \
    a = ((a != a) | (a < x)) ? a : x;                                                                                  \
    ix = ((x == a) | (x != x)) ? j : ix
#define WRITE_IX_NO(p, v) (void)(v)
#define WRITE_IX_YES(p, v) p = v

#define DEFINE_SCAN(OP, NAME, T, ACC, OUT, INIT, STEP, WRITE_IX)                                                       \
    /* kept positions lo..hi, or blocks lo..hi of neighbouring kept positions */                                       \
    TARGETS static void scan_range_##OP##_##NAME(const long long* meta, const T* in, OUT* out, long long* oix,         \
                                                 long long lo, long long hi) {                                         \
        const int nk = (int)meta[0], block = (int)meta[1];                                                             \
        const long long n = meta[3], sd = meta[4], od = meta[5];                                                       \
        const long long *ks = meta + 6, *kin = ks + nk, *kout = kin + nk;                                              \
        (void)oix;                                                                                                     \
        if (!block) {                                                                                                  \
            for (long long o = lo; o < hi; o++) {                                                                      \
                long long ioff = 0, ooff = 0, rem = o, ix = 0;                                                         \
                for (int d = nk - 1; d >= 0; d--) {                                                                    \
                    long long c = rem % ks[d];                                                                         \
                    ioff += c * kin[d], ooff += c * kout[d], rem /= ks[d];                                             \
                }                                                                                                      \
                ACC a;                                                                                                 \
                INIT(a);                                                                                               \
                for (long long j = 0; j < n; j++) {                                                                    \
                    T x = in[ioff + j * sd];                                                                           \
                    STEP(a, ix, x, j);                                                                                 \
                    out[ooff + j * od] = (OUT)a;                                                                       \
                    WRITE_IX(oix[ooff + j * od], ix);                                                                  \
                }                                                                                                      \
            }                                                                                                          \
            return;                                                                                                    \
        }                                                                                                              \
        const long long K = ks[nk - 1], kis = kin[nk - 1], kos = kout[nk - 1], nblk = (K + BLOCK - 1) / BLOCK;         \
        for (long long t = lo; t < hi; t++) {                                                                          \
            const long long ob = t / nblk, k0 = (t % nblk) * BLOCK, kn = K - k0 < BLOCK ? K - k0 : BLOCK;              \
            long long ioff = k0 * kis, ooff = k0 * kos, rem = ob, ix[BLOCK];                                           \
            ACC a[BLOCK];                                                                                              \
            for (int d = nk - 2; d >= 0; d--) {                                                                        \
                long long c = rem % ks[d];                                                                             \
                ioff += c * kin[d], ooff += c * kout[d], rem /= ks[d];                                                 \
            }                                                                                                          \
            for (long long k = 0; k < kn; k++) {                                                                       \
                INIT(a[k]);                                                                                            \
                ix[k] = 0;                                                                                             \
            }                                                                                                          \
            for (long long j = 0; j < n; j++) {                                                                        \
                const T* p = in + ioff + j * sd;                                                                       \
                OUT* y = out + ooff + j * od;                                                                          \
                for (long long k = 0; k < kn; k++) {                                                                   \
                    T x = p[k * kis];                                                                                  \
                    STEP(a[k], ix[k], x, j);                                                                           \
                    y[k * kos] = (OUT)a[k];                                                                            \
                    WRITE_IX(oix[ooff + j * od + k * kos], ix[k]);                                                     \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
    }                                                                                                                  \
    void ccc_scan_##OP##_##NAME(const long long* meta, const void* in_base, void* out_base, void* idx_base) {          \
        const int nk = (int)meta[0];                                                                                   \
        long long nkept = 1, items;                                                                                    \
        for (int d = 0; d < nk; d++) nkept *= meta[6 + d];                                                             \
        items = meta[1] ? nkept / meta[5 + nk] * ((meta[5 + nk] + BLOCK - 1) / BLOCK) : nkept;                         \
        PARALLEL_RANGES(items, nkept * meta[3], scan_range_##OP##_##NAME(meta, (const T*)in_base + meta[2],            \
                                                                         (OUT*)out_base, (long long*)idx_base,         \
                                                                         lo, hi))                                      \
    }

#define DEFINE_CUMEXT(NAME, T)                                                                                         \
    DEFINE_SCAN(cummax, NAME, T, T, T, INIT_LO_##NAME, STEP_CUMMAX, WRITE_IX_YES)                                      \
    DEFINE_SCAN(cummin, NAME, T, T, T, INIT_HI_##NAME, STEP_CUMMIN, WRITE_IX_YES)
#define DEFINE_FLOAT_SCANS(NAME, T)                                                                                    \
    DEFINE_SCAN(cumsum, NAME, T, T, T, INIT_ZERO, STEP_FADD, WRITE_IX_NO)                                              \
    DEFINE_SCAN(cumprod, NAME, T, T, T, INIT_ONE, STEP_FPROD, WRITE_IX_NO)                                             \
    DEFINE_CUMEXT(NAME, T)
#define DEFINE_INT_SCANS(NAME, T)                                                                                      \
    DEFINE_SCAN(cumsum, NAME, T, unsigned long long, long long, INIT_ZERO, STEP_ISUM, WRITE_IX_NO)                     \
    DEFINE_SCAN(cumprod, NAME, T, unsigned long long, long long, INIT_ONE, STEP_IPROD, WRITE_IX_NO)                    \
    DEFINE_CUMEXT(NAME, T)
#define STEP_FADD(a, ix, x, j) a += x

DEFINE_FLOAT_SCANS(float32, float)
DEFINE_FLOAT_SCANS(float64, double)
DEFINE_INT_SCANS(int8, int8_t)
DEFINE_INT_SCANS(uint8, uint8_t)
DEFINE_INT_SCANS(int16, int16_t)
DEFINE_INT_SCANS(int32, int32_t)
DEFINE_INT_SCANS(int64, int64_t)
DEFINE_INT_SCANS(bool, uint8_t)
