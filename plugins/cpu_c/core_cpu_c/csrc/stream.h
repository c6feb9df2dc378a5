/* Non-temporal (streaming) stores, for elementwise outputs far larger than the caches. A plain store reads each
   cache line of the output before writing it; a streaming store writes the line without reading it, so a kernel
   writing a fresh output moves a quarter fewer bytes (a*b+c on 2^24 floats: about 1.3x). Only outputs of at least
   CCC_STREAM_MIN_BYTES use them: a smaller output is likely read again while it is still in the cache. Each
   writing thread fences its streaming stores (ccc_stream_fence) before the kernel returns. Not a cffi header. */
#ifndef CCC_STREAM_H
#define CCC_STREAM_H
#include <stdint.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>
#define CCC_STREAM 1
#define CCC_STREAM_MIN_BYTES (16LL << 20)
#if defined(__AVX__)
#define CCC_STREAM_BYTES 32
static inline void ccc_stream(void* dst, const void* src) {
    _mm256_stream_si256((__m256i*)dst, _mm256_load_si256((const __m256i*)src));
}
#else
#define CCC_STREAM_BYTES 16
static inline void ccc_stream(void* dst, const void* src) {
    _mm_stream_si128((__m128i*)dst, _mm_load_si128((const __m128i*)src));
}
#endif
static inline void ccc_stream_fence(void) { _mm_sfence(); }
#else
#define CCC_STREAM 0
#endif
#endif
