/* Data-movement kernels of the cpu_c backend: copies and casts (copy_, fill_, flip, cat), ranges, gather/scatter and
single-tensor advanced indexing.

Operands are validated in movement.py: every view inside its storage, written memory overlapping nothing that is
read. Casts follow NumPy's astype: C conversions where C defines them (integers narrow modulo 2^n, as GCC defines;
to bool is != 0), and a float -> integer value that is NaN or out of the integer's range (undefined in C) is not
converted at all: the kernel returns 1 and the caller runs NumPy's copy instead. Scatter and index_put run every
target's updates in the order NumPy's ufunc.at applies them (increasing position along the indexed dim), one
thread per group of targets, so results are bit-identical to the reference whatever the thread count. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "half.h"
#include "movement.h"
#include "omp_compat.h"

#define PARALLEL_MIN 32768LL /* elements below which a loop stays on one thread, as for the elementwise kernels */
#define COPY_PARALLEL_MIN 32768LL /* the same for copies, fills and ranges (libgomp's workers spin between ops, so
                                     waking them is cheap; and the same split keeps each half on its core) */
#define CHUNK 16384LL        /* a long row is split into chunks of this many elements (threads over one row) */
#define MAX_DIMS 64
#define QBLOCK 64LL /* index_put: the fewest trailing elements a task takes when rows are split over threads */

typedef unsigned char cbool_t;
enum { KB, KI, KF }; /* kinds: bool, integer, floating */

/* name, C type, kind, exclusive bounds of the float values whose truncation fits the type (integers), lowest and
   highest value (the identities of amax/amin) */
#define FOR_EACH_TYPE(X)                                                                                               \
    X(bool, cbool_t, KB, 0.0, 0.0, 0, 1)                                                                               \
    X(uint8, uint8_t, KI, -1.0, 256.0, 0, UINT8_MAX)                                                                   \
    X(int8, int8_t, KI, -129.0, 128.0, INT8_MIN, INT8_MAX)                                                             \
    X(int16, int16_t, KI, -32769.0, 32768.0, INT16_MIN, INT16_MAX)                                                     \
    X(int32, int32_t, KI, -2147483649.0, 2147483648.0, INT32_MIN, INT32_MAX)                                           \
    X(int64, int64_t, KI, -9223372036854777856.0, 9223372036854775808.0, INT64_MIN, INT64_MAX)                         \
    X(float32, float, KF, 0.0, 0.0, -INFINITY, INFINITY)                                                               \
    X(float64, double, KF, 0.0, 0.0, -INFINITY, INFINITY)

typedef int (*row_fn)(long long len, char* dst, long long ds, const char* src, long long ss);

/* -- casts ------------------------------------------------------------------------------------------------------ */

/* Casts are compiled for AVX2 and AVX-512 too, the best picked at load time through an ifunc (as NumPy dispatches
   its own casts): without them a float -> int64 or int64 -> float conversion is one scalar instruction per element.
   GCC 12+ on x86-64 Linux (glibc's ifuncs, the x86-64-v3/v4 names); sanitizer builds keep one copy. */
#if defined(__GNUC__) && __GNUC__ >= 12 && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) &&   \
    !defined(__SANITIZE_ADDRESS__)
#define CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define CLONES
#endif

/* d = (DT)s as NumPy's astype (to bool: != 0). A float -> integer value outside (DLO, DHI), or NaN, is undefined in
   C: it is never converted (0 is, in its place), and the run reports it so that NumPy redoes the copy. Branch-free,
   so that the loops vectorize. The bounds are compared in the source type: rounded to float they only move inwards
   (-2^31 - 1 -> -2^31, -2^63 - 2048 -> -2^63; the upper ones are powers of two), which sends a few valid values to
   NumPy, never an invalid one to C. */
#define CONVERT(DT, DK, SK, d, s)                                                                                      \
    do {                                                                                                               \
        if (DK == KI && SK == KF) {                                                                                    \
            int ok_ = ((s) > lo) & ((s) < hi);                                                                         \
            d = (DT)(ok_ ? (s) : 0);                                                                                   \
            bad |= !ok_;                                                                                               \
        } else {                                                                                                       \
            d = DK == KB ? (DT)((s) != 0) : (DT)(s);                                                                   \
        }                                                                                                              \
    } while (0)

#define DEFINE_CAST(DN, DT, DK, DLO, DHI, SN, ST, SK)                                                                  \
    CLONES static int cast_##DN##_##SN(long long len, char* dv, long long ds, const char* sv, long long ss) {          \
        DT* d = (DT*)dv;                                                                                               \
        const ST* s = (const ST*)sv;                                                                                   \
        const ST lo = (ST)(DLO), hi = (ST)(DHI);                                                                       \
        int bad = 0;                                                                                                   \
        (void)lo, (void)hi;                                                                                            \
        if (ds == 1 && ss == 1) {                                                                                      \
            for (long long i = 0; i < len; i++) CONVERT(DT, DK, SK, d[i], s[i]);                                       \
        } else {                                                                                                       \
            for (long long i = 0; i < len; i++) CONVERT(DT, DK, SK, d[i * ds], s[i * ss]);                             \
        }                                                                                                              \
        return bad;                                                                                                    \
    }

#define CASTS_FROM(SN, ST, SK, SLO, SHI, SMIN, SMAX)                                                                   \
    DEFINE_CAST(bool, cbool_t, KB, 0.0, 0.0, SN, ST, SK)                                                               \
    DEFINE_CAST(uint8, uint8_t, KI, -1.0, 256.0, SN, ST, SK)                                                           \
    DEFINE_CAST(int8, int8_t, KI, -129.0, 128.0, SN, ST, SK)                                                           \
    DEFINE_CAST(int16, int16_t, KI, -32769.0, 32768.0, SN, ST, SK)                                                     \
    DEFINE_CAST(int32, int32_t, KI, -2147483649.0, 2147483648.0, SN, ST, SK)                                           \
    DEFINE_CAST(int64, int64_t, KI, -9223372036854777856.0, 9223372036854775808.0, SN, ST, SK)                         \
    DEFINE_CAST(float32, float, KF, 0.0, 0.0, SN, ST, SK)                                                              \
    DEFINE_CAST(float64, double, KF, 0.0, 0.0, SN, ST, SK)

FOR_EACH_TYPE(CASTS_FROM)

#define CAST_ROW(SN, ST, SK, SLO, SHI, SMIN, SMAX)                                                                     \
    {cast_bool_##SN,  cast_uint8_##SN,   cast_int8_##SN,    cast_int16_##SN,                                           \
     cast_int32_##SN, cast_int64_##SN,   cast_float32_##SN, cast_float64_##SN},

static const row_fn CASTS[8][8] = {FOR_EACH_TYPE(CAST_ROW)}; /* [src type][dst type] */
static const int SIZES[8] = {1, 1, 1, 2, 4, 8, 4, 8};

/* float32 <-> float16 (type 8) / bfloat16 (type 9), the casts autocast makes: half.h's exact widening and
   round-to-nearest-even narrowing (NaN stays NaN, infinities and subnormals are kept), as NumPy's and ml_dtypes'
   astype. Other pairs with a half type are left to NumPy. */
#define DEFINE_HALF_CAST(NAME, DT, ST, CONVERT)                                                                        \
    CLONES static int NAME(long long len, char* dv, long long ds, const char* sv, long long ss) {                      \
        DT* d = (DT*)dv;                                                                                               \
        const ST* s = (const ST*)sv;                                                                                   \
        if (ds == 1 && ss == 1) {                                                                                      \
            for (long long i = 0; i < len; i++) d[i] = CONVERT(s[i]);                                                  \
        } else {                                                                                                       \
            for (long long i = 0; i < len; i++) d[i * ds] = CONVERT(s[i * ss]);                                        \
        }                                                                                                              \
        return 0;                                                                                                      \
    }

DEFINE_HALF_CAST(cast_float16_float32, unsigned short, float, ccc_f16_store)
DEFINE_HALF_CAST(cast_bfloat16_float32, unsigned short, float, ccc_bf16_store)
DEFINE_HALF_CAST(cast_float32_float16, float, unsigned short, ccc_f16_load)
DEFINE_HALF_CAST(cast_float32_bfloat16, float, unsigned short, ccc_bf16_load)

/* The cast from type src to type dst, or 0 where C has none. */
static row_fn find_cast(int dst, int src) {
    if (dst >= 0 && dst < 8 && src >= 0 && src < 8) return CASTS[src][dst];
    if (src == 6) return dst == 8 ? cast_float16_float32 : dst == 9 ? cast_bfloat16_float32 : 0;
    if (dst == 6) return src == 8 ? cast_float32_float16 : src == 9 ? cast_float32_bfloat16 : 0;
    return 0;
}

static int type_size(int type) { return type >= 0 && type < 8 ? SIZES[type] : 2; }

/* -- raw moves (same dtype) ------------------------------------------------------------------------------------- */

typedef struct {
    uint64_t lo, hi;
} bytes16;

#define DEFINE_MOVE(W, T)                                                                                              \
    static int move_##W(long long len, char* dv, long long ds, const char* sv, long long ss) {                         \
        T* d = (T*)dv;                                                                                                 \
        const T* s = (const T*)sv;                                                                                     \
        if (ds == 1 && ss == 1) {                                                                                      \
            memcpy(d, s, (size_t)len * sizeof(T));                                                                     \
        } else if (ss == 0) {                                                                                          \
            const T v = s[0];                                                                                          \
            if (ds == 1)                                                                                               \
                for (long long i = 0; i < len; i++) d[i] = v;                                                          \
            else                                                                                                       \
                for (long long i = 0; i < len; i++) d[i * ds] = v;                                                     \
        } else {                                                                                                       \
            for (long long i = 0; i < len; i++) d[i * ds] = s[i * ss];                                                 \
        }                                                                                                              \
        return 0;                                                                                                      \
    }

DEFINE_MOVE(1, uint8_t)
DEFINE_MOVE(2, uint16_t)
DEFINE_MOVE(4, uint32_t)
DEFINE_MOVE(8, uint64_t)
DEFINE_MOVE(16, bytes16)

/* -- the strided walk ------------------------------------------------------------------------------------------- */

/* A transpose-like copy (one operand contiguous along the last dim, the other along the one before): fn over the
   rows of TILE x TILE tiles of the last two dims, so the strided side's cache lines are reused across a tile's rows
   instead of being fetched once per element (x.t().contiguous(): 1 -> several GB/s) */
#define TILE 32LL

static int run_tiles(int ndim, const long long* shape, const long long* dst_st, const long long* src_st, char* dst,
                     int dsz, const char* src, int ssz, row_fn fn) {
    long long M = shape[ndim - 2], N = shape[ndim - 1], outer = 1;
    for (int k = 0; k < ndim - 2; k++) outer *= shape[k];
    long long tm = (M + TILE - 1) / TILE, tn = (N + TILE - 1) / TILE, tasks = outer * tm * tn;
    long long dm = dst_st[ndim - 2], dn = dst_st[ndim - 1], sm = src_st[ndim - 2], sn = src_st[ndim - 1];
    int bad = 0;
#pragma omp parallel for reduction(| : bad) schedule(static) if (outer * M * N >= COPY_PARALLEL_MIN && tasks > 1)
    for (long long t = 0; t < tasks; t++) {
        long long r = t / (tm * tn), bi = (t / tn) % tm * TILE, bj = t % tn * TILE;
        long long doff = bi * dm + bj * dn, soff = bi * sm + bj * sn;
        for (int k = ndim - 3; k >= 0; k--) {
            long long i = r % shape[k];
            r /= shape[k];
            doff += i * dst_st[k];
            soff += i * src_st[k];
        }
        long long rows = M - bi < TILE ? M - bi : TILE, len = N - bj < TILE ? N - bj : TILE;
        for (long long i = 0; i < rows; i++)
            bad |= fn(len, dst + (doff + i * dm) * dsz, dn, src + (soff + i * sm) * ssz, sn);
    }
    return bad;
}

/* fn over every row of the last dim (long rows in chunks), the rows and chunks spread over the threads */
static int run_rows(int ndim, const long long* shape, const long long* dst_st, const long long* src_st, char* dst,
                    int dsz, const char* src, int ssz, row_fn fn) {
    long long inner = shape[ndim - 1], rows = 1;
    for (int k = 0; k < ndim - 1; k++) rows *= shape[k];
    long long n = rows * inner;
    if (n == 0) return 0;
    long long chunks = (inner + CHUNK - 1) / CHUNK, tasks = rows * chunks;
    long long dlast = dst_st[ndim - 1], slast = src_st[ndim - 1];
    if (ndim >= 2 && inner >= TILE && shape[ndim - 2] >= TILE &&
        ((dlast == 1 && slast != 1 && src_st[ndim - 2] == 1) || (slast == 1 && dlast != 1 && dst_st[ndim - 2] == 1)))
        return run_tiles(ndim, shape, dst_st, src_st, dst, dsz, src, ssz, fn);
    int bad = 0;
#pragma omp parallel for reduction(| : bad) schedule(static) if (n >= COPY_PARALLEL_MIN && tasks > 1)
    for (long long t = 0; t < tasks; t++) {
        long long r = t / chunks, start = (t % chunks) * CHUNK;
        long long doff = start * dlast, soff = start * slast;
        for (int k = ndim - 2; k >= 0; k--) {
            long long i = r % shape[k];
            r /= shape[k];
            doff += i * dst_st[k];
            soff += i * src_st[k];
        }
        long long len = inner - start < CHUNK ? inner - start : CHUNK;
        bad |= fn(len, dst + doff * dsz, dlast, src + soff * ssz, slast);
    }
    return bad;
}

int ccc_copy_cast(int dst_type, int src_type, int ndim, const long long* shape, const long long* dst_strides,
                  const long long* src_strides, void* dst, const void* src) {
    row_fn fn = find_cast(dst_type, src_type);
    if (fn == 0 || ndim < 1) return 1;
    return run_rows(ndim, shape, dst_strides, src_strides, (char*)dst, type_size(dst_type), (const char*)src,
                    type_size(src_type), fn);
}

void ccc_copy_bytes(int itemsize, int ndim, const long long* shape, const long long* dst_strides,
                    const long long* src_strides, void* dst, const void* src) {
    row_fn fn = itemsize == 1   ? move_1
                : itemsize == 2 ? move_2
                : itemsize == 4 ? move_4
                : itemsize == 8 ? move_8
                : itemsize == 16 ? move_16
                                 : 0;
    if (fn == 0 || ndim < 1) return;
    run_rows(ndim, shape, dst_strides, src_strides, (char*)dst, itemsize, (const char*)src, itemsize, fn);
}

/* -- ranges: values computed in int64 or double per chunk, then cast like a copy -------------------------------- */

#define RANGE_CHUNK 1024LL

#define DEFINE_RANGE(NAME, VT, SRC_TYPE, VALUE)                                                                        \
    static int NAME(int dst_type, long long n, VT a, VT b, double c, char* dst, long long stride) {                    \
        row_fn fn = CASTS[SRC_TYPE][dst_type];                                                                         \
        long long chunks = (n + RANGE_CHUNK - 1) / RANGE_CHUNK;                                                        \
        int dsz = SIZES[dst_type], bad = 0;                                                                            \
        (void)c;                                                                                                       \
        _Pragma("omp parallel for reduction(| : bad) schedule(static) if (n >= COPY_PARALLEL_MIN)")                    \
        for (long long t = 0; t < chunks; t++) {                                                                       \
            VT v[RANGE_CHUNK];                                                                                         \
            long long start = t * RANGE_CHUNK, len = n - start < RANGE_CHUNK ? n - start : RANGE_CHUNK;                \
            for (long long j = 0; j < len; j++) {                                                                      \
                long long i = start + j;                                                                               \
                v[j] = VALUE;                                                                                          \
            }                                                                                                          \
            bad |= fn(len, dst + start * stride * dsz, stride, (const char*)v, 1);                                     \
        }                                                                                                              \
        return bad;                                                                                                    \
    }

/* NumPy's int64 start + step * index wraps: unsigned arithmetic, the same bits */
DEFINE_RANGE(arange_int, int64_t, 5, (int64_t)((uint64_t)a + (uint64_t)b * (uint64_t)i))
/* float64 start + step * index: two roundings, never fused (-std=c99 keeps GCC from contracting into an FMA) */
DEFINE_RANGE(arange_double, double, 7, a + b * (double)i)
/* a: start, b: end, c: step; the first half counts up from start, the second down from end */
DEFINE_RANGE(linspace_double, double, 7, i < n / 2 ? a + c * (double)i : b - c * ((double)(n - 1) - (double)i))

int ccc_arange_int(int dst_type, long long n, long long start, long long step, void* dst, long long stride) {
    if (dst_type < 0 || dst_type > 7) return 1;
    return arange_int(dst_type, n, start, step, 0.0, (char*)dst, stride);
}

int ccc_arange_double(int dst_type, long long n, double start, double step, void* dst, long long stride) {
    if (dst_type < 0 || dst_type > 7) return 1;
    return arange_double(dst_type, n, start, step, 0.0, (char*)dst, stride);
}

int ccc_linspace(int dst_type, long long n, double start, double end, void* dst, long long stride) {
    if (dst_type < 0 || dst_type > 7) return 1;
    if (n == 1) return arange_double(dst_type, 1, start, 0.0, 0.0, (char*)dst, stride);
    double step = n > 1 ? (end - start) / (double)(n - 1) : 0.0;
    return linspace_double(dst_type, n, start, end, step, (char*)dst, stride);
}

/* -- gather ----------------------------------------------------------------------------------------------------- */

#define DEFINE_GATHER(W, T)                                                                                            \
    static int gather_##W(long long len, const long long* idx, long long is, const char* in, long long ins,            \
                          long long dst, long long size, char* out, long long* bad) {                                  \
        const T* x = (const T*)in;                                                                                     \
        T* o = (T*)out;                                                                                                \
        for (long long i = 0; i < len; i++) {                                                                          \
            long long v = idx[i * is];                                                                                 \
            if (v < 0 || v >= size) {                                                                                  \
                *bad = v;                                                                                              \
                return 1;                                                                                              \
            }                                                                                                          \
            o[i] = x[i * ins + v * dst];                                                                               \
        }                                                                                                              \
        return 0;                                                                                                      \
    }

DEFINE_GATHER(1, uint8_t)
DEFINE_GATHER(2, uint16_t)
DEFINE_GATHER(4, uint32_t)
DEFINE_GATHER(8, uint64_t)

int ccc_gather(int itemsize, int ndim, const long long* shape, const long long* in_strides,
               const long long* index_strides, int dim, long long dim_size, const void* input,
               const long long* index, void* out, long long* bad) {
    int (*fn)(long long, const long long*, long long, const char*, long long, long long, long long, char*,
              long long*) = itemsize == 1   ? gather_1
                            : itemsize == 2 ? gather_2
                            : itemsize == 4 ? gather_4
                            : itemsize == 8 ? gather_8
                                            : 0;
    if (fn == 0 || ndim < 1 || ndim > MAX_DIMS || dim < 0 || dim >= ndim) return 1;
    long long ins[MAX_DIMS];
    for (int k = 0; k < ndim; k++) ins[k] = k == dim ? 0 : in_strides[k];
    long long dstride = in_strides[dim], inner = shape[ndim - 1], rows = 1;
    for (int k = 0; k < ndim - 1; k++) rows *= shape[k];
    if (rows * inner == 0) return 0;
    int failed = 0;
    long long first_bad = 0;
#pragma omp parallel for schedule(static) if (rows * inner >= PARALLEL_MIN && rows > 1)
    for (long long r = 0; r < rows; r++) {
        long long rem = r, ioff = 0, xoff = 0, mine = 0;
        for (int k = ndim - 2; k >= 0; k--) {
            long long i = rem % shape[k];
            rem /= shape[k];
            ioff += i * index_strides[k];
            xoff += i * ins[k];
        }
        if (fn(inner, index + ioff, index_strides[ndim - 1], (const char*)input + xoff * itemsize, ins[ndim - 1],
               dstride, dim_size, (char*)out + r * inner * itemsize, &mine)) {
#pragma omp critical(ccc_gather_bad)
            {
                failed = 1;
                first_bad = mine;
            }
        }
    }
    if (failed) *bad = first_bad;
    return failed;
}

/* -- scatter and index_put: typed updates ----------------------------------------------------------------------- */

/* NumPy's maximum/minimum: NaN wins (the first one), a tie gives the second operand */
#define MAXIMUM(a, s) ((a) != (a) ? (a) : (s) != (s) ? (s) : (a) > (s) ? (a) : (s))
#define MINIMUM(a, s) ((a) != (a) ? (a) : (s) != (s) ? (s) : (a) < (s) ? (a) : (s))
/* integers wrap (through unsigned arithmetic); bools: sum is or, prod is and */
#define UPDATE(T, K, reduce, a, s)                                                                                     \
    (reduce == 1   ? (K == KF   ? (T)((a) + (s))                                                                       \
                      : K == KB ? (T)(((a) != 0) | ((s) != 0))                                                         \
                                : (T)((unsigned long long)(a) + (unsigned long long)(s)))                              \
     : reduce == 2 ? (K == KF   ? (T)((a) * (s))                                                                       \
                      : K == KB ? (T)(((a) != 0) & ((s) != 0))                                                         \
                                : (T)((unsigned long long)(a) * (unsigned long long)(s)))                              \
     : reduce == 3 ? (T)MAXIMUM(a, s)                                                                                  \
     : reduce == 4 ? (T)MINIMUM(a, s)                                                                                  \
                   : (T)(s))

/* one run along the scattered dim, in increasing order: the targets of one run are nobody else's */
#define DEFINE_SCATTER(N, T, K, LO, HI, TMIN, TMAX)                                                                    \
    static void scatter_run_##N(int reduce, int include_self, long long len, char* sv, long long sd,                   \
                                const long long* idx, long long is, const char* srcv, long long ss) {                  \
        T* x = (T*)sv;                                                                                                 \
        const T* src = (const T*)srcv;                                                                                 \
        if (reduce && !include_self) {                                                                                 \
            const T identity = reduce == 1 ? (T)0 : reduce == 2 ? (T)1 : reduce == 3 ? (T)(TMIN) : (T)(TMAX);          \
            for (long long i = 0; i < len; i++) x[idx[i * is] * sd] = identity;                                        \
        }                                                                                                              \
        for (long long i = 0; i < len; i++) {                                                                          \
            T* t = x + idx[i * is] * sd;                                                                               \
            *t = UPDATE(T, K, reduce, *t, src[i * ss]);                                                                \
        }                                                                                                              \
    }                                                                                                                  \
    static void index_put_block_##N(int accumulate, long long J, long long qlen, T* x, long long sd, long long sq,     \
                                    long long size, const long long* idx, long long is, const T* v, long long vj,     \
                                    long long vq) {                                                                    \
        for (long long j = 0; j < J; j++) {                                                                            \
            long long w = idx[j * is];                                                                                 \
            T* t = x + (w < 0 ? w + size : w) * sd;                                                                    \
            const T* s = v + j * vj;                                                                                   \
            if (accumulate)                                                                                            \
                for (long long q = 0; q < qlen; q++) t[q * sq] = UPDATE(T, K, 1, t[q * sq], s[q * vq]);                \
            else if (sq == 1 && vq == 1)                                                                               \
                memcpy(t, s, (size_t)qlen * sizeof(T));                                                                \
            else                                                                                                       \
                for (long long q = 0; q < qlen; q++) t[q * sq] = s[q * vq];                                            \
        }                                                                                                              \
    }

FOR_EACH_TYPE(DEFINE_SCATTER)

typedef void (*scatter_fn)(int, int, long long, char*, long long, const long long*, long long, const char*,
                           long long);
#define SCATTER_ENTRY(N, T, K, LO, HI, TMIN, TMAX) scatter_run_##N,
static const scatter_fn SCATTERS[8] = {FOR_EACH_TYPE(SCATTER_ENTRY)};

/* 1 and the first (row-major) value outside [low, high) of a strided index, else 0 */
static int check_index(int ndim, const long long* shape, const long long* strides, const long long* index,
                       long long low, long long high, long long* bad) {
    long long n = 1, count[MAX_DIMS] = {0};
    for (int k = 0; k < ndim; k++) n *= shape[k];
    long long off = 0;
    for (long long e = 0; e < n; e++) {
        long long v = index[off];
        if (v < low || v >= high) {
            *bad = v;
            return 1;
        }
        for (int k = ndim - 1; k >= 0; k--) { /* odometer */
            off += strides[k];
            if (++count[k] < shape[k]) break;
            off -= strides[k] * shape[k];
            count[k] = 0;
        }
    }
    return 0;
}

int ccc_scatter(int type, int reduce, int include_self, int ndim, const long long* shape,
                const long long* self_strides, const long long* index_strides, const long long* src_strides,
                int dim, long long dim_size, void* self, const long long* index, const void* src, long long* bad) {
    if (type < 0 || type > 7 || reduce < 0 || reduce > 4 || ndim < 1 || ndim > MAX_DIMS || dim < 0 || dim >= ndim)
        return 1;
    if (check_index(ndim, shape, index_strides, index, 0, dim_size, bad)) return 1;
    /* the scattered dim innermost: each row's targets differ from every other row's */
    long long rshape[MAX_DIMS], rself[MAX_DIMS], ridx[MAX_DIMS], rsrc[MAX_DIMS], rows = 1;
    int m = 0;
    for (int k = 0; k < ndim; k++) {
        if (k == dim) continue;
        rshape[m] = shape[k], rself[m] = self_strides[k], ridx[m] = index_strides[k], rsrc[m] = src_strides[k];
        rows *= shape[k];
        m++;
    }
    long long len = shape[dim];
    if (rows * len == 0) return 0;
    int sz = SIZES[type];
    scatter_fn fn = SCATTERS[type];
#pragma omp parallel for schedule(static) if (rows * len >= PARALLEL_MIN && rows > 1)
    for (long long r = 0; r < rows; r++) {
        long long rem = r, so = 0, io = 0, xo = 0;
        for (int k = m - 1; k >= 0; k--) {
            long long i = rem % rshape[k];
            rem /= rshape[k];
            so += i * rself[k];
            io += i * ridx[k];
            xo += i * rsrc[k];
        }
        fn(reduce, include_self, len, (char*)self + so * sz, self_strides[dim], index + io, index_strides[dim],
           (const char*)src + xo * sz, src_strides[dim]);
    }
    return 0;
}

/* -- single-tensor advanced indexing ---------------------------------------------------------------------------- */

#define DEFINE_INDEX(W, T)                                                                                             \
    static void index_row_##W(long long Q, const char* in, long long inq, char* out) {                                 \
        const T* x = (const T*)in;                                                                                     \
        T* o = (T*)out;                                                                                                \
        if (inq == 1)                                                                                                  \
            memcpy(o, x, (size_t)Q * sizeof(T));                                                                       \
        else                                                                                                           \
            for (long long q = 0; q < Q; q++) o[q] = x[q * inq];                                                       \
    }

DEFINE_INDEX(1, uint8_t)
DEFINE_INDEX(2, uint16_t)
DEFINE_INDEX(4, uint32_t)
DEFINE_INDEX(8, uint64_t)

#define INDEX_POINTS(T)                                                                                                \
    do {                                                                                                               \
        const T* x = (const T*)input;                                                                                  \
        T* o = (T*)out;                                                                                                \
        _Pragma("omp parallel for collapse(2) schedule(static) if (rows >= PARALLEL_MIN)")                             \
        for (long long p = 0; p < P; p++)                                                                              \
            for (long long j = 0; j < J; j++) {                                                                        \
                long long w = index[j * index_stride];                                                                 \
                o[p * J + j] = x[p * in_strides[0] + (w < 0 ? w + high : w) * in_strides[1]];                          \
            }                                                                                                          \
    } while (0)

int ccc_index(int itemsize, long long P, long long J, long long Q, const long long* in_strides, long long low,
              long long high, const void* input, const long long* index, long long index_stride, void* out,
              long long* bad) {
    void (*fn)(long long, const char*, long long, char*) = itemsize == 1   ? index_row_1
                                                           : itemsize == 2 ? index_row_2
                                                           : itemsize == 4 ? index_row_4
                                                           : itemsize == 8 ? index_row_8
                                                                           : 0;
    if (fn == 0 || low < -high) return 1;
    if (check_index(1, &J, &index_stride, index, low, high, bad)) return 1;
    long long rows = P * J;
    if (Q == 1) { /* single elements (x.view(-1)[idx]): a typed loop, no call per element */
        switch (itemsize) {
            case 1: INDEX_POINTS(uint8_t); break;
            case 2: INDEX_POINTS(uint16_t); break;
            case 4: INDEX_POINTS(uint32_t); break;
            default: INDEX_POINTS(uint64_t); break;
        }
        return 0;
    }
#pragma omp parallel for schedule(static) if (rows * Q >= PARALLEL_MIN && rows > 1)
    for (long long r = 0; r < rows; r++) {
        long long p = r / J, j = r % J, w = index[j * index_stride];
        if (w < 0) w += high;
        fn(Q, (const char*)input + (p * in_strides[0] + w * in_strides[1]) * itemsize, in_strides[2],
           (char*)out + r * Q * itemsize);
    }
    return 0;
}

#define INDEX_PUT_CASE(CODE, N, T)                                                                                     \
    case CODE:                                                                                                         \
        index_put_block_##N(accumulate, J, qlen, (T*)self + p * self_strides[0] + q0 * self_strides[2],               \
                            self_strides[1], self_strides[2], high, index, index_stride,                               \
                            (const T*)values + p * values_strides[0] + q0 * values_strides[2], values_strides[1],     \
                            values_strides[2]);                                                                        \
        break;

int ccc_index_put(int type, int accumulate, long long P, long long J, long long Q, const long long* self_strides,
                  const long long* values_strides, long long low, long long high, void* self, const long long* index,
                  long long index_stride, const void* values, long long* bad) {
    if (type < 0 || type > 7 || low < -high) return 1;
    if (check_index(1, &J, &index_stride, index, low, high, bad)) return 1;
    /* a task owns whole rows p, or (fewer rows than threads) a block of each row's trailing elements: all updates
       of a target stay in one task, in index order, whatever the split */
    int threads = omp_get_max_threads();
    long long blocks = 1;
    if (P * J * Q >= PARALLEL_MIN && P < threads) {
        blocks = (threads + P - 1) / P;
        if (blocks > (Q + QBLOCK - 1) / QBLOCK) blocks = (Q + QBLOCK - 1) / QBLOCK;
    }
    long long qblock = (Q + blocks - 1) / blocks, tasks = P * blocks;
#pragma omp parallel for schedule(static) if (P * J * Q >= PARALLEL_MIN && tasks > 1)
    for (long long t = 0; t < tasks; t++) {
        long long p = t / blocks, q0 = (t % blocks) * qblock;
        long long qlen = Q - q0 < qblock ? Q - q0 : qblock;
        if (qlen <= 0) continue;
        switch (type) {
            INDEX_PUT_CASE(0, bool, cbool_t)
            INDEX_PUT_CASE(1, uint8, uint8_t)
            INDEX_PUT_CASE(2, int8, int8_t)
            INDEX_PUT_CASE(3, int16, int16_t)
            INDEX_PUT_CASE(4, int32, int32_t)
            INDEX_PUT_CASE(5, int64, int64_t)
            INDEX_PUT_CASE(6, float32, float)
            INDEX_PUT_CASE(7, float64, double)
        }
    }
    return 0;
}

/* -- nonzero ---------------------------------------------------------------------------------------------------- */

/* elements [e0, e1) of the row-major order: how many are nonzero, and (out not NULL) their coordinates */
#define DEFINE_NONZERO(N, T, NONZERO)                                                                                  \
    static long long nonzero_chunk_##N(int ndim, const long long* shape, const long long* strides, const char* base,  \
                                       long long e0, long long e1, long long* out, long long limit) {                 \
        long long coord[MAX_DIMS], rem = e0, found = 0, e = e0;                                                        \
        for (int k = ndim - 1; k >= 0; k--) coord[k] = rem % shape[k], rem /= shape[k];                                \
        const int last = ndim - 1;                                                                                     \
        while (e < e1) {                                                                                               \
            long long run = shape[last] - coord[last], off = 0;                                                        \
            if (run > e1 - e) run = e1 - e;                                                                            \
            for (int k = 0; k < ndim; k++) off += coord[k] * strides[k];                                               \
            const T* x = (const T*)base + off;                                                                         \
            const long long st = strides[last];                                                                        \
            if (out == 0) {                                                                                            \
                for (long long i = 0; i < run; i++) {                                                                  \
                    T v = x[i * st];                                                                                   \
                    found += (NONZERO) ? 1 : 0;                                                                        \
                }                                                                                                      \
            } else {                                                                                                   \
                for (long long i = 0; i < run; i++) {                                                                  \
                    T v = x[i * st];                                                                                   \
                    if ((NONZERO) && found < limit) {                                                                  \
                        long long* row = out + found * ndim;                                                           \
                        for (int k = 0; k < last; k++) row[k] = coord[k];                                              \
                        row[last] = coord[last] + i;                                                                   \
                        found++;                                                                                       \
                    }                                                                                                  \
                }                                                                                                      \
            }                                                                                                          \
            e += run;                                                                                                  \
            coord[last] += run;                                                                                        \
            for (int k = last; k > 0 && coord[k] == shape[k]; k--) coord[k] = 0, coord[k - 1]++;                       \
        }                                                                                                              \
        return found;                                                                                                  \
    }

DEFINE_NONZERO(bool, uint8_t, v != 0)
DEFINE_NONZERO(uint8, uint8_t, v != 0)
DEFINE_NONZERO(int8, int8_t, v != 0)
DEFINE_NONZERO(int16, int16_t, v != 0)
DEFINE_NONZERO(int32, int32_t, v != 0)
DEFINE_NONZERO(int64, int64_t, v != 0)
DEFINE_NONZERO(float32, float, v != 0) /* NaN is nonzero, -0.0 is not */
DEFINE_NONZERO(float64, double, v != 0)
DEFINE_NONZERO(half, uint16_t, (v & 0x7fff) != 0)

typedef long long (*nonzero_fn)(int, const long long*, const long long*, const char*, long long, long long,
                                long long*, long long);
static const nonzero_fn NONZEROS[9] = {nonzero_chunk_bool,  nonzero_chunk_uint8,   nonzero_chunk_int8,
                                       nonzero_chunk_int16, nonzero_chunk_int32,   nonzero_chunk_int64,
                                       nonzero_chunk_float32, nonzero_chunk_float64, nonzero_chunk_half};

void ccc_nonzero_count(int type, int ndim, const long long* shape, const long long* strides, const void* input,
                       long long chunk, long long* counts) {
    if (type < 0 || type > 8 || ndim < 1 || ndim > MAX_DIMS || chunk < 1) return;
    long long n = 1;
    for (int k = 0; k < ndim; k++) n *= shape[k];
    long long chunks = (n + chunk - 1) / chunk;
    nonzero_fn fn = NONZEROS[type];
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN && chunks > 1)
    for (long long c = 0; c < chunks; c++) {
        long long e1 = (c + 1) * chunk < n ? (c + 1) * chunk : n;
        counts[c] = fn(ndim, shape, strides, (const char*)input, c * chunk, e1, 0, 0);
    }
}

void ccc_nonzero_write(int type, int ndim, const long long* shape, const long long* strides, const void* input,
                       long long chunk, const long long* offsets, long long* out) {
    if (type < 0 || type > 8 || ndim < 1 || ndim > MAX_DIMS || chunk < 1) return;
    long long n = 1;
    for (int k = 0; k < ndim; k++) n *= shape[k];
    long long chunks = (n + chunk - 1) / chunk;
    nonzero_fn fn = NONZEROS[type];
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN && chunks > 1)
    for (long long c = 0; c < chunks; c++) {
        long long e1 = (c + 1) * chunk < n ? (c + 1) * chunk : n;
        fn(ndim, shape, strides, (const char*)input, c * chunk, e1, out + offsets[c] * ndim,
           offsets[c + 1] - offsets[c]);
    }
}
