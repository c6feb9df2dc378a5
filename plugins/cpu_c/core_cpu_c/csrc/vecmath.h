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

#if CCC_VECMATH && !defined(__AVX2__)
#define CCC_MATH_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define CCC_MATH_CLONES
#endif

#endif
