/* SIMD math: the vector variants of libm's functions that glibc's libmvec ships, declared for GCC's vectoriser.

Included after <math.h> by every C file whose loops call exp, log, tanh, erf, ... (and by core.jit's fused
kernels). Under `omp simd` (and `omp parallel for simd`) GCC then calls `_ZGVeN16v_expf` (AVX-512, 16 floats),
`_ZGVdN8v_expf` (AVX2) or `_ZGVbN4v_expf` (SSE) for whole vectors instead of `expf` per element, whichever the
build targets. glibc declares these itself only under -ffast-math; these kernels are built without it (no
reassociation, NaN and infinities kept), so the declarations are ours: `notinbranch` (libmvec has no masked
variants), one per ISA GCC knows (libmvec exports all four). libmvec's float and double functions are within 4 ulp
of the correctly rounded result (glibc's manual) and handle NaN, infinities and out-of-range arguments the C
standard's way (each lane that needs it goes through the scalar function); libm's scalar functions are within 1-2
ulp. Vector calls need -fno-math-errno (libmvec sets no errno), which the build passes.

CCC_VECMATH is 1 where the variants exist: glibc 2.35 or later (the first with tanh, erf, log1p, ... besides exp, log,
sin, cos and pow) on x86-64, compiled by GCC with OpenMP or -fopenmp-simd. Elsewhere (musl, macOS, Arm, clang,
older glibc) nothing is declared and every call stays libm's scalar function: same code, slower.

CCC_MATH_CLONES marks a function whose loops call these: in a portable build (no -march=native, so SSE2 only) it
compiles the function three times, for x86-64 (SSE), x86-64-v3 (AVX2, FMA) and x86-64-v4 (AVX-512), and the
loader picks the best one the processor runs (GCC `target_clones`, an ifunc), as NumPy picks its SIMD loops at
run time. A native build (the default) is already compiled for the machine it runs on: CCC_MATH_CLONES is empty. */
#ifndef CCC_VECMATH_H
#define CCC_VECMATH_H

#include <math.h>

#if defined(__GLIBC__) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                         \
    (defined(_OPENMP) || defined(CCC_OPENMP_SIMD)) && !defined(__FAST_MATH__)
#if __GLIBC_PREREQ(2, 35)
#define CCC_VECMATH 1
#endif
#endif
#ifndef CCC_VECMATH
#define CCC_VECMATH 0
#endif

#if CCC_VECMATH
#define CCC_DECLARE_SIMD _Pragma("omp declare simd notinbranch")
/* F(name): float namef(float) and double name(double); F2 for the two-argument ones */
#define CCC_VEC1(name)                                                                                                 \
    CCC_DECLARE_SIMD float name##f(float);                                                                             \
    CCC_DECLARE_SIMD double name(double);
#define CCC_VEC2(name)                                                                                                 \
    CCC_DECLARE_SIMD float name##f(float, float);                                                                      \
    CCC_DECLARE_SIMD double name(double, double);
CCC_VEC1(exp)
CCC_VEC1(exp2)
CCC_VEC1(expm1)
CCC_VEC1(log)
CCC_VEC1(log2)
CCC_VEC1(log10)
CCC_VEC1(log1p)
CCC_VEC1(sin)
CCC_VEC1(cos)
CCC_VEC1(tan)
CCC_VEC1(asin)
CCC_VEC1(acos)
CCC_VEC1(atan)
CCC_VEC1(sinh)
CCC_VEC1(cosh)
CCC_VEC1(tanh)
CCC_VEC1(asinh)
CCC_VEC1(acosh)
CCC_VEC1(atanh)
CCC_VEC1(erf)
CCC_VEC1(erfc)
CCC_VEC1(cbrt)
CCC_VEC2(atan2)
CCC_VEC2(hypot)
CCC_VEC2(pow)
#undef CCC_VEC1
#undef CCC_VEC2
#endif

/* float32 pow of cpu_c's own (csrc/vecpow.c, see there why): declared SIMD here, its vector variants (AVX-512: own
kernel; AVX2, AVX, SSE: libmvec's) defined there. Only the C extension has them: core.jit's fused kernels call powf. */
#define CCC_HIDDEN __attribute__((visibility("hidden")))
#if CCC_VECMATH && !defined(CCC_VECPOW_IMPL)
CCC_DECLARE_SIMD CCC_HIDDEN float ccc_powf(float, float);
#else
CCC_HIDDEN float ccc_powf(float, float);
#endif

#if CCC_VECMATH && !defined(__AVX2__)
#define CCC_MATH_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define CCC_MATH_CLONES
#endif

/* float32 expm1 and tanh of our own. libmvec's expm1f and tanhf run at about 0.8x NumPy's own AVX-512 loops; these
are a branch-free polynomial after a range reduction, plain C that GCC inlines into the `omp simd` loops and
vectorises for whatever the build targets (SSE2 to AVX-512), with no library (so they serve every platform): about
1.15x (expm1) and 1.3x (tanh) libmvec's speed. Within 1.6 (expm1) and 2.6 (tanh) ulp of the correctly rounded result
over all float32 inputs (tests/test_cpu_c_vecmath.py sweeps them against float64); +-0 keep their sign, subnormals
give themselves, the limits (tanh +-1, expm1 -1 and inf) are exact, NaN stays NaN. Where the target has FMA (a native
build on a recent x86-64) the polynomial uses it (faster, no less accurate, but then the last bit depends on the
build; elsewhere -std=c99 keeps GCC from contracting a*b+c). The float64 functions stay libmvec's (or libm's).
core_cpu_c/renderer.py (and core.jit's fused kernels) call them for float32 and the half types. The same approach for
log and pow was slower than libmvec's logf and no faster than its powf here (docs/backends/cpu_c.md, "Vector math"). */
#if defined(__FMA__) || defined(__aarch64__)
#define CCC_FMAF(a, b, c) fmaf(a, b, c)
#else
#define CCC_FMAF(a, b, c) ((a) * (b) + (c))
#endif
static inline unsigned int ccc_float_bits(float x) {
    union { float f; unsigned int u; } v;
    v.f = x;
    return v.u;
}
static inline float ccc_bits_float(unsigned int u) {
    union { float f; unsigned int u; } v;
    v.u = u;
    return v.f;
}

/* c ? a : b as a blend of bits: a float `?:` GCC may turn into a branch (one arm folded to a constant), which
   stops the loop from vectorising (without -fno-trapping-math it may not compute both arms); bits it cannot. */
static inline float ccc_select(int c, float a, float b) {
    unsigned int m = 0u - (unsigned int)(c != 0);
    return ccc_bits_float((ccc_float_bits(a) & m) | (ccc_float_bits(b) & ~m));
}

/* expm1(a) = 2^j (1 + p(f)) - 1 for a = j ln2 + f, |f| <= ln2 / 2, a within [-18, 89] (callers clamp; NaN passes):
   p is ARM optimized-routines' expm1f polynomial; j is rounded by the 1.5 * 2^23 shift, whose low bits then hold
   it; the scaling is 2 (2^(j-1) (1 + p) - 1/2), exact, so that j = 128 (a up to 89: expm1 overflows from 88.72)
   gives inf and not NaN. Tiny a (subnormals too) gives a (p = f = a); -0 gives +0 (the caller puts the sign). */
static inline float ccc_expm1_reduced(float a) {
    float z = CCC_FMAF(a, 0x1.715476p+0f, 0x1.8p23f);
    float j = z - 0x1.8p23f;
    float f = CCC_FMAF(j, -0x1.7f7d1cp-20f, CCC_FMAF(j, -0x1.62e4p-1f, a));
    float f2 = f * f;
    float p = CCC_FMAF(f2, 0x1.6b55a2p-10f, CCC_FMAF(0x1.12287cp-7f, f, 0x1.555736p-5f));
    p = CCC_FMAF(f2, CCC_FMAF(f2, p, CCC_FMAF(0x1.5554aep-3f, f, 0x1.fffffep-2f)), f);
    float half_two_j = ccc_bits_float((ccc_float_bits(z) << 23) + 0x3f000000u);
    return 2.0f * CCC_FMAF(p, half_two_j, half_two_j - 0.5f);
}

/* expm1(x): x clamped to [-18, 89] (below -17.33 it rounds to -1, above 88.73 overflows; NaN stays); |x| < 2^-25
   gives x itself (its correct rounding; the scaling by 1/2 and 2 would lose a subnormal's last bit, and -0's sign). */
static inline float ccc_expm1f(float x) {
    float a = ccc_select(x > 89.0f, 89.0f, x);
    a = ccc_select(a < -18.0f, -18.0f, a);
    return ccc_select(fabsf(x) < 0x1p-25f, x, ccc_expm1_reduced(a));
}

/* tanh|x| = q / (q + 2), q = expm1(2|x|), with x's sign. 2|x| is clamped to 18.2 (tanh rounds to 1 from |x| =
   9.011: there q + 2 rounds to q), which keeps NaN (no select after it). Tiny x gives x: q = 2x, q / (q + 2) = x. */
static inline float ccc_tanhf(float x) {
    float a = 2.0f * fabsf(x);
    float q = ccc_expm1_reduced(ccc_select(a > 18.2f, 18.2f, a));
    return copysignf(q / (q + 2.0f), x);
}

#endif
