/* float32 pow: `ccc_powf` and its SIMD variants, which the elementwise loops call (csrc/vecmath.h declares it
`omp declare simd`, so GCC's vectoriser calls `_ZGVeN16vv_ccc_powf` for 16 floats at once, and so on).

Why our own: libmvec's `powf` ran at 0.34x NumPy's (NumPy's SVML loop, 0.72 ms for 2^20 elements on this Zen 4, one
thread; libmvec 2.0 ms). A plain-C polynomial pow that GCC vectorises was no faster than libmvec: its table look-ups
become gathers and a table-free log needs a double division. The AVX-512 variant below is written with intrinsics so
that the 16-entry tables are in-register permutes (`vpermt2pd`) and the scaling by 2^k is `vscalefpd`: 1.4 ms, within
0.59 ulp of the correctly rounded result (glibc's scalar `powf`: 0.82 ulp by its manual; libmvec's bound is 4).
docs/backends/cpu_c.md, "Vector math", has the measurements.

The AVX-512 variant computes, for x > 0 normal and y finite, t = y log2(x) in double and 2^t in double, then rounds
to float once:
  - log2(x) = k + log2(z), x = z 2^k with z in [0.6992, 1.3984) (its float bits minus 0x3f330000 give k in the top
    9 bits and the table index in the next 4); log2(z) = log2(c) + log2(1 + r), r = z / c - 1 = z (1/c) - 1 in
    double (exact to 2^-53), where c is the midpoint of z's 16th of the range (exactly 1 for the 16th holding 1,
    so that pow(1, y) = 1 and powers of two are exact), |r| < 0.0297, and log2(1 + r) is its Taylor series to r^6
    (truncation below 5e-12);
  - 2^t = 2^kt 2^f, kt = round(t), |f| <= 1/2, 2^f the Taylor series of e^(f ln 2) to degree 7 (below 5.3e-9
    relative, 0.09 float ulp); `vscalefpd` multiplies by 2^kt, giving inf and 0 (or a subnormal, rounded once on
    the conversion to float) for results out of float's range;
  - x < 0: |x|^y, negated for an odd integer y; NaN for a y that is not an integer.
Lanes with x zero, subnormal, infinite or NaN, or y infinite or NaN take the scalar `powf` (C99's special cases).

The AVX2, AVX and SSE variants call libmvec's `powf` variants; `ccc_powf` itself (the loops' scalar remainder, and
every call where libmvec is missing) is libm's `powf`. */
#define CCC_VECPOW_IMPL 1
#include <math.h>

#include "vecmath.h"

CCC_HIDDEN float ccc_powf(float x, float y) { return powf(x, y); }

#if CCC_VECMATH
#include <immintrin.h>

#define CCC_AVX512 __attribute__((target("avx512f")))

/* 1/c and log2(c) of the 16 subranges of z (c: the subrange's midpoint; 1 for the one holding 1) */
static const double ccc_pow_invc[16] = {
    0x1.661ec6a5122f9p+0, 0x1.571ed3c506b3ap+0, 0x1.49539e3b2d067p+0, 0x1.3c995a47babe7p+0,
    0x1.30d190130d190p+0, 0x1.25e22708092f1p+0, 0x1.1bb4a4046ed29p+0, 0x1.12358e75d3033p+0,
    0x1.0953f39010954p+0, 0x1.0000000000000p+0, 0x1.e573ac901e574p-1, 0x1.ca4b3055ee191p-1,
    0x1.b2036406c80d9p-1, 0x1.9c2d14ee4a102p-1, 0x1.886e5f0abb04ap-1, 0x1.767dce434a9b1p-1};
static const double ccc_pow_log2c[16] = {
    -0x1.efec61b011f85p-2, -0x1.b0b67f4f46810p-2, -0x1.7418acebbf18fp-2, -0x1.39de8e1559f6fp-2,
    -0x1.01d9bbcfa61d4p-2, -0x1.97c1cb13c7ec1p-3, -0x1.2f9e32d5bfdd1p-3, -0x1.960caf9abb7cap-4,
    -0x1.a6f9c377dd31bp-5, 0x0.0p+0, 0x1.3aa2fdd27f1c3p-4, 0x1.476a9f983f74dp-3,
    0x1.e840be74e6a4dp-3, 0x1.406463b1b0449p-2, 0x1.88e9c72e0b226p-2, 0x1.ce0a4923a587dp-2};

#define CCC_LN2 0x1.62e42fefa39efp-1
#define CCC_INV_LN2 0x1.71547652b82fep+0

/* z^y 2^(k y) for 8 lanes: z (float), k and the table index (int32), y (float) */
CCC_AVX512 static inline __m256 ccc_pow8(__m256 zf, __m256i k, __m256i index, __m256 yf) {
    const __m512i i = _mm512_cvtepi32_epi64(index);
    const __m512d invc = _mm512_permutex2var_pd(_mm512_loadu_pd(ccc_pow_invc), i, _mm512_loadu_pd(ccc_pow_invc + 8));
    const __m512d log2c =
        _mm512_permutex2var_pd(_mm512_loadu_pd(ccc_pow_log2c), i, _mm512_loadu_pd(ccc_pow_log2c + 8));
    const __m512d r = _mm512_fmsub_pd(_mm512_cvtps_pd(zf), invc, _mm512_set1_pd(1.0));
    __m512d p = _mm512_fmadd_pd(r, _mm512_set1_pd(-CCC_INV_LN2 / 6), _mm512_set1_pd(CCC_INV_LN2 / 5));
    p = _mm512_fmadd_pd(r, p, _mm512_set1_pd(-CCC_INV_LN2 / 4));
    p = _mm512_fmadd_pd(r, p, _mm512_set1_pd(CCC_INV_LN2 / 3));
    p = _mm512_fmadd_pd(r, p, _mm512_set1_pd(-CCC_INV_LN2 / 2));
    p = _mm512_fmadd_pd(r, p, _mm512_set1_pd(CCC_INV_LN2));
    const __m512d log2x = _mm512_fmadd_pd(r, p, _mm512_add_pd(log2c, _mm512_cvtepi32_pd(k)));
    const __m512d t = _mm512_mul_pd(_mm512_cvtps_pd(yf), log2x);
    const __m512d kt = _mm512_roundscale_pd(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512d f = _mm512_sub_pd(t, kt);
    const double c1 = CCC_LN2, c2 = c1 * c1 / 2, c3 = c2 * c1 / 3, c4 = c3 * c1 / 4, c5 = c4 * c1 / 5,
                 c6 = c5 * c1 / 6, c7 = c6 * c1 / 7;
    __m512d q = _mm512_fmadd_pd(f, _mm512_set1_pd(c7), _mm512_set1_pd(c6));
    q = _mm512_fmadd_pd(f, q, _mm512_set1_pd(c5));
    q = _mm512_fmadd_pd(f, q, _mm512_set1_pd(c4));
    q = _mm512_fmadd_pd(f, q, _mm512_set1_pd(c3));
    q = _mm512_fmadd_pd(f, q, _mm512_set1_pd(c2));
    q = _mm512_fmadd_pd(f, q, _mm512_set1_pd(c1));
    q = _mm512_fmadd_pd(f, q, _mm512_set1_pd(1.0));
    return _mm512_cvtpd_ps(_mm512_scalef_pd(q, kt));
}

CCC_HIDDEN CCC_AVX512 __m512 _ZGVeN16vv_ccc_powf(__m512 x, __m512 y) {
    const __m512i ix = _mm512_castps_si512(x);
    const __m512i iax = _mm512_and_si512(ix, _mm512_set1_epi32(0x7fffffff));
    /* C99's special cases: |x| zero, subnormal, inf or NaN (|x| - FLT_MIN wraps or reaches inf - FLT_MIN), y inf
       or NaN */
    const __mmask16 special =
        _mm512_cmp_epu32_mask(_mm512_sub_epi32(iax, _mm512_set1_epi32(0x00800000)), _mm512_set1_epi32(0x7f000000),
                              _MM_CMPINT_NLT) |
        _mm512_cmp_epu32_mask(_mm512_and_si512(_mm512_castps_si512(y), _mm512_set1_epi32(0x7fffffff)),
                              _mm512_set1_epi32(0x7f800000), _MM_CMPINT_NLT);
    const __m512i tmp = _mm512_sub_epi32(iax, _mm512_set1_epi32(0x3f330000));
    const __m512i index = _mm512_and_si512(_mm512_srli_epi32(tmp, 19), _mm512_set1_epi32(15));
    const __m512i top = _mm512_and_si512(tmp, _mm512_set1_epi32((int)0xff800000u));
    const __m512 z = _mm512_castsi512_ps(_mm512_sub_epi32(iax, top));
    const __m512i k = _mm512_srai_epi32(top, 23);
#define CCC_HIGH8(v) _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))
    const __m256 low = ccc_pow8(_mm512_castps512_ps256(z), _mm512_castsi512_si256(k),
                                _mm512_castsi512_si256(index), _mm512_castps512_ps256(y));
    const __m256 high = ccc_pow8(CCC_HIGH8(z), _mm512_extracti64x4_epi64(k, 1), _mm512_extracti64x4_epi64(index, 1),
                                 CCC_HIGH8(y));
#undef CCC_HIGH8
    __m512 res = _mm512_castpd_ps(
        _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(low)), _mm256_castps_pd(high), 1));
    const __mmask16 negative = _mm512_cmp_epi32_mask(ix, _mm512_setzero_si512(), _MM_CMPINT_LT);
    if (negative) {
        const __mmask16 integer =
            _mm512_cmp_ps_mask(_mm512_roundscale_ps(y, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), y, _CMP_EQ_OQ);
        /* odd: the low bit of y as int32 (beyond 2^31 the conversion gives 0x80000000, even, as every such y is) */
        const __mmask16 odd = _mm512_test_epi32_mask(_mm512_cvttps_epi32(y), _mm512_set1_epi32(1)) & integer;
        res = _mm512_castsi512_ps(_mm512_mask_xor_epi32(_mm512_castps_si512(res), negative & odd,
                                                        _mm512_castps_si512(res), _mm512_set1_epi32((int)0x80000000u)));
        res = _mm512_mask_mov_ps(res, negative & ~integer, _mm512_set1_ps(NAN));
    }
    if (special) {
        float xs[16], ys[16], rs[16];
        _mm512_storeu_ps(xs, x);
        _mm512_storeu_ps(ys, y);
        _mm512_storeu_ps(rs, res);
        for (int l = 0; l < 16; l++)
            if (special >> l & 1) rs[l] = powf(xs[l], ys[l]);
        res = _mm512_loadu_ps(rs);
    }
    return res;
}

/* without AVX-512: libmvec's variants */
#define CCC_AVX2 __attribute__((target("avx2")))
#define CCC_AVX __attribute__((target("avx")))
CCC_AVX2 __m256 _ZGVdN8vv_powf(__m256, __m256);
CCC_HIDDEN CCC_AVX2 __m256 _ZGVdN8vv_ccc_powf(__m256 x, __m256 y) { return _ZGVdN8vv_powf(x, y); }
CCC_AVX __m256 _ZGVcN8vv_powf(__m256, __m256);
CCC_HIDDEN CCC_AVX __m256 _ZGVcN8vv_ccc_powf(__m256 x, __m256 y) { return _ZGVcN8vv_powf(x, y); }
__m128 _ZGVbN4vv_powf(__m128, __m128);
CCC_HIDDEN __m128 _ZGVbN4vv_ccc_powf(__m128 x, __m128 y) { return _ZGVbN4vv_powf(x, y); }
#endif
