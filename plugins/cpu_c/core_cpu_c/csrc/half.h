/* float16 / bfloat16 storage (unsigned short bits), computed in float32: loads widen exactly, stores round to
   nearest even, as PyTorch's kernels (and NumPy's / ml_dtypes' casts) do. NaN stays NaN (quiet).

   bfloat16 is the upper half of a float32: rounding is integer arithmetic on the bits (vectorises everywhere).
   float16 uses the compiler's _Float16 when the target has the F16C conversion instructions (GCC 12+ on x86-64
   with -march=native on such a CPU, or -mf16c): vcvtph2ps / vcvtps2ph, vectorised. Elsewhere a portable bit
   conversion (F. Giesen's float_to_half_fast3_rtne), exact too. ccc_half_path() says which one was built. */
#ifndef CCC_HALF_H
#define CCC_HALF_H

#include <stdint.h>
#include <string.h>

#if defined(__FLT16_MAX__) && defined(__F16C__)
#define CCC_F16_NATIVE 1
#else
#define CCC_F16_NATIVE 0
#endif

static inline float ccc_bf16_load(unsigned short h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline unsigned short ccc_bf16_store(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u); /* NaN: quiet, sign kept */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

#if CCC_F16_NATIVE
static inline float ccc_f16_load(unsigned short h) {
    _Float16 v;
    memcpy(&v, &h, sizeof v);
    return (float)v;
}

static inline unsigned short ccc_f16_store(float f) {
    _Float16 v = (_Float16)f;
    unsigned short h;
    memcpy(&h, &v, sizeof h);
    return h;
}
#else
static inline float ccc_f16_load(unsigned short h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu, u;
    if (em >= 0x7c00u) {
        u = 0x7f800000u | ((em & 0x3ffu) << 13); /* infinity, NaN */
    } else if (em >= 0x400u) {
        u = (em << 13) + 0x38000000u; /* normal: exponent rebiased by 127 - 15 */
    } else {
        float f = (float)em * 5.9604644775390625e-08f; /* zero, subnormal: em * 2^-24, exact */
        memcpy(&u, &f, sizeof u);
    }
    u |= sign;
    float r;
    memcpy(&r, &u, sizeof r);
    return r;
}

static inline unsigned short ccc_f16_store(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a >= 0x47800000u) return (unsigned short)(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u)); /* >= 2^16 */
    if (a < 0x38800000u) { /* below 2^-14: a subnormal or zero; adding 0.5 lets the FPU round at 2^-24 */
        float x;
        memcpy(&x, &a, sizeof x);
        x += 0.5f;
        memcpy(&a, &x, sizeof a);
        return (unsigned short)(sign | (a - 0x3f000000u));
    }
    a += 0xc8000fffu + ((a >> 13) & 1u); /* rebias the exponent, round to nearest even */
    return (unsigned short)(sign | (a >> 13));
}
#endif

#endif
