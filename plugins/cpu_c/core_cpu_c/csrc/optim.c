/* Fused SGD and Adam updates: one pass over param, grad and state instead of one pass per tensor op.

Every scalar is rounded to the tensor's type first and the operations run in the order of the op-by-op
algorithm (core/optim/fused.py, PyTorch's single-tensor algorithm), so results match it. Operands are
validated in Python (optim.py): same dtype and shape, contiguous, inside their storages. */
#include <math.h>

#include "omp_compat.h"
#include "optim.h"

/* Loops of at least 32768 elements run on every thread, as the elementwise kernels do. */
#define DEFINE_SGD(T, N, SQRT)                                                                                            \
    void ccc_sgd_update_##N(long long n, void* p_, const void* g_, void* buf_, double lr, double momentum,             \
                            double dampening, double weight_decay, int nesterov) {                                     \
        T* restrict p = (T*)p_;                                                                                        \
        const T* restrict g = (const T*)g_;                                                                            \
        T* restrict buf = (T*)buf_;                                                                                    \
        const T wd = (T)weight_decay, mom = (T)momentum, keep = (T)(1 - dampening), step = (T)(-lr);                 \
        const int has_wd = weight_decay != 0, has_buf = buf != 0;                                                      \
        _Pragma("omp parallel for simd if(n >= 32768) schedule(static)")                                       \
        for (long long i = 0; i < n; i++) {                                                                            \
            T d = g[i];                                                                                                \
            if (has_wd) d = d + wd * p[i];                                                                             \
            if (has_buf) {                                                                                             \
                T b = buf[i] * mom;                                                                                    \
                b = b + keep * d;                                                                                      \
                buf[i] = b;                                                                                            \
                d = nesterov ? d + mom * b : b;                                                                        \
            }                                                                                                          \
            p[i] = p[i] + step * d;                                                                                    \
        }                                                                                                              \
    }

#define DEFINE_ADAM(T, N, SQRT)                                                                                           \
    void ccc_adam_update_##N(long long n, void* p_, const void* g_, void* m_, void* v_, void* vmax_, double lr,        \
                             double beta1, double beta2, double eps, double weight_decay, int decoupled,               \
                             double step_size, double bias_correction2_sqrt) {                                         \
        T* restrict p = (T*)p_;                                                                                        \
        const T* restrict g = (const T*)g_;                                                                            \
        T* restrict m = (T*)m_;                                                                                        \
        T* restrict v = (T*)v_;                                                                                        \
        T* restrict vmax = (T*)vmax_;                                                                                  \
        const T w1 = (T)(1 - beta1), b2 = (T)beta2, w2 = (T)(1 - beta2), e = (T)eps;                                 \
        const T shrink = (T)(1 - lr * weight_decay), wd = (T)weight_decay, neg_step = (T)(-step_size);                \
        const T bc2 = (T)bias_correction2_sqrt;                                                                        \
        const int l2 = weight_decay != 0 && !decoupled, shrinks = weight_decay != 0 && decoupled;                     \
        const int ams = vmax != 0;                                                                                     \
        _Pragma("omp parallel for simd if(n >= 32768) schedule(static)")                                       \
        for (long long i = 0; i < n; i++) {                                                                            \
            T pi = p[i], gi = g[i];                                                                                    \
            if (shrinks) pi = pi * shrink;                                                                             \
            if (l2) gi = gi + wd * pi;                                                                                 \
            T mi = m[i] + w1 * (gi - m[i]);                                                                            \
            T vi = v[i] * b2;                                                                                          \
            vi = vi + w2 * (gi * gi);                                                                                  \
            m[i] = mi;                                                                                                 \
            v[i] = vi;                                                                                                 \
            if (ams) {                                                                                                 \
                T old = vmax[i];                                                                                       \
                vi = (old > vi || old != old) ? old : vi;                                                              \
                vmax[i] = vi;                                                                                          \
            }                                                                                                          \
            T denom = SQRT(vi) / bc2 + e;                                                                              \
            p[i] = pi + neg_step * (mi / denom);                                                                       \
        }                                                                                                              \
    }

DEFINE_SGD(float, float32, sqrtf)
DEFINE_SGD(double, float64, sqrt)
DEFINE_ADAM(float, float32, sqrtf)
DEFINE_ADAM(double, float64, sqrt)
