/* Fused cross entropy over class indices, forward and backward: one pass per row of (rows, classes) logits instead
of the log_softmax + nll_loss ops of the decomposition in core/nn/functional/loss.py, with the same formulas; few
classes (fewer than a vector's lanes) take their exps in one flat vectorised loop per block of rows.

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

/* Rows are taken CE_ROWS at a time (one OpenMP iteration each). With fewer classes than FLAT_CLASSES (a vector's
   lanes would mostly idle: 10 classes took 10 scalar exps per row), a block's shifted logits are laid out in a
   scratch buffer and one flat loop takes all their exps, vectorised. */
#define CE_ROWS 256
#define FLAT_CLASSES 16

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
    /* lse[r] = logsumexp of row r of the n rows at x, with the same arithmetic; few classes: the flat loop. */        \
    CCC_MATH_CLONES static void block_lse_##N(const T* restrict x, long long n, long long classes,                    \
                                              double* restrict lse) {                                                  \
        if (classes >= FLAT_CLASSES) {                                                                                 \
            for (long long r = 0; r < n; r++) lse[r] = logsumexp_##N(x + r * classes, classes);                        \
            return;                                                                                                    \
        }                                                                                                              \
        T e[CE_ROWS * FLAT_CLASSES];                                                                                   \
        for (long long r = 0; r < n; r++) {                                                                            \
            const T* restrict row = x + r * classes;                                                                   \
            T m = row[0];                                                                                              \
            for (long long j = 1; j < classes; j++) m = row[j] > m ? row[j] : m;                                       \
            for (long long j = 0; j < classes; j++) e[r * classes + j] = row[j] - m;                                   \
            lse[r] = (double)m;                                                                                        \
        }                                                                                                              \
        _Pragma("omp simd")                                                                                            \
        for (long long i = 0; i < n * classes; i++) e[i] = EXP(e[i]);                                                  \
        for (long long r = 0; r < n; r++) {                                                                            \
            double sum = 0;                                                                                            \
            for (long long j = 0; j < classes; j++) sum += e[r * classes + j];                                         \
            lse[r] += log(sum);                                                                                        \
        }                                                                                                              \
    }                                                                                                                  \
    /* One block of the backward: o = softmax(x) * scale per row, minus scale at the target (0 for ignored rows). */   \
    CCC_MATH_CLONES static void block_backward_##N(const T* restrict x, long long r0, long long n, long long classes,  \
                                                   const T* restrict g, int grad_per_row, double scale,              \
                                                   const long long* restrict target, const T* restrict w,             \
                                                   long long ignore_index, T* restrict gi) {                         \
        double lse[CE_ROWS];                                                                                           \
        block_lse_##N(x + r0 * classes, n, classes, lse);                                                              \
        T* restrict o = gi + r0 * classes;                                                                             \
        const T* restrict in = x + r0 * classes;                                                                       \
        for (long long r = 0; r < n; r++)                                                                              \
            for (long long j = 0; j < classes; j++) o[r * classes + j] = in[r * classes + j] - (T)lse[r];              \
        _Pragma("omp simd")                                                                                            \
        for (long long i = 0; i < n * classes; i++) o[i] = EXP(o[i]);                                                  \
        for (long long r = 0; r < n; r++) {                                                                            \
            const long long t = target[r0 + r];                                                                        \
            T* restrict row = o + r * classes;                                                                         \
            if (t == ignore_index) {                                                                                   \
                for (long long j = 0; j < classes; j++) row[j] = (T)0;                                                 \
                continue;                                                                                              \
            }                                                                                                          \
            const T rw = (T)(ROW_WEIGHT(w, t, ignore_index) * (grad_per_row ? (double)g[r0 + r] : scale));           \
            const T pt = row[t];                                                                                       \
            for (long long j = 0; j < classes; j++) row[j] = row[j] * rw;                                              \
            row[t] = (pt - (T)1) * rw;                                                                                 \
        }                                                                                                              \
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
        const long long blocks = (rows + CE_ROWS - 1) / CE_ROWS;                                                       \
        _Pragma("omp parallel for if(rows * classes >= 32768) schedule(static)")                                       \
        for (long long b = 0; b < blocks; b++) {                                                                       \
            const long long r0 = b * CE_ROWS, n = rows - r0 < CE_ROWS ? rows - r0 : CE_ROWS;                           \
            double lse[CE_ROWS];                                                                                       \
            block_lse_##N(x + r0 * classes, n, classes, lse);                                                          \
            for (long long r = r0; r < r0 + n; r++) {                                                                  \
                const long long t = target[r];                                                                         \
                const double rw = ROW_WEIGHT(w, t, ignore_index);                                                      \
                const double loss = t == ignore_index ? 0.0 : rw * (lse[r - r0] - x[r * classes + t]);                 \
                if (losses) losses[r] = loss;                                                                          \
                else out[r] = (T)loss;                                                                                 \
            }                                                                                                          \
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
        const long long blocks = (rows + CE_ROWS - 1) / CE_ROWS;                                                       \
        _Pragma("omp parallel for if(rows * classes >= 32768) schedule(static)")                                       \
        for (long long b = 0; b < blocks; b++) {                                                                       \
            const long long r0 = b * CE_ROWS, n = rows - r0 < CE_ROWS ? rows - r0 : CE_ROWS;                           \
            block_backward_##N(x, r0, n, classes, g, grad_per_row, scale, target, w, ignore_index, gi);               \
        }                                                                                                              \
        return 0;                                                                                                      \
    }

DEFINE_CROSS_ENTROPY(float, float32, expf)
DEFINE_CROSS_ENTROPY(double, float64, exp)
