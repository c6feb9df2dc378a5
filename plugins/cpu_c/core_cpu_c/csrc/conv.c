/* 2-D convolution (im2col + OpenBLAS GEMM per image, col2im for the input gradient), direct max and average
pooling.

Geometry and operands are validated in Python (conv.py): dense buffers of the sizes in the geometry struct.
Weight (O, C/G, KH, KW) is read per group g as the (O/G) x (C/G * KH * KW) matrix W_g; the im2col matrix of
one image has one row per (channel, kernel offset), channel major, and one column per output position, so group
g's rows are one contiguous block. A 1x1 kernel with stride 1 and no padding uses the image itself as that matrix.

Threads: OpenBLAS runs a GEMM of at most BLAS_SINGLE_THREAD_MNK multiply-adds on one thread. When the per-image
GEMMs are that small, images are spread over the OpenMP threads (each with its own scratch and, for the weight
and bias gradients, its own accumulators, summed in thread order afterwards: deterministic for a given thread
count); larger ones run image by image, OpenBLAS threading each GEMM and OpenMP the im2col/col2im loops, so the
two thread pools never nest. Max pooling runs one (sample, channel) plane per iteration, like PyTorch's kernel:
the first maximum of a window wins and NaN counts as the maximum (the first NaN); as in the decomposition, a
window holding nothing above -inf (e.g. wholly in the padding) gets no gradient. */
#define _POSIX_C_SOURCE 200112L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cblas.h"
#include "conv.h"
#include "omp_compat.h"
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#define BLAS_SINGLE_THREAD_MNK 262144.0 /* OpenBLAS interface/gemm.c: SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD */
#define PARALLEL_MIN 32768LL /* elements below which a loop stays on one thread, as for the elementwise kernels */
#define VECTOR_WINDOWS 8 /* pooling windows per vectorised block of the fast path (8 floats: 256 bits) */
#define DOT_ROWS 25 /* im2col rows per group up to which the weight gradient is dot products (conv.h) */
int ccc_conv_dot_rows(void) { return DOT_ROWS; }
#define PADDED_BLOCK 512 /* elements of a staged block of windows: kernel_h * stride_w * VECTOR_WINDOWS at most */

/* A 64-byte aligned buffer of count elements of size bytes (zeroed when asked), or NULL. */
static void* scratch(long long count, size_t size, int zeroed) {
    size_t bytes = ((size_t)(count > 0 ? count : 1) * size + 63) / 64 * 64;
    void* p = NULL;
    if (posix_memalign(&p, 64, bytes) != 0) return NULL;
    if (zeroed) memset(p, 0, bytes);
    return p;
}

/* [lo, hi): the k in [0, count) whose position start + k * step lies in [0, size). Used for the output columns
   an im2col row reads from the input, and for the kernel offsets of a pooling window inside the input. */
static void span(long long start, long long step, long long size, long long count, long long* lo, long long* hi) {
    long long first = start >= 0 ? 0 : (-start + step - 1) / step;
    long long end = size - start <= 0 ? 0 : (size - start + step - 1) / step;
    *lo = first < count ? first : count;
    *hi = end < count ? end : count;
    if (*hi < *lo) *hi = *lo;
}

static int pointwise(const ccc_conv2d* g) {
    return g->kernel_h == 1 && g->kernel_w == 1 && g->stride_h == 1 && g->stride_w == 1 && g->pad_h == 0 &&
           g->pad_w == 0;
}

static int images_in_parallel(const ccc_conv2d* g) {
    double k = (double)(g->channels / g->groups) * g->kernel_h * g->kernel_w;
    double mnk = (double)(g->out_channels / g->groups) * g->out_h * g->out_w * k;
    return g->batch > 1 && omp_get_max_threads() > 1 && mnk <= BLAS_SINGLE_THREAD_MNK;
}

/* im2col of channels [c_lo, c_hi) of one image x (C, H, W) into cols (C * KH * KW, OH * OW), zeros for padding.
   col2im: the reverse, zeroing those channels of grad_x and adding each column entry into them. */
#define DEFINE_IM2COL(T, N)                                                                                            \
    static void im2col_##N(const ccc_conv2d* g, const T* x, T* cols, long long c_lo, long long c_hi) {                 \
        const long long H = g->height, W = g->width, OH = g->out_h, OW = g->out_w, L = OH * OW, sw = g->stride_w;      \
        for (long long c = c_lo; c < c_hi; c++)                                                                        \
            for (long long i = 0; i < g->kernel_h; i++)                                                                \
                for (long long j = 0; j < g->kernel_w; j++) {                                                          \
                    T* row = cols + ((c * g->kernel_h + i) * g->kernel_w + j) * L;                                     \
                    const long long dw = j * g->dilation_w - g->pad_w;                                                 \
                    long long lo, hi;                                                                                  \
                    span(dw, sw, W, OW, &lo, &hi);                                                                     \
                    for (long long oh = 0; oh < OH; oh++) {                                                            \
                        T* dst = row + oh * OW;                                                                        \
                        const long long ih = oh * g->stride_h + i * g->dilation_h - g->pad_h;                          \
                        if (ih < 0 || ih >= H) {                                                                       \
                            for (long long ow = 0; ow < OW; ow++) dst[ow] = 0;                                         \
                            continue;                                                                                  \
                        }                                                                                              \
                        /* plain loops, not memcpy: rows are short, a libc call per row costs more than a copy */      \
                        const T* src = x + (c * H + ih) * W;                                                           \
                        for (long long ow = 0; ow < lo; ow++) dst[ow] = 0;                                             \
                        if (sw == 1)                                                                                   \
                            for (long long ow = lo; ow < hi; ow++) dst[ow] = src[ow + dw];                             \
                        else                                                                                           \
                            for (long long ow = lo; ow < hi; ow++) dst[ow] = src[ow * sw + dw];                        \
                        for (long long ow = hi; ow < OW; ow++) dst[ow] = 0;                                            \
                    }                                                                                                  \
                }                                                                                                      \
    }                                                                                                                  \
    static void col2im_##N(const ccc_conv2d* g, const T* cols, T* grad_x, long long c_lo, long long c_hi) {            \
        const long long H = g->height, W = g->width, OH = g->out_h, OW = g->out_w, L = OH * OW, sw = g->stride_w;      \
        memset(grad_x + c_lo * H * W, 0, (size_t)((c_hi - c_lo) * H * W) * sizeof(T));                                 \
        for (long long c = c_lo; c < c_hi; c++)                                                                        \
            for (long long i = 0; i < g->kernel_h; i++)                                                                \
                for (long long j = 0; j < g->kernel_w; j++) {                                                          \
                    const T* row = cols + ((c * g->kernel_h + i) * g->kernel_w + j) * L;                               \
                    const long long dw = j * g->dilation_w - g->pad_w;                                                 \
                    long long lo, hi;                                                                                  \
                    span(dw, sw, W, OW, &lo, &hi);                                                                     \
                    for (long long oh = 0; oh < OH; oh++) {                                                            \
                        const long long ih = oh * g->stride_h + i * g->dilation_h - g->pad_h;                          \
                        if (ih < 0 || ih >= H) continue;                                                               \
                        T* dst = grad_x + (c * H + ih) * W;                                                            \
                        const T* src = row + oh * OW;                                                                  \
                        for (long long ow = lo; ow < hi; ow++) dst[ow * sw + dw] += src[ow];                           \
                    }                                                                                                  \
                }                                                                                                      \
    }                                                                                                                  \
    /* im2col / col2im of a whole image, over the OpenMP threads (used when images run one after another) */           \
    static void im2col_threads_##N(const ccc_conv2d* g, const T* x, T* cols) {                                         \
        const long long C = g->channels, size = C * g->kernel_h * g->kernel_w * g->out_h * g->out_w;                   \
        _Pragma("omp parallel for schedule(static) if(size >= PARALLEL_MIN)")                                          \
        for (long long c = 0; c < C; c++) im2col_##N(g, x, cols, c, c + 1);                                            \
    }                                                                                                                  \
    static void col2im_threads_##N(const ccc_conv2d* g, const T* cols, T* grad_x) {                                    \
        const long long C = g->channels, size = C * g->kernel_h * g->kernel_w * g->out_h * g->out_w;                   \
        _Pragma("omp parallel for schedule(static) if(size >= PARALLEL_MIN)")                                          \
        for (long long c = 0; c < C; c++) col2im_##N(g, cols, grad_x, c, c + 1);                                       \
    }

/* acc[k] (+)= a . rows[k] for the count rows of length L after rows (added when accumulate, else written), eight
   rows a pass so that each element of a is loaded once per eight products. */
#define DEFINE_DOT_ROWS(T, N)                                                                                          \
    static void dot_rows_##N(const T* a, const T* rows, long long L, long long count, T* acc, int accumulate) {        \
        long long k = 0;                                                                                               \
        for (; k + 8 <= count; k += 8) {                                                                               \
            const T* r = rows + k * L;                                                                                 \
            T s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;                                          \
            _Pragma("omp simd reduction(+:s0,s1,s2,s3,s4,s5,s6,s7)")                                                   \
            for (long long l = 0; l < L; l++) {                                                                        \
                const T v = a[l];                                                                                      \
                s0 += v * r[l];                                                                                        \
                s1 += v * r[L + l];                                                                                    \
                s2 += v * r[2 * L + l];                                                                                \
                s3 += v * r[3 * L + l];                                                                                \
                s4 += v * r[4 * L + l];                                                                                \
                s5 += v * r[5 * L + l];                                                                                \
                s6 += v * r[6 * L + l];                                                                                \
                s7 += v * r[7 * L + l];                                                                                \
            }                                                                                                          \
            const T s[8] = {s0, s1, s2, s3, s4, s5, s6, s7};                                                           \
            for (int i = 0; i < 8; i++) acc[k + i] = accumulate ? acc[k + i] + s[i] : s[i];                            \
        }                                                                                                              \
        for (; k < count; k++) {                                                                                       \
            const T* r = rows + k * L;                                                                                 \
            T s = 0;                                                                                                   \
            _Pragma("omp simd reduction(+:s)")                                                                         \
            for (long long l = 0; l < L; l++) s += a[l] * r[l];                                                        \
            acc[k] = accumulate ? acc[k] + s : s;                                                                      \
        }                                                                                                              \
    }

/* One image's forward (cols is its im2col matrix, already filled), its weight and bias gradient contributions
   (added into acc_w (O, C/G * K) and the double acc_b (O)), and its input gradient (through cols as scratch,
   or straight into grad_x when pointwise). */
#define DEFINE_CONV_IMAGE(T, N, GEMM)                                                                                  \
    static void forward_image_##N(const ccc_conv2d* g, const T* cols, const T* w, const T* bias, T* out) {             \
        const long long L = g->out_h * g->out_w, G = g->groups, Og = g->out_channels / G;                              \
        const long long CKg = g->channels / G * g->kernel_h * g->kernel_w;                                             \
        if (bias)                                                                                                      \
            for (long long o = 0; o < g->out_channels; o++)                                                            \
                for (long long l = 0; l < L; l++) out[o * L + l] = bias[o];                                            \
        for (long long k = 0; k < G; k++)                                                                              \
            GEMM(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, (int)Og, (int)L, (int)CKg, 1, w + k * Og * CKg,      \
                 (int)CKg, cols + k * CKg * L, (int)L, bias ? 1 : 0, out + k * Og * L, (int)L);                        \
    }                                                                                                                  \
    /* acc_w (Og x CKg per group) += grad_out_g @ cols_g^T: one GEMM per group, or, for at most DOT_ROWS im2col    \
       rows (a first layer's few input channels), Og * CKg dot products over the threads when threaded */              \
    static void weight_grad_image_##N(const ccc_conv2d* g, const T* grad_out, const T* cols, T* acc_w, T beta,         \
                                      int threaded) {                                                                  \
        const long long L = g->out_h * g->out_w, G = g->groups, Og = g->out_channels / G;                              \
        const long long CKg = g->channels / G * g->kernel_h * g->kernel_w;                                             \
        if (CKg <= DOT_ROWS) {                                                                                         \
            _Pragma("omp parallel for schedule(static) if(threaded && Og * G * CKg * L >= PARALLEL_MIN)")              \
            for (long long r = 0; r < G * Og; r++)                                                                     \
                dot_rows_##N(grad_out + r * L, cols + r / Og * CKg * L, L, CKg, acc_w + r * CKg, beta != 0);           \
            return;                                                                                                    \
        }                                                                                                              \
        for (long long k = 0; k < G; k++)                                                                              \
            GEMM(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_TRANS, (int)Og, (int)CKg, (int)L, 1, grad_out + k * Og * L,    \
                 (int)L, cols + k * CKg * L, (int)L, beta, acc_w + k * Og * CKg, (int)CKg);                            \
    }                                                                                                                  \
    static void bias_grad_image_##N(const ccc_conv2d* g, const T* grad_out, double* acc_b) {                           \
        const long long L = g->out_h * g->out_w;                                                                       \
        for (long long o = 0; o < g->out_channels; o++) {                                                              \
            double s = 0;                                                                                              \
            _Pragma("omp simd reduction(+:s)")                                                                         \
            for (long long l = 0; l < L; l++) s += grad_out[o * L + l];                                                \
            acc_b[o] += s;                                                                                             \
        }                                                                                                              \
    }                                                                                                                  \
    /* cols = W_g^T @ grad_out_g per group: the columns col2im sums into the input gradient */                         \
    static void input_cols_image_##N(const ccc_conv2d* g, const T* grad_out, const T* w, T* cols) {                    \
        const long long L = g->out_h * g->out_w, G = g->groups, Og = g->out_channels / G;                              \
        const long long CKg = g->channels / G * g->kernel_h * g->kernel_w;                                             \
        for (long long k = 0; k < G; k++)                                                                              \
            GEMM(CBLAS_ROW_MAJOR, CBLAS_TRANS, CBLAS_NO_TRANS, (int)CKg, (int)L, (int)Og, 1, w + k * Og * CKg,         \
                 (int)CKg, grad_out + k * Og * L, (int)L, 0, cols + k * CKg * L, (int)L);                              \
    }

#define DEFINE_CONV(T, N)                                                                                              \
    int ccc_conv2d_##N(const ccc_conv2d* g, const void* x_, const void* w_, const void* bias_, void* out_) {           \
        const T *x = (const T*)x_, *w = (const T*)w_, *bias = (const T*)bias_;                                         \
        T* out = (T*)out_;                                                                                             \
        const long long in_size = g->channels * g->height * g->width, L = g->out_h * g->out_w;                         \
        const long long out_size = g->out_channels * L, cols_size = g->channels * g->kernel_h * g->kernel_w * L;       \
        const int direct = pointwise(g);                                                                               \
        int failed = 0;                                                                                                \
        if (images_in_parallel(g)) {                                                                                   \
            _Pragma("omp parallel") {                                                                                  \
                T* cols = direct ? NULL : (T*)scratch(cols_size, sizeof(T), 0);                                        \
                if (!direct && !cols) {                                                                                \
                    _Pragma("omp atomic write") failed = 1;                                                            \
                }                                                                                                      \
                _Pragma("omp for schedule(static)") for (long long n = 0; n < g->batch; n++) {                         \
                    if (!direct && !cols) continue;                                                                    \
                    if (!direct) im2col_##N(g, x + n * in_size, cols, 0, g->channels);                                 \
                    forward_image_##N(g, direct ? x + n * in_size : cols, w, bias, out + n * out_size);                \
                }                                                                                                      \
                free(cols);                                                                                            \
            }                                                                                                          \
            return failed ? -1 : 0;                                                                                    \
        }                                                                                                              \
        T* cols = direct ? NULL : (T*)scratch(cols_size, sizeof(T), 0);                                                \
        if (!direct && !cols) return -1;                                                                               \
        for (long long n = 0; n < g->batch; n++) {                                                                     \
            if (!direct) im2col_threads_##N(g, x + n * in_size, cols);                                                 \
            forward_image_##N(g, direct ? x + n * in_size : cols, w, bias, out + n * out_size);                        \
        }                                                                                                              \
        free(cols);                                                                                                    \
        return 0;                                                                                                      \
    }

/* The backward of one image with the given scratch/accumulators: weight then input gradient (cols is reused). */
#define DEFINE_CONV_BACKWARD(T, N)                                                                                     \
    static void backward_image_##N(const ccc_conv2d* g, const T* grad_out, const T* x, const T* w, T* grad_x,          \
                                   T* acc_w, T beta_w, double* acc_b, T* cols, int threaded) {                         \
        if (acc_w) {                                                                                                   \
            if (cols) (threaded ? im2col_threads_##N(g, x, cols) : im2col_##N(g, x, cols, 0, g->channels));            \
            weight_grad_image_##N(g, grad_out, cols ? cols : x, acc_w, beta_w, threaded);                              \
        }                                                                                                              \
        if (acc_b) bias_grad_image_##N(g, grad_out, acc_b);                                                            \
        if (grad_x) {                                                                                                  \
            input_cols_image_##N(g, grad_out, w, cols ? cols : grad_x);                                                \
            if (cols) (threaded ? col2im_threads_##N(g, cols, grad_x) : col2im_##N(g, cols, grad_x, 0, g->channels));  \
        }                                                                                                              \
    }                                                                                                                  \
    int ccc_conv2d_backward_##N(const ccc_conv2d* g, const void* grad_out_, const void* x_, const void* w_,            \
                                void* grad_x_, void* grad_w_, void* grad_b_) {                                         \
        const T *grad_out = (const T*)grad_out_, *x = (const T*)x_, *w = (const T*)w_;                                 \
        T *grad_x = (T*)grad_x_, *grad_w = (T*)grad_w_, *grad_b = (T*)grad_b_;                                         \
        const long long in_size = g->channels * g->height * g->width, L = g->out_h * g->out_w;                         \
        const long long out_size = g->out_channels * L, cols_size = g->channels * g->kernel_h * g->kernel_w * L;       \
        const long long w_size = g->out_channels * (g->channels / g->groups) * g->kernel_h * g->kernel_w;              \
        const long long O = g->out_channels;                                                                           \
        const int use_cols = !pointwise(g) && (grad_x || grad_w);                                                      \
        int failed = 0;                                                                                                \
        if (images_in_parallel(g)) {                                                                                   \
            const int threads = omp_get_max_threads();                                                                 \
            T** acc_w = (T**)calloc((size_t)threads, sizeof(T*));                                                      \
            double** acc_b = (double**)calloc((size_t)threads, sizeof(double*));                                       \
            if (!acc_w || !acc_b) {                                                                                    \
                free(acc_w);                                                                                           \
                free(acc_b);                                                                                           \
                return -1;                                                                                             \
            }                                                                                                          \
            _Pragma("omp parallel num_threads(threads)") {                                                             \
                const int t = omp_get_thread_num();                                                                    \
                T* cols = use_cols ? (T*)scratch(cols_size, sizeof(T), 0) : NULL;                                      \
                if (grad_w) acc_w[t] = (T*)scratch(w_size, sizeof(T), 1);                                              \
                if (grad_b) acc_b[t] = (double*)scratch(O, sizeof(double), 1);                                         \
                const int ok = (!use_cols || cols) && (!grad_w || acc_w[t]) && (!grad_b || acc_b[t]);                  \
                if (!ok) {                                                                                             \
                    _Pragma("omp atomic write") failed = 1;                                                            \
                }                                                                                                      \
                _Pragma("omp for schedule(static)") for (long long n = 0; n < g->batch; n++) {                         \
                    if (ok)                                                                                            \
                        backward_image_##N(g, grad_out + n * out_size, x + n * in_size, w,                             \
                                           grad_x ? grad_x + n * in_size : NULL, grad_w ? acc_w[t] : NULL, 1,          \
                                           grad_b ? acc_b[t] : NULL, cols, 0);                                         \
                }                                                                                                      \
                free(cols);                                                                                            \
            }                                                                                                          \
            if (!failed && grad_w) {                                                                                   \
                memset(grad_w, 0, (size_t)w_size * sizeof(T));                                                         \
                for (int t = 0; t < threads; t++)                                                                      \
                    if (acc_w[t])                                                                                      \
                        for (long long i = 0; i < w_size; i++) grad_w[i] += acc_w[t][i];                               \
            }                                                                                                          \
            if (!failed && grad_b)                                                                                     \
                for (long long o = 0; o < O; o++) {                                                                    \
                    double s = 0;                                                                                      \
                    for (int t = 0; t < threads; t++) s += acc_b[t] ? acc_b[t][o] : 0;                                 \
                    grad_b[o] = (T)s;                                                                                  \
                }                                                                                                      \
            for (int t = 0; t < threads; t++) free(acc_w[t]), free(acc_b[t]);                                          \
            free(acc_w);                                                                                               \
            free(acc_b);                                                                                               \
            return failed ? -1 : 0;                                                                                    \
        }                                                                                                              \
        T* cols = use_cols ? (T*)scratch(cols_size, sizeof(T), 0) : NULL;                                              \
        double* sums = grad_b ? (double*)scratch(O, sizeof(double), 1) : NULL;                                         \
        if ((use_cols && !cols) || (grad_b && !sums)) failed = 1;                                                      \
        for (long long n = 0; n < g->batch && !failed; n++)                                                            \
            backward_image_##N(g, grad_out + n * out_size, x + n * in_size, w, grad_x ? grad_x + n * in_size : NULL,   \
                               grad_w, n ? 1 : 0, sums, cols, 1);                                                      \
        for (long long o = 0; !failed && grad_b && o < O; o++) grad_b[o] = (T)sums[o];                                 \
        free(cols);                                                                                                    \
        free(sums);                                                                                                    \
        return failed ? -1 : 0;                                                                                        \
    }

/* span() of each of the out windows along one dim, as (lo, hi) pairs; NULL when out of memory. */
static long long* window_spans(long long out, long long stride, long long pad, long long dilation, long long size,
                               long long kernel) {
    long long* spans = (long long*)malloc((size_t)(2 * out) * sizeof(long long));
    if (!spans) return NULL;
    for (long long w = 0; w < out; w++)
        span(w * stride - pad, dilation, size, kernel, &spans[2 * w], &spans[2 * w + 1]);
    return spans;
}

/* One pooling window: flat input position of its (0, 0) offset, steps between offsets, valid offset ranges. */
typedef struct {
    long long origin, row_step, col_step, i_lo, i_hi, j_lo, j_hi;
} window;

static inline window window_at(const ccc_pool2d* g, const long long* rows, const long long* cols, long long oh,
                               long long ow) {
    window w = {(oh * g->stride_h - g->pad_h) * g->width + ow * g->stride_w - g->pad_w, g->dilation_h * g->width,
                g->dilation_w, rows[2 * oh], rows[2 * oh + 1], cols[2 * ow], cols[2 * ow + 1]};
    return w;
}

/* Whether every pooling window is a dense KH x KW block inside the input: no padding, dilation 1, and the last
   window ends inside (always so in floor mode; in ceil mode only when it happens to fit). Such windows take the fast
   path below; every other geometry the generic one. */
static int dense_windows(const ccc_pool2d* g) {
    return g->pad_h == 0 && g->pad_w == 0 && g->dilation_h == 1 && g->dilation_w == 1 &&
           (g->out_h - 1) * g->stride_h + g->kernel_h <= g->height &&
           (g->out_w - 1) * g->stride_w + g->kernel_w <= g->width;
}

/* Whether windows never share an input position and cover the whole plane (kernel == stride, no remainder). */
static int tiles_plane(const ccc_pool2d* g) {
    return g->kernel_h == g->stride_h && g->kernel_w == g->stride_w && g->out_h * g->stride_h == g->height &&
           g->out_w * g->stride_w == g->width;
}

/* The dense window of output position (oh, ow), as the generic path's window_at gives it. */
static inline window dense_window_at(const ccc_pool2d* g, long long oh, long long ow) {
    window w = {oh * g->stride_h * g->width + ow * g->stride_w, g->width, 1, 0, g->kernel_h, 0, g->kernel_w};
    return w;
}

/* The fast path runs one output row at a time; its inner loops are written for a compile-time window, so GCC
   unrolls the window and vectorises across the row. CONSTANT_WINDOW calls a row function with 2x2/2, 3x3/3 or 3x3/2
   as constants (the common pooling layers) and with the runtime sizes otherwise. */
#define CONSTANT_WINDOW(row, kh, kw, sw, ...)                                                                          \
    ((kh) == 2 && (kw) == 2 && (sw) == 2   ? row(__VA_ARGS__, 2, 2, 2)                                                 \
     : (kh) == 3 && (kw) == 3 && (sw) == 3 ? row(__VA_ARGS__, 3, 3, 3)                                                 \
     : (kh) == 3 && (kw) == 3 && (sw) == 2 ? row(__VA_ARGS__, 3, 3, 2)                                                 \
                                           : row(__VA_ARGS__, kh, kw, sw))

/* float32 2x2/2 max pooling's gradient rows in AVX2 (the common pooling layer: LeNet's, VGG's). GCC leaves the
   select chain of max_grad_block scalar and branchy for these (10x the forward's time on random data); written with
   intrinsics, eight windows are one vector: the top and bottom rows' even and odd columns deinterleaved, the same
   selects as max_grad_block (the first position equal to the maximum gets zero + grad, none when it is -inf), the
   gradients interleaved back. A row's last windows (fewer than eight) run through a block staged in local buffers
   (-inf past the row's end). Whether a window held a NaN is returned: the caller redoes such rows. */
#if defined(__AVX2__)
static inline __m256 pool_deinterleave(__m256 lo, __m256 hi, int odd) {
    const __m256 pairs = odd ? _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1))
                             : _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(pairs), _MM_SHUFFLE(3, 1, 2, 0)));
}

static inline void pool_interleave_store(float* out, __m256 even, __m256 odd) {
    const __m256 lo = _mm256_unpacklo_ps(even, odd), hi = _mm256_unpackhi_ps(even, odd);
    _mm256_storeu_ps(out, _mm256_permute2f128_ps(lo, hi, 0x20));
    _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
}

static inline int max_grad_block22(const float* r0, const float* r1, const float* grad_out, float* g0, float* g1) {
    const __m256 zero = _mm256_setzero_ps(), none = _mm256_set1_ps(-INFINITY);
    const __m256 top0 = _mm256_loadu_ps(r0), top1 = _mm256_loadu_ps(r0 + 8);
    const __m256 bottom0 = _mm256_loadu_ps(r1), bottom1 = _mm256_loadu_ps(r1 + 8);
    const __m256 v[4] = {pool_deinterleave(top0, top1, 0), pool_deinterleave(top0, top1, 1),
                         pool_deinterleave(bottom0, bottom1, 0), pool_deinterleave(bottom0, bottom1, 1)};
    __m256 best = none, nan = zero, out[4];
    for (int k = 0; k < 4; k++) {
        best = _mm256_blendv_ps(best, v[k], _mm256_cmp_ps(v[k], best, _CMP_GT_OQ));
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(v[k], v[k], _CMP_UNORD_Q));
    }
    __m256 left = _mm256_and_ps(_mm256_cmp_ps(best, none, _CMP_GT_OQ), _mm256_add_ps(zero, _mm256_loadu_ps(grad_out)));
    for (int k = 0; k < 4; k++) {
        const __m256 hit = _mm256_cmp_ps(v[k], best, _CMP_GE_OQ);
        out[k] = _mm256_and_ps(hit, left);
        left = _mm256_andnot_ps(hit, left);
    }
    pool_interleave_store(g0, out[0], out[1]);
    pool_interleave_store(g1, out[2], out[3]);
    return _mm256_movemask_ps(nan) != 0;
}

static int max_grad_row22(const float* x, const float* grad_out, float* gx, long long W, long long OW) {
    int nan = 0;
    long long ow = 0;
    for (; ow + 8 <= OW; ow += 8)
        nan |= max_grad_block22(x + 2 * ow, x + W + 2 * ow, grad_out + ow, gx + 2 * ow, gx + W + 2 * ow);
    const long long rest = OW - ow;
    if (rest > 0) {
        float top[16], bottom[16], go[8] = {0}, g0[16], g1[16];
        for (int k = 0; k < 16; k++) top[k] = bottom[k] = -INFINITY;
        memcpy(top, x + 2 * ow, (size_t)(2 * rest) * sizeof(float));
        memcpy(bottom, x + W + 2 * ow, (size_t)(2 * rest) * sizeof(float));
        memcpy(go, grad_out + ow, (size_t)rest * sizeof(float));
        nan |= max_grad_block22(top, bottom, go, g0, g1);
        memcpy(gx + 2 * ow, g0, (size_t)(2 * rest) * sizeof(float));
        memcpy(gx + W + 2 * ow, g1, (size_t)(2 * rest) * sizeof(float));
    }
    return nan;
}
#define MAX_GRAD_ROW22_float32(x, grad_out, gx, W, OW, kh, kw, sw)                                                     \
    if ((kh) == 2 && (kw) == 2 && (sw) == 2) return max_grad_row22(x, grad_out, gx, W, OW);
#else
#define MAX_GRAD_ROW22_float32(x, grad_out, gx, W, OW, kh, kw, sw)
#endif
#define MAX_GRAD_ROW22_float64(x, grad_out, gx, W, OW, kh, kw, sw)

/* Max pooling over each (N * C) plane. On random data a branch per element mispredicts about once per window,
   so both passes are selects: window_max is the maximum (maxss) and whether a NaN was seen; window_argmax then
   finds, scanning backwards, the first position holding that maximum (or the first NaN), and -1 when nothing in
   the window is above -inf. A window's value is its first NaN, else its maximum.
   Fast path (dense windows): the maximum by the same select, NaNs only noted per output row; the gradient goes to
   the first position equal to that maximum (none when it is -inf). A row that held a NaN is redone with the
   generic window functions, so both paths give the same values, ties and NaNs. */
#define DEFINE_MAX_POOL(T, N)                                                                                          \
    static inline T window_max_##N(const T* x, const window* w, int* nan) {                                            \
        T best = -INFINITY;                                                                                            \
        int seen = 0;                                                                                                  \
        for (long long i = w->i_lo; i < w->i_hi; i++)                                                                  \
            for (long long j = w->j_lo; j < w->j_hi; j++) {                                                            \
                const T v = x[w->origin + i * w->row_step + j * w->col_step];                                          \
                best = v > best ? v : best;                                                                            \
                seen |= v != v;                                                                                        \
            }                                                                                                          \
        *nan = seen;                                                                                                   \
        return best;                                                                                                   \
    }                                                                                                                  \
    static inline long long window_argmax_##N(const T* x, const window* w, T best, int nan) {                          \
        long long at = -1;                                                                                             \
        if (nan || best > -INFINITY)                                                                                   \
            for (long long i = w->i_hi - 1; i >= w->i_lo; i--)                                                         \
                for (long long j = w->j_hi - 1; j >= w->j_lo; j--) {                                                   \
                    const long long k = w->origin + i * w->row_step + j * w->col_step;                                 \
                    at = (nan ? x[k] != x[k] : x[k] == best) ? k : at;                                                 \
                }                                                                                                      \
        return at;                                                                                                     \
    }                                                                                                                  \
    /* the input position that gets window w's gradient (-1: none) */                                                 \
    static inline long long window_first_##N(const T* x, const window* w) {                                          \
        int nan;                                                                                                       \
        const T best = window_max_##N(x, w, &nan);                                                                     \
        return window_argmax_##N(x, w, best, nan);                                                                     \
    }                                                                                                                  \
    /* window w's value */                                                                                             \
    static inline T window_value_##N(const T* x, const window* w) {                                                    \
        int nan;                                                                                                       \
        const T best = window_max_##N(x, w, &nan);                                                                     \
        return nan ? x[window_argmax_##N(x, w, best, 1)] : best;                                                       \
    }                                                                                                                  \
    /* fast path: the maximum of the dense window at x (rows W apart), NaNs skipped and noted in *nan */              \
    static inline __attribute__((always_inline)) T dense_max_##N(const T* restrict x, long long W, int kh, int kw,    \
                                                                 int* nan) {                                           \
        T best = -INFINITY;                                                                                            \
        int seen = 0; /* a local flag: through the pointer GCC vectorises the callers' loops less or not at all */     \
        for (int i = 0; i < kh; i++)                                                                                   \
            for (int j = 0; j < kw; j++) {                                                                             \
                const T v = x[i * W + j];                                                                              \
                best = v > best ? v : best;                                                                            \
                seen |= v != v;                                                                                        \
            }                                                                                                          \
        *nan |= seen;                                                                                                  \
        return best;                                                                                                   \
    }                                                                                                                  \
    /* one output row of maxima from the input rows at x; whether a window held a NaN */                               \
    static inline __attribute__((always_inline)) int max_row_##N(const T* restrict x, T* restrict out, long long W,   \
                                                                 long long OW, int kh, int kw, long long sw) {         \
        int nan = 0;                                                                                                   \
        for (long long ow = 0; ow < OW; ow++) out[ow] = dense_max_##N(x + ow * sw, W, kh, kw, &nan);                   \
        return nan;                                                                                                    \
    }                                                                                                                  \
    /* the gradient of VECTOR_WINDOWS windows side by side at x (rows W apart), which do not overlap, written over     \
       the same windows at gx (rows GW apart): each window's gradient where its maximum first occurs, zeros          \
       elsewhere; whether a window held a NaN. All selects in T on a constant count of windows, which GCC vectorises  \
       (integer flags beside them stop it; its scalar code for such selects branches). zero + g as the generic       \
       path's += into zeros (-0 becomes +0). */                                                                        \
    static inline __attribute__((always_inline)) int max_grad_block_##N(const T* restrict x,                          \
                                                                        const T* restrict grad_out, T* restrict gx,    \
                                                                        long long W, long long GW, int kh, int kw,     \
                                                                        long long sw) {                                \
        int nan = 0;                                                                                                   \
        const T zero = 0;                                                                                              \
        for (int ow = 0; ow < VECTOR_WINDOWS; ow++) {                                                                  \
            const T best = dense_max_##N(x + ow * sw, W, kh, kw, &nan);                                                \
            T left = best > -INFINITY ? zero + grad_out[ow] : zero; /* not yet given to a position */                  \
            for (int i = 0; i < kh; i++)                                                                               \
                for (int j = 0; j < kw; j++) {                                                                         \
                    const T v = x[i * W + ow * sw + j];                                                                \
                    gx[i * GW + ow * sw + j] = v >= best ? left : zero; /* >=: == in the NaN-free rows kept */         \
                    left = v >= best ? zero : left;                                                                    \
                }                                                                                                      \
        }                                                                                                              \
        return nan;                                                                                                    \
    }                                                                                                                  \
    /* one output row's gradient (see max_grad_block), a block of windows at a time, each staged in a local buffer   \
       (past the row's end: -inf, no gradient): with the input rows of a block a compile-time distance apart GCC      \
       vectorises it (on the tensor itself, rows W apart, it does not), and the row's last windows need no scalar     \
       tail. A full block's gradient is written straight into gx, the last part block's through a buffer. */          \
    static inline __attribute__((always_inline)) int max_grad_row_##N(const T* restrict x,                            \
                                                                      const T* restrict grad_out, T* restrict gx,      \
                                                                      long long W, long long OW, int kh, int kw,       \
                                                                      long long sw) {                                  \
        const long long width = VECTOR_WINDOWS * sw;                                                                   \
        T xs[PADDED_BLOCK], gs[PADDED_BLOCK], go[VECTOR_WINDOWS];                                                      \
        int nan = 0;                                                                                                   \
        for (long long first = 0; first < OW; first += VECTOR_WINDOWS) {                                               \
            const long long count = OW - first < VECTOR_WINDOWS ? OW - first : VECTOR_WINDOWS;                         \
            const long long used = (count - 1) * sw + kw; /* the columns the block's windows read */                   \
            const T* xb = x + first * sw;                                                                              \
            T* gb = gx + first * sw;                                                                                   \
            for (int i = 0; i < kh; i++)                                                                               \
                for (long long c = 0; c < width; c++) xs[i * width + c] = c < used ? xb[i * W + c] : -INFINITY;        \
            for (long long ow = 0; ow < VECTOR_WINDOWS; ow++) go[ow] = ow < count ? grad_out[first + ow] : 0;          \
            if (count == VECTOR_WINDOWS) {                                                                             \
                nan |= max_grad_block_##N(xs, go, gb, width, W, kh, kw, sw);                                           \
                continue;                                                                                              \
            }                                                                                                          \
            nan |= max_grad_block_##N(xs, go, gs, width, width, kh, kw, sw);                                           \
            for (int i = 0; i < kh; i++)                                                                               \
                for (long long c = 0; c < used; c++)                                                                   \
                    if (c % sw < kw) gb[i * W + c] = gs[i * width + c]; /* not the gaps between windows */             \
        }                                                                                                              \
        return nan;                                                                                                    \
    }                                                                                                                  \
    static int max_row_any_##N(const T* x, T* out, long long W, long long OW, int kh, int kw, long long sw) {          \
        return CONSTANT_WINDOW(max_row_##N, kh, kw, sw, x, out, W, OW);                                                \
    }                                                                                                                  \
    static int max_grad_row_any_##N(const T* x, const T* grad_out, T* gx, long long W, long long OW, int kh, int kw,   \
                                    long long sw) {                                                                    \
        MAX_GRAD_ROW22_##N(x, grad_out, gx, W, OW, kh, kw, sw)                                                         \
        return CONSTANT_WINDOW(max_grad_row_##N, kh, kw, sw, x, grad_out, gx, W, OW);                                  \
    }                                                                                                                  \
    static void max_pool_dense_##N(const ccc_pool2d* g, const T* x, T* out) {                                          \
        const long long plane = g->height * g->width, L = g->out_h * g->out_w, W = g->width, OW = g->out_w;            \
        _Pragma("omp parallel for schedule(static) if(g->planes * L * g->kernel_h * g->kernel_w >= PARALLEL_MIN)")     \
        for (long long p = 0; p < g->planes; p++)                                                                      \
            for (long long oh = 0; oh < g->out_h; oh++) {                                                              \
                const T* xp = x + p * plane;                                                                           \
                T* o = out + p * L + oh * OW;                                                                          \
                if (max_row_any_##N(xp + oh * g->stride_h * W, o, W, OW, (int)g->kernel_h, (int)g->kernel_w,           \
                                    g->stride_w))                                                                      \
                    for (long long ow = 0; ow < OW; ow++) {                                                            \
                        const window w = dense_window_at(g, oh, ow);                                                   \
                        o[ow] = window_value_##N(xp, &w);                                                              \
                    }                                                                                                  \
            }                                                                                                          \
    }                                                                                                                  \
    /* windows that do not overlap (and fit a staged block): each row's gradient written in place (the plane zeroed \
       first unless they tile it); others: each window's gradient added at its first maximum */                        \
    static void max_pool_backward_dense_##N(const ccc_pool2d* g, const T* grad_out, const T* x, T* grad_x) {           \
        const long long plane = g->height * g->width, L = g->out_h * g->out_w, W = g->width, OW = g->out_w;            \
        const int kh = (int)g->kernel_h, kw = (int)g->kernel_w;                                                        \
        const int disjoint = g->kernel_h <= g->stride_h && g->kernel_w <= g->stride_w &&                               \
                             g->kernel_h * g->stride_w * VECTOR_WINDOWS <= PADDED_BLOCK;                               \
        const int tiled = disjoint && tiles_plane(g);                                                                  \
        _Pragma("omp parallel for schedule(static) if(g->planes * L * g->kernel_h * g->kernel_w >= PARALLEL_MIN)")     \
        for (long long p = 0; p < g->planes; p++) {                                                                    \
            const T* xp = x + p * plane;                                                                               \
            T* gx = grad_x + p * plane;                                                                                \
            if (!tiled) memset(gx, 0, (size_t)plane * sizeof(T));                                                      \
            for (long long oh = 0; oh < g->out_h; oh++) {                                                              \
                const T* go = grad_out + p * L + oh * OW;                                                              \
                const long long top = oh * g->stride_h * W;                                                            \
                if (disjoint && !max_grad_row_any_##N(xp + top, go, gx + top, W, OW, kh, kw, g->stride_w)) continue;   \
                for (long long ow = 0; ow < OW; ow++) { /* overlapping windows, or a row that held a NaN */            \
                    const window w = dense_window_at(g, oh, ow);                                                       \
                    if (disjoint)                                                                                      \
                        for (int i = 0; i < kh; i++) memset(gx + w.origin + i * W, 0, (size_t)kw * sizeof(T));        \
                    const long long at = window_first_##N(xp, &w);                                                     \
                    if (at >= 0) gx[at] += go[ow];                                                                     \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
    }                                                                                                                  \
    int ccc_max_pool2d_##N(const ccc_pool2d* g, const void* x_, void* out_) {                                          \
        const T* x = (const T*)x_;                                                                                     \
        T* out = (T*)out_;                                                                                             \
        if (dense_windows(g)) {                                                                                        \
            max_pool_dense_##N(g, x, out);                                                                             \
            return 0;                                                                                                  \
        }                                                                                                              \
        const long long plane = g->height * g->width, L = g->out_h * g->out_w;                                         \
        long long* rows = window_spans(g->out_h, g->stride_h, g->pad_h, g->dilation_h, g->height, g->kernel_h);        \
        long long* cols = window_spans(g->out_w, g->stride_w, g->pad_w, g->dilation_w, g->width, g->kernel_w);         \
        if (rows && cols) {                                                                                            \
            _Pragma("omp parallel for schedule(static) if(g->planes * L * g->kernel_h * g->kernel_w >= PARALLEL_MIN)") \
            for (long long p = 0; p < g->planes; p++)                                                                  \
                for (long long oh = 0; oh < g->out_h; oh++)                                                            \
                    for (long long ow = 0; ow < g->out_w; ow++) {                                                      \
                        const window w = window_at(g, rows, cols, oh, ow);                                             \
                        out[p * L + oh * g->out_w + ow] = window_value_##N(x + p * plane, &w);                         \
                    }                                                                                                  \
        }                                                                                                              \
        const int failed = !rows || !cols;                                                                             \
        free(rows);                                                                                                    \
        free(cols);                                                                                                    \
        return failed ? -1 : 0;                                                                                        \
    }                                                                                                                  \
    int ccc_max_pool2d_backward_##N(const ccc_pool2d* g, const void* grad_out_, const void* x_, void* grad_x_) {       \
        const T *grad_out = (const T*)grad_out_, *x = (const T*)x_;                                                    \
        T* grad_x = (T*)grad_x_;                                                                                       \
        if (dense_windows(g)) {                                                                                        \
            max_pool_backward_dense_##N(g, grad_out, x, grad_x);                                                       \
            return 0;                                                                                                  \
        }                                                                                                              \
        const long long plane = g->height * g->width, L = g->out_h * g->out_w;                                         \
        long long* rows = window_spans(g->out_h, g->stride_h, g->pad_h, g->dilation_h, g->height, g->kernel_h);        \
        long long* cols = window_spans(g->out_w, g->stride_w, g->pad_w, g->dilation_w, g->width, g->kernel_w);         \
        if (rows && cols) {                                                                                            \
            _Pragma("omp parallel for schedule(static) if(g->planes * L * g->kernel_h * g->kernel_w >= PARALLEL_MIN)") \
            for (long long p = 0; p < g->planes; p++) {                                                                \
                const T* xp = x + p * plane;                                                                           \
                T* gx = grad_x + p * plane;                                                                            \
                memset(gx, 0, (size_t)plane * sizeof(T));                                                              \
                for (long long oh = 0; oh < g->out_h; oh++)                                                            \
                    for (long long ow = 0; ow < g->out_w; ow++) {                                                      \
                        const window w = window_at(g, rows, cols, oh, ow);                                             \
                        const long long at = window_first_##N(xp, &w);                                                 \
                        if (at >= 0) gx[at] += grad_out[p * L + oh * g->out_w + ow];                                   \
                    }                                                                                                  \
            }                                                                                                          \
        }                                                                                                              \
        const int failed = !rows || !cols;                                                                             \
        free(rows);                                                                                                    \
        free(cols);                                                                                                    \
        return failed ? -1 : 0;                                                                                        \
    }

/* The clipped extent of average-pooling window (oh, ow) and its divisor, as PyTorch's avg_pool2d computes them. */
typedef struct {
    long long h0, h1, w0, w1;
    double divisor;
} avg_window;

static inline avg_window avg_window_at(const ccc_pool2d* g, long long oh, long long ow, int count_include_pad,
                                       double divisor_override) {
    long long h0 = oh * g->stride_h - g->pad_h, w0 = ow * g->stride_w - g->pad_w;
    long long h1 = h0 + g->kernel_h, w1 = w0 + g->kernel_w;
    if (h1 > g->height + g->pad_h) h1 = g->height + g->pad_h;
    if (w1 > g->width + g->pad_w) w1 = g->width + g->pad_w;
    const long long padded = (h1 - h0) * (w1 - w0);
    if (h0 < 0) h0 = 0;
    if (w0 < 0) w0 = 0;
    if (h1 > g->height) h1 = g->height;
    if (w1 > g->width) w1 = g->width;
    avg_window w = {h0, h1, w0, w1, 0.0};
    w.divisor = divisor_override != 0.0 ? divisor_override
                                        : (double)(count_include_pad ? padded : (h1 - h0) * (w1 - w0));
    return w;
}

/* The divisor of every dense window (no padding, nothing clipped): the override, else the window's size. */
static double dense_divisor(const ccc_pool2d* g, double divisor_override) {
    return divisor_override != 0.0 ? divisor_override : (double)(g->kernel_h * g->kernel_w);
}

/* Average pooling over each (N * C) plane: a window's sum in double over its divisor; the backward spreads each
   window's gradient over its divisor to the window's input positions (planes are independent: no races).
   Fast path (dense windows, see dense_windows): every divisor is kh * kw (or the override), the sums run in the
   same order, and where windows do not overlap the backward writes each window's share over it (zero + share, as
   the generic += into zeros), so both paths give the same results. */
#define DEFINE_AVG_POOL(T, N)                                                                                          \
    static inline __attribute__((always_inline)) void avg_row_##N(const T* restrict x, T* restrict out, long long W,  \
                                                                  long long OW, double divisor, int kh, int kw,        \
                                                                  long long sw) {                                      \
        for (long long ow = 0; ow < OW; ow++) {                                                                        \
            double sum = 0.0;                                                                                          \
            for (int i = 0; i < kh; i++)                                                                               \
                for (int j = 0; j < kw; j++) sum += x[i * W + ow * sw + j];                                            \
            out[ow] = (T)(sum / divisor);                                                                              \
        }                                                                                                              \
    }                                                                                                                  \
    static inline __attribute__((always_inline)) void avg_grad_row_##N(const T* restrict grad_out, T* restrict gx,    \
                                                                       long long W, long long OW, double divisor,      \
                                                                       int kh, int kw, long long sw) {                 \
        const T zero = 0;                                                                                              \
        for (long long ow = 0; ow < OW; ow++) {                                                                        \
            const T share = zero + (T)(grad_out[ow] / divisor);                                                        \
            for (int i = 0; i < kh; i++)                                                                               \
                for (int j = 0; j < kw; j++) gx[i * W + ow * sw + j] = share;                                          \
        }                                                                                                              \
    }                                                                                                                  \
    static void avg_row_any_##N(const T* x, T* out, long long W, long long OW, double divisor, int kh, int kw,          \
                                long long sw) {                                                                        \
        CONSTANT_WINDOW(avg_row_##N, kh, kw, sw, x, out, W, OW, divisor);                                              \
    }                                                                                                                  \
    static void avg_grad_row_any_##N(const T* grad_out, T* gx, long long W, long long OW, double divisor, int kh,       \
                                     int kw, long long sw) {                                                           \
        CONSTANT_WINDOW(avg_grad_row_##N, kh, kw, sw, grad_out, gx, W, OW, divisor);                                   \
    }                                                                                                                  \
    /* the fast path of both directions (backward: windows that do not overlap); out is grad_x for the backward */    \
    static void avg_pool_dense_##N(const ccc_pool2d* g, const T* in, T* out, double divisor, int backward) {           \
        const long long plane = g->height * g->width, L = g->out_h * g->out_w, W = g->width, OW = g->out_w;            \
        const int kh = (int)g->kernel_h, kw = (int)g->kernel_w, tiled = tiles_plane(g);                                \
        _Pragma("omp parallel for schedule(static) if(g->planes * L * g->kernel_h * g->kernel_w >= PARALLEL_MIN)")     \
        for (long long p = 0; p < g->planes; p++) {                                                                    \
            if (backward && !tiled) memset(out + p * plane, 0, (size_t)plane * sizeof(T));                             \
            for (long long oh = 0; oh < g->out_h; oh++) {                                                              \
                const long long top = p * plane + oh * g->stride_h * W, row = p * L + oh * OW;                         \
                if (backward)                                                                                          \
                    avg_grad_row_any_##N(in + row, out + top, W, OW, divisor, kh, kw, g->stride_w);                    \
                else                                                                                                   \
                    avg_row_any_##N(in + top, out + row, W, OW, divisor, kh, kw, g->stride_w);                         \
            }                                                                                                          \
        }                                                                                                              \
    }                                                                                                                  \
    int ccc_avg_pool2d_##N(const ccc_pool2d* g, const void* x_, void* out_, int count_include_pad,                     \
                           double divisor_override) {                                                                  \
        const T* x = (const T*)x_;                                                                                     \
        T* out = (T*)out_;                                                                                             \
        const long long plane = g->height * g->width, L = g->out_h * g->out_w;                                         \
        if (dense_windows(g)) {                                                                                        \
            avg_pool_dense_##N(g, x, out, dense_divisor(g, divisor_override), 0);                                      \
            return 0;                                                                                                  \
        }                                                                                                              \
        _Pragma("omp parallel for schedule(static) if(g->planes * L * g->kernel_h * g->kernel_w >= PARALLEL_MIN)")     \
        for (long long p = 0; p < g->planes; p++)                                                                      \
            for (long long oh = 0; oh < g->out_h; oh++)                                                                \
                for (long long ow = 0; ow < g->out_w; ow++) {                                                          \
                    const avg_window w = avg_window_at(g, oh, ow, count_include_pad, divisor_override);                \
                    const T* xp = x + p * plane;                                                                       \
                    double sum = 0.0;                                                                                  \
                    for (long long i = w.h0; i < w.h1; i++)                                                            \
                        for (long long j = w.w0; j < w.w1; j++) sum += xp[i * g->width + j];                           \
                    out[p * L + oh * g->out_w + ow] = (T)(sum / w.divisor);                                            \
                }                                                                                                      \
        return 0;                                                                                                      \
    }                                                                                                                  \
    int ccc_avg_pool2d_backward_##N(const ccc_pool2d* g, const void* grad_out_, void* grad_x_, int count_include_pad,  \
                                    double divisor_override) {                                                         \
        const T* grad_out = (const T*)grad_out_;                                                                       \
        T* grad_x = (T*)grad_x_;                                                                                       \
        const long long plane = g->height * g->width, L = g->out_h * g->out_w;                                         \
        if (dense_windows(g) && g->kernel_h <= g->stride_h && g->kernel_w <= g->stride_w) {                            \
            avg_pool_dense_##N(g, grad_out, grad_x, dense_divisor(g, divisor_override), 1);                            \
            return 0;                                                                                                  \
        }                                                                                                              \
        _Pragma("omp parallel for schedule(static) if(g->planes * L * g->kernel_h * g->kernel_w >= PARALLEL_MIN)")     \
        for (long long p = 0; p < g->planes; p++) {                                                                    \
            T* gx = grad_x + p * plane;                                                                                \
            memset(gx, 0, (size_t)plane * sizeof(T));                                                                 \
            for (long long oh = 0; oh < g->out_h; oh++)                                                                \
                for (long long ow = 0; ow < g->out_w; ow++) {                                                          \
                    const avg_window w = avg_window_at(g, oh, ow, count_include_pad, divisor_override);                \
                    const T v = (T)(grad_out[p * L + oh * g->out_w + ow] / w.divisor);                                 \
                    for (long long i = w.h0; i < w.h1; i++)                                                            \
                        for (long long j = w.w0; j < w.w1; j++) gx[i * g->width + j] += v;                             \
                }                                                                                                      \
        }                                                                                                              \
        return 0;                                                                                                      \
    }

DEFINE_IM2COL(float, float32)
DEFINE_IM2COL(double, float64)
DEFINE_DOT_ROWS(float, float32)
DEFINE_DOT_ROWS(double, float64)
DEFINE_CONV_IMAGE(float, float32, scipy_cblas_sgemm)
DEFINE_CONV_IMAGE(double, float64, scipy_cblas_dgemm)
DEFINE_CONV(float, float32)
DEFINE_CONV(double, float64)
DEFINE_CONV_BACKWARD(float, float32)
DEFINE_CONV_BACKWARD(double, float64)
DEFINE_MAX_POOL(float, float32)
DEFINE_MAX_POOL(double, float64)
DEFINE_AVG_POOL(float, float32)
DEFINE_AVG_POOL(double, float64)
