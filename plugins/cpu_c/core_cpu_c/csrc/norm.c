/* Fused GELU, layer norm and batch norm kernels, forward and backward: one pass (or one pass per row or channel)
instead of one per tensor op of the decompositions in core/nn/functional (activation.py, norm.py), with the same
formulas.

GELU evaluates in the tensor's type with libm's erf / tanh / exp. Layer norm works row by row over contiguous
(rows, cols) data: the mean, the biased variance (two passes) and the backward's row sums accumulate in double, the
weight and bias gradients in per-thread double partials summed in thread order (deterministic for a thread count).
Batch norm works channel by channel over contiguous (n, c, s) data, one channel per loop step on every thread
(no shared partials: deterministic for any thread count), statistics and sums in double, vectorised (omp simd
reductions: a fixed order for a build).
Operands are validated in Python (norm.py): one dtype, contiguous, inside their storages. */
#include <math.h>
#include <stdlib.h>

#include "norm.h"
#include "omp_compat.h"
#include "vecmath.h"

#define GELU_SQRT_HALF 0.70710678118654752440
#define GELU_SQRT_2_OVER_PI 0.79788456080286535588
#define GELU_INV_SQRT_2PI 0.39894228040143267794
#define GELU_CUBIC 0.044715

/* Loops of at least 32768 elements run on every thread, as the elementwise kernels do. */
#define DEFINE_GELU(T, N, ERF, TANH, EXP)                                                                              \
    CCC_MATH_CLONES void ccc_gelu_##N(long long n, const void* x_, void* out_, int approximate_tanh) {                 \
        const T* restrict x = (const T*)x_;                                                                            \
        T* restrict out = (T*)out_;                                                                                    \
        if (approximate_tanh) {                                                                                        \
            _Pragma("omp parallel for simd if(parallel: n >= 32768) schedule(static)")                                 \
            for (long long i = 0; i < n; i++) {                                                                        \
                const T v = x[i];                                                                                      \
                const T inner = (v + v * v * v * (T)GELU_CUBIC) * (T)GELU_SQRT_2_OVER_PI;                              \
                out[i] = v * (T)0.5 * ((T)1 + TANH(inner));                                                            \
            }                                                                                                          \
        } else {                                                                                                       \
            _Pragma("omp parallel for simd if(parallel: n >= 32768) schedule(static)")                                 \
            for (long long i = 0; i < n; i++) {                                                                        \
                const T v = x[i];                                                                                      \
                out[i] = v * (T)0.5 * ((T)1 + ERF(v * (T)GELU_SQRT_HALF));                                             \
            }                                                                                                          \
        }                                                                                                              \
    }                                                                                                                  \
    CCC_MATH_CLONES                                                                                                    \
    void ccc_gelu_backward_##N(long long n, const void* g_, const void* x_, void* out_, int approximate_tanh) {        \
        const T* restrict g = (const T*)g_;                                                                            \
        const T* restrict x = (const T*)x_;                                                                            \
        T* restrict out = (T*)out_;                                                                                    \
        if (approximate_tanh) {                                                                                        \
            _Pragma("omp parallel for simd if(parallel: n >= 32768) schedule(static)")                                 \
            for (long long i = 0; i < n; i++) {                                                                        \
                const T v = x[i], v2 = v * v;                                                                          \
                const T t = TANH((v + v2 * v * (T)GELU_CUBIC) * (T)GELU_SQRT_2_OVER_PI);                               \
                const T slope = ((T)1 + t) * (T)0.5 + v * (T)0.5 * ((T)1 - t * t) *                                    \
                                ((T)GELU_SQRT_2_OVER_PI * ((T)1 + v2 * (T)(3 * GELU_CUBIC)));                          \
                out[i] = g[i] * slope;                                                                                 \
            }                                                                                                          \
        } else {                                                                                                       \
            _Pragma("omp parallel for simd if(parallel: n >= 32768) schedule(static)")                                 \
            for (long long i = 0; i < n; i++) {                                                                        \
                const T v = x[i];                                                                                      \
                const T density = EXP(v * v * (T)-0.5) * (T)GELU_INV_SQRT_2PI;                                         \
                out[i] = g[i] * (((T)1 + ERF(v * (T)GELU_SQRT_HALF)) * (T)0.5 + v * density);                          \
            }                                                                                                          \
        }                                                                                                              \
    }

/* The mean and 1 / sqrt(biased variance + eps) of one row, in double. */
#define DEFINE_ROW_STATS(T, N)                                                                                         \
    static void row_stats_##N(const T* restrict row, long long cols, double eps, double* mean, double* rstd) {         \
        double sum = 0;                                                                                                \
        for (long long j = 0; j < cols; j++) sum += row[j];                                                            \
        const double m = sum / (double)cols;                                                                           \
        double sq = 0;                                                                                                 \
        for (long long j = 0; j < cols; j++) {                                                                         \
            const double d = row[j] - m;                                                                               \
            sq += d * d;                                                                                               \
        }                                                                                                              \
        *mean = m;                                                                                                     \
        *rstd = 1.0 / sqrt(sq / (double)cols + eps);                                                                   \
    }

#define DEFINE_LAYER_NORM(T, N)                                                                                        \
    void ccc_layer_norm_##N(long long rows, long long cols, const void* x_, const void* w_, const void* b_,            \
                            double eps, void* out_) {                                                                  \
        const T* restrict x = (const T*)x_;                                                                            \
        const T* restrict w = (const T*)w_;                                                                            \
        const T* restrict b = (const T*)b_;                                                                            \
        T* restrict out = (T*)out_;                                                                                    \
        _Pragma("omp parallel for if(rows * cols >= 32768) schedule(static)")                                          \
        for (long long r = 0; r < rows; r++) {                                                                         \
            const T* restrict row = x + r * cols;                                                                      \
            T* restrict o = out + r * cols;                                                                            \
            double mean, rstd;                                                                                         \
            row_stats_##N(row, cols, eps, &mean, &rstd);                                                               \
            const T m = (T)mean, s = (T)rstd;                                                                          \
            for (long long j = 0; j < cols; j++) {                                                                     \
                T v = (row[j] - m) * s;                                                                                \
                if (w) v = v * w[j];                                                                                   \
                if (b) v = v + b[j];                                                                                   \
                o[j] = v;                                                                                              \
            }                                                                                                          \
        }                                                                                                              \
    }

/* Each thread takes one contiguous block of rows and sums its weight and bias gradients into its own double
partials (2 * cols per thread); the partials are then added in thread order. */
#define DEFINE_LAYER_NORM_BACKWARD(T, N)                                                                               \
    int ccc_layer_norm_backward_##N(long long rows, long long cols, const void* g_, const void* x_, const void* w_,    \
                                    double eps, void* gi_, void* gw_, void* gb_) {                                     \
        const T* restrict g = (const T*)g_;                                                                            \
        const T* restrict x = (const T*)x_;                                                                            \
        const T* restrict w = (const T*)w_;                                                                            \
        T* restrict gi = (T*)gi_;                                                                                      \
        T* restrict gw = (T*)gw_;                                                                                      \
        T* restrict gb = (T*)gb_;                                                                                      \
        const int parallel = rows * cols >= 32768 && rows > 1;                                                         \
        const int threads = parallel ? omp_get_max_threads() : 1;                                                      \
        const int reduce = gw != 0 || gb != 0;                                                                         \
        double* partial = 0;                                                                                           \
        if (reduce) {                                                                                                  \
            partial = (double*)calloc((size_t)threads * (size_t)(2 * cols), sizeof(double));                           \
            if (!partial) return 1;                                                                                    \
        }                                                                                                              \
        _Pragma("omp parallel num_threads(threads) if(parallel)")                                                      \
        {                                                                                                              \
            const int nt = omp_get_num_threads(), t = omp_get_thread_num();                                            \
            const long long first = rows * t / nt, last = rows * (t + 1) / nt;                                         \
            double* restrict pw = reduce ? partial + (size_t)t * (size_t)(2 * cols) : 0;                               \
            double* restrict pb = reduce ? pw + cols : 0;                                                              \
            for (long long r = first; r < last; r++) {                                                                 \
                const T* restrict xr = x + r * cols;                                                                   \
                const T* restrict gr = g + r * cols;                                                                   \
                double mean, rstd;                                                                                     \
                row_stats_##N(xr, cols, eps, &mean, &rstd);                                                            \
                if (reduce) {                                                                                          \
                    for (long long j = 0; j < cols; j++) {                                                             \
                        pw[j] += (double)gr[j] * ((xr[j] - mean) * rstd);                                              \
                        pb[j] += gr[j];                                                                                \
                    }                                                                                                  \
                }                                                                                                      \
                if (!gi) continue;                                                                                     \
                double sum_g = 0, sum_gx = 0;                                                                          \
                for (long long j = 0; j < cols; j++) {                                                                 \
                    const double gn = w ? (double)gr[j] * w[j] : (double)gr[j];                                        \
                    sum_g += gn;                                                                                       \
                    sum_gx += gn * ((xr[j] - mean) * rstd);                                                            \
                }                                                                                                      \
                const double mean_g = sum_g / (double)cols, mean_gx = sum_gx / (double)cols;                           \
                T* restrict out = gi + r * cols;                                                                       \
                for (long long j = 0; j < cols; j++) {                                                                 \
                    const double gn = w ? (double)gr[j] * w[j] : (double)gr[j];                                        \
                    out[j] = (T)((gn - mean_g - (xr[j] - mean) * rstd * mean_gx) * rstd);                              \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
        if (reduce) {                                                                                                  \
            for (long long j = 0; j < cols; j++) {                                                                     \
                double sw = 0, sb = 0;                                                                                 \
                for (int t = 0; t < threads; t++) {                                                                    \
                    sw += partial[(size_t)t * (size_t)(2 * cols) + j];                                                 \
                    sb += partial[(size_t)t * (size_t)(2 * cols) + cols + j];                                          \
                }                                                                                                      \
                if (gw) gw[j] = (T)sw;                                                                                 \
                if (gb) gb[j] = (T)sb;                                                                                 \
            }                                                                                                          \
            free(partial);                                                                                             \
        }                                                                                                              \
        return 0;                                                                                                      \
    }

DEFINE_GELU(float, float32, erff, ccc_tanhf, expf) /* ccc_tanhf: csrc/vecmath.h */
DEFINE_GELU(double, float64, erf, tanh, exp)
DEFINE_ROW_STATS(float, float32)
DEFINE_ROW_STATS(double, float64)
DEFINE_LAYER_NORM(float, float32)
DEFINE_LAYER_NORM(double, float64)
DEFINE_LAYER_NORM_BACKWARD(float, float32)
DEFINE_LAYER_NORM_BACKWARD(double, float64)

/* The batch mean and biased variance of channel ch of (n, c, s) data, in double (two passes). */
#define DEFINE_CHANNEL_STATS(T, N)                                                                                     \
    static void channel_stats_##N(const T* restrict x, long long n, long long c, long long s, long long ch,            \
                                  double* mean, double* var) {                                                         \
        const double count = (double)(n * s);                                                                          \
        double sum = 0;                                                                                                \
        for (long long i = 0; i < n; i++) {                                                                            \
            const T* restrict p = x + (i * c + ch) * s;                                                                \
            _Pragma("omp simd reduction(+ : sum)")                                                                     \
            for (long long j = 0; j < s; j++) sum += p[j];                                                             \
        }                                                                                                              \
        const double m = sum / count;                                                                                  \
        double sq = 0;                                                                                                 \
        for (long long i = 0; i < n; i++) {                                                                            \
            const T* restrict p = x + (i * c + ch) * s;                                                                \
            _Pragma("omp simd reduction(+ : sq)")                                                                      \
            for (long long j = 0; j < s; j++) {                                                                        \
                const double d = p[j] - m;                                                                             \
                sq += d * d;                                                                                           \
            }                                                                                                          \
        }                                                                                                              \
        *mean = m;                                                                                                     \
        *var = sq / count;                                                                                             \
    }

/* out = x * scale + shift per channel; training takes the batch statistics and updates the running ones. */
#define DEFINE_BATCH_NORM(T, N)                                                                                        \
    void ccc_batch_norm_##N(long long n, long long c, long long s, const void* x_, const void* w_, const void* b_,     \
                            void* rm_, void* rv_, int training, double momentum, double eps, void* out_) {             \
        const T* restrict x = (const T*)x_;                                                                            \
        const T* restrict w = (const T*)w_;                                                                            \
        const T* restrict b = (const T*)b_;                                                                            \
        T* restrict rm = (T*)rm_;                                                                                      \
        T* restrict rv = (T*)rv_;                                                                                      \
        T* restrict out = (T*)out_;                                                                                    \
        const long long count = n * s;                                                                                 \
        _Pragma("omp parallel for if(n * c * s >= 32768 && c > 1) schedule(static)")                                   \
        for (long long ch = 0; ch < c; ch++) {                                                                         \
            double mean, var;                                                                                          \
            if (training) {                                                                                            \
                channel_stats_##N(x, n, c, s, ch, &mean, &var);                                                        \
                if (rm) rm[ch] = (T)((1.0 - momentum) * rm[ch] + momentum * mean);                                     \
                if (rv) rv[ch] = (T)((1.0 - momentum) * rv[ch] + momentum * var * count / (double)(count - 1));        \
            } else {                                                                                                   \
                mean = rm[ch];                                                                                         \
                var = rv[ch];                                                                                          \
            }                                                                                                          \
            double scale = 1.0 / sqrt(var + eps);                                                                      \
            if (w) scale *= w[ch];                                                                                     \
            const double shift = (b ? (double)b[ch] : 0.0) - mean * scale;                                             \
            const T sc = (T)scale, sh = (T)shift;                                                                      \
            for (long long i = 0; i < n; i++) {                                                                        \
                const T* restrict p = x + (i * c + ch) * s;                                                            \
                T* restrict o = out + (i * c + ch) * s;                                                                \
                for (long long j = 0; j < s; j++) o[j] = p[j] * sc + sh;                                               \
            }                                                                                                          \
        }                                                                                                              \
    }

/* Per channel: the sums of grad and grad * x_hat (double), then grad_input; grad_weight / grad_bias are the sums. */
#define DEFINE_BATCH_NORM_BACKWARD(T, N)                                                                               \
    void ccc_batch_norm_backward_##N(long long n, long long c, long long s, const void* g_, const void* x_,            \
                                     const void* rm_, const void* rv_, const void* w_, int training, double eps,       \
                                     void* gi_, void* gw_, void* gb_) {                                                \
        const T* restrict g = (const T*)g_;                                                                            \
        const T* restrict x = (const T*)x_;                                                                            \
        const T* restrict rm = (const T*)rm_;                                                                          \
        const T* restrict rv = (const T*)rv_;                                                                          \
        const T* restrict w = (const T*)w_;                                                                            \
        T* restrict gi = (T*)gi_;                                                                                      \
        T* restrict gw = (T*)gw_;                                                                                      \
        T* restrict gb = (T*)gb_;                                                                                      \
        const double count = (double)(n * s);                                                                          \
        _Pragma("omp parallel for if(n * c * s >= 32768 && c > 1) schedule(static)")                                   \
        for (long long ch = 0; ch < c; ch++) {                                                                         \
            double mean, var;                                                                                          \
            if (training) {                                                                                            \
                channel_stats_##N(x, n, c, s, ch, &mean, &var);                                                        \
            } else {                                                                                                   \
                mean = rm[ch];                                                                                         \
                var = rv[ch];                                                                                          \
            }                                                                                                          \
            const double rstd = 1.0 / sqrt(var + eps);                                                                 \
            double sum_g = 0, sum_gx = 0;                                                                              \
            for (long long i = 0; i < n; i++) {                                                                        \
                const T* restrict gp = g + (i * c + ch) * s;                                                           \
                const T* restrict p = x + (i * c + ch) * s;                                                            \
                _Pragma("omp simd reduction(+ : sum_g, sum_gx)")                                                       \
                for (long long j = 0; j < s; j++) {                                                                    \
                    sum_g += gp[j];                                                                                    \
                    sum_gx += (double)gp[j] * ((p[j] - mean) * rstd);                                                  \
                }                                                                                                      \
            }                                                                                                          \
            if (gw) gw[ch] = (T)sum_gx;                                                                                \
            if (gb) gb[ch] = (T)sum_g;                                                                                 \
            if (!gi) continue;                                                                                         \
            const double factor = (w ? (double)w[ch] : 1.0) * rstd;                                                    \
            const double mean_g = training ? sum_g / count : 0.0, mean_gx = training ? sum_gx / count : 0.0;           \
            for (long long i = 0; i < n; i++) {                                                                        \
                const T* restrict gp = g + (i * c + ch) * s;                                                           \
                const T* restrict p = x + (i * c + ch) * s;                                                            \
                T* restrict o = gi + (i * c + ch) * s;                                                                 \
                for (long long j = 0; j < s; j++)                                                                      \
                    o[j] = (T)((gp[j] - mean_g - (p[j] - mean) * rstd * mean_gx) * factor);                            \
            }                                                                                                          \
        }                                                                                                              \
    }

DEFINE_CHANNEL_STATS(float, float32)
DEFINE_CHANNEL_STATS(double, float64)
DEFINE_BATCH_NORM(float, float32)
DEFINE_BATCH_NORM(double, float64)
DEFINE_BATCH_NORM_BACKWARD(float, float32)
DEFINE_BATCH_NORM_BACKWARD(double, float64)
