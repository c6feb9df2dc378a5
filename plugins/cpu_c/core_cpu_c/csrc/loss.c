/* Fused cross entropy over class indices, forward and backward: one pass per row of (rows, classes) logits instead
of the log_softmax + nll_loss ops of the decomposition in core/nn/functional/loss.py, with the same formulas.

Each row's exps are taken in the tensor's type and summed in double; the row losses and weights are summed in double
in row order (deterministic whatever the thread count). Rows whose target is ignore_index weigh 0. Operands are
validated in Python (loss.py) but the targets, checked here in one pass before any logit is read (loss.py raises
IndexError for a bad one; checking them in Python would cost one more pass and a device sync for nothing). */
#include <math.h>
#include <stdlib.h>

#include "loss.h"
#include "omp_compat.h"
#include "vecmath.h"

#define CE_NONE 0
#define CE_MEAN 2

/* 1 + the first row whose target is neither a class nor ignore_index, else 0. */
static long long bad_target(long long rows, long long classes, const long long* target, long long ignore_index) {
    for (long long r = 0; r < rows; r++) {
        const long long t = target[r];
        if (t != ignore_index && (t < 0 || t >= classes)) return r + 1;
    }
    return 0;
}

/* The weight of a row of target t: 0 when ignored, else weight[t] (1 without weights). */
#define ROW_WEIGHT(w, t, ignore_index) ((t) == (ignore_index) ? 0.0 : (w) ? (double)(w)[t] : 1.0)

#define DEFINE_CROSS_ENTROPY(T, N, EXP)                                                                                \
    /* max + log(sum exp(x - max)) of one row: exp in the tensor's type, the sum in double. */                         \
    CCC_MATH_CLONES static double logsumexp_##N(const T* restrict row, long long classes) {                            \
        T m = row[0];                                                                                                  \
        for (long long j = 1; j < classes; j++) m = row[j] > m ? row[j] : m;                                           \
        double sum = 0;                                                                                                \
        _Pragma("omp simd reduction(+ : sum)")                                                                         \
        for (long long j = 0; j < classes; j++) sum += EXP(row[j] - m);                                                \
        return (double)m + log(sum);                                                                                   \
    }                                                                                                                  \
    /* The sum of the kept rows' weights. */                                                                           \
    static double total_weight_##N(long long rows, const long long* target, const T* w,                                \
                                    long long ignore_index) {                                                          \
        double total = 0;                                                                                              \
        for (long long r = 0; r < rows; r++) total += ROW_WEIGHT(w, target[r], ignore_index);                          \
        return total;                                                                                                  \
    }                                                                                                                  \
    long long ccc_cross_entropy_loss_##N(long long rows, long long classes, const void* x_, const void* target_,       \
                                         const void* w_, long long ignore_index, int reduction, void* out_) {          \
        const T* restrict x = (const T*)x_;                                                                            \
        const long long* restrict target = (const long long*)target_;                                                  \
        const T* restrict w = (const T*)w_;                                                                            \
        T* restrict out = (T*)out_;                                                                                    \
        const long long bad = bad_target(rows, classes, target, ignore_index);                                         \
        if (bad) return bad;                                                                                           \
        double* losses = reduction == CE_NONE ? NULL : (double*)malloc((size_t)rows * sizeof(double) + 1);             \
        if (reduction != CE_NONE && !losses) return -1;                                                                \
        _Pragma("omp parallel for if(rows * classes >= 32768) schedule(static)")                                       \
        for (long long r = 0; r < rows; r++) {                                                                         \
            const long long t = target[r];                                                                             \
            const double rw = ROW_WEIGHT(w, t, ignore_index);                                                          \
            const T* restrict row = x + r * classes;                                                                   \
            const double loss = t == ignore_index ? 0.0 : rw * (logsumexp_##N(row, classes) - row[t]);                 \
            if (losses) losses[r] = loss;                                                                              \
            else out[r] = (T)loss;                                                                                     \
        }                                                                                                              \
        if (!losses) return 0;                                                                                         \
        double total = 0;                                                                                              \
        for (long long r = 0; r < rows; r++) total += losses[r];                                                       \
        free(losses);                                                                                                  \
        out[0] = (T)(reduction == CE_MEAN ? total / total_weight_##N(rows, target, w, ignore_index) : total);          \
        return 0;                                                                                                      \
    }                                                                                                                  \
    long long ccc_cross_entropy_loss_backward_##N(long long rows, long long classes, const void* g_,                   \
                                                  int grad_per_row, const void* x_, const void* target_,               \
                                                  const void* w_, long long ignore_index, int reduction,               \
                                                  void* gi_) {                                                         \
        const T* restrict g = (const T*)g_;                                                                            \
        const T* restrict x = (const T*)x_;                                                                            \
        const long long* restrict target = (const long long*)target_;                                                  \
        const T* restrict w = (const T*)w_;                                                                            \
        T* restrict gi = (T*)gi_;                                                                                      \
        const long long bad = bad_target(rows, classes, target, ignore_index);                                         \
        if (bad) return bad;                                                                                           \
        double scale = grad_per_row ? 1.0 : (double)g[0];                                                              \
        if (!grad_per_row && reduction == CE_MEAN) scale /= total_weight_##N(rows, target, w, ignore_index);           \
        _Pragma("omp parallel for if(rows * classes >= 32768) schedule(static)")                                       \
        for (long long r = 0; r < rows; r++) {                                                                         \
            const long long t = target[r];                                                                             \
            const double rw = ROW_WEIGHT(w, t, ignore_index) * (grad_per_row ? (double)g[r] : scale);                  \
            const T* restrict row = x + r * classes;                                                                   \
            T* restrict o = gi + r * classes;                                                                          \
            if (t == ignore_index) {                                                                                   \
                for (long long j = 0; j < classes; j++) o[j] = (T)0;                                                   \
                continue;                                                                                              \
            }                                                                                                          \
            const T lse = (T)logsumexp_##N(row, classes), scale = (T)rw;                                               \
            for (long long j = 0; j < classes; j++) o[j] = EXP(row[j] - lse) * scale;                                  \
            o[t] = (EXP(row[t] - lse) - (T)1) * scale;                                                                 \
        }                                                                                                              \
        return 0;                                                                                                      \
    }

DEFINE_CROSS_ENTROPY(float, float32, expf)
DEFINE_CROSS_ENTROPY(double, float64, exp)
