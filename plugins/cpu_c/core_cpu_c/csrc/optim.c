/* Fused SGD and Adam updates: one pass over param, grad and state instead of one pass per tensor op.

Every scalar is rounded to the tensor's type first and the operations run in the order of the op-by-op
algorithm (core/optim/fused.py, PyTorch's single-tensor algorithm), so results match it. Operands are
validated in Python (optim.py): same dtype and shape, contiguous, inside their storages. */
#include <math.h>

#include "omp_compat.h"
#include "optim.h"

/* Loops of at least 32768 elements run on every thread, as the elementwise kernels do. Each combination of options
(momentum buffer or not, Nesterov, weight decay; AMSGrad's maximum) is its own loop, the options constants in it: a
loop that tests them per element and stores the momentum buffer under a condition is not vectorised by GCC (it ran
scalar, 3x slower). */
#define SGD_LOOP(T, WD, BUF, NESTEROV)                                                                                 \
    _Pragma("omp parallel for simd if(parallel: n >= 32768) schedule(static)")                                         \
    for (long long i = 0; i < n; i++) {                                                                                \
        T d = g[i];                                                                                                    \
        if (WD) d = d + wd * p[i];                                                                                     \
        if (BUF) {                                                                                                     \
            T b = buf[i] * mom;                                                                                        \
            b = b + keep * d;                                                                                          \
            buf[i] = b;                                                                                                \
            d = NESTEROV ? d + mom * b : b;                                                                            \
        }                                                                                                              \
        p[i] = p[i] + step * d;                                                                                        \
    }

#define DEFINE_SGD(T, N, SQRT)                                                                                         \
    void ccc_sgd_update_##N(long long n, void* p_, const void* g_, void* buf_, double lr, double momentum,             \
                            double dampening, double weight_decay, int nesterov) {                                     \
        T* restrict p = (T*)p_;                                                                                        \
        const T* restrict g = (const T*)g_;                                                                            \
        T* restrict buf = (T*)buf_;                                                                                    \
        const T wd = (T)weight_decay, mom = (T)momentum, keep = (T)(1 - dampening), step = (T)(-lr);                   \
        if (buf == 0) {                                                                                                \
            if (weight_decay != 0) { SGD_LOOP(T, 1, 0, 0) } else { SGD_LOOP(T, 0, 0, 0) }                              \
        } else if (nesterov) {                                                                                         \
            if (weight_decay != 0) { SGD_LOOP(T, 1, 1, 1) } else { SGD_LOOP(T, 0, 1, 1) }                              \
        } else {                                                                                                       \
            if (weight_decay != 0) { SGD_LOOP(T, 1, 1, 0) } else { SGD_LOOP(T, 0, 1, 0) }                              \
        }                                                                                                              \
    }

#define ADAM_LOOP(T, SQRT, SHRINKS, L2, AMS)                                                                           \
    _Pragma("omp parallel for simd if(parallel: n >= 32768) schedule(static)")                                         \
    for (long long i = 0; i < n; i++) {                                                                                \
        T pi = p[i], gi = g[i];                                                                                        \
        if (SHRINKS) pi = pi * shrink;                                                                                 \
        if (L2) gi = gi + wd * pi;                                                                                     \
        T mi = m[i] + w1 * (gi - m[i]);                                                                                \
        T vi = v[i] * b2;                                                                                              \
        vi = vi + w2 * (gi * gi);                                                                                      \
        m[i] = mi;                                                                                                     \
        v[i] = vi;                                                                                                     \
        if (AMS) {                                                                                                     \
            T old = vmax[i];                                                                                           \
            vi = (old > vi || old != old) ? old : vi;                                                                  \
            vmax[i] = vi;                                                                                              \
        }                                                                                                              \
        T denom = SQRT(vi) / bc2 + e;                                                                                  \
        p[i] = pi + neg_step * (mi / denom);                                                                           \
    }

#define DEFINE_ADAM(T, N, SQRT)                                                                                        \
    void ccc_adam_update_##N(long long n, void* p_, const void* g_, void* m_, void* v_, void* vmax_, double lr,        \
                             double beta1, double beta2, double eps, double weight_decay, int decoupled,               \
                             double step_size, double bias_correction2_sqrt) {                                         \
        T* restrict p = (T*)p_;                                                                                        \
        const T* restrict g = (const T*)g_;                                                                            \
        T* restrict m = (T*)m_;                                                                                        \
        T* restrict v = (T*)v_;                                                                                        \
        T* restrict vmax = (T*)vmax_;                                                                                  \
        const T w1 = (T)(1 - beta1), b2 = (T)beta2, w2 = (T)(1 - beta2), e = (T)eps;                                   \
        const T shrink = (T)(1 - lr * weight_decay), wd = (T)weight_decay, neg_step = (T)(-step_size);                 \
        const T bc2 = (T)bias_correction2_sqrt;                                                                        \
        if (weight_decay == 0) {                                                                                       \
            if (vmax != 0) { ADAM_LOOP(T, SQRT, 0, 0, 1) } else { ADAM_LOOP(T, SQRT, 0, 0, 0) }                        \
        } else if (decoupled) {                                                                                        \
            if (vmax != 0) { ADAM_LOOP(T, SQRT, 1, 0, 1) } else { ADAM_LOOP(T, SQRT, 1, 0, 0) }                        \
        } else {                                                                                                       \
            if (vmax != 0) { ADAM_LOOP(T, SQRT, 0, 1, 1) } else { ADAM_LOOP(T, SQRT, 0, 1, 0) }                        \
        }                                                                                                              \
    }

DEFINE_SGD(float, float32, sqrtf)
DEFINE_SGD(double, float64, sqrt)
DEFINE_ADAM(float, float32, sqrtf)
DEFINE_ADAM(double, float64, sqrt)
