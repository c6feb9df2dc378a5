/* Row kernels of the cpu_c backend: reductions of contiguous trailing blocks and fused softmax (plain C for cffi).
   A "row" is `cols` contiguous elements starting at in_off + r * row_stride; outputs are dense. */
void ccc_sum_float32(long long rows, long long cols, const void* in_base, long long in_off, long long row_stride,
                     void* out);
void ccc_sum_float64(long long rows, long long cols, const void* in_base, long long in_off, long long row_stride,
                     void* out);
void ccc_amax_float32(long long rows, long long cols, const void* in_base, long long in_off, long long row_stride,
                      void* out);
void ccc_amax_float64(long long rows, long long cols, const void* in_base, long long in_off, long long row_stride,
                      void* out);
void ccc_amin_float32(long long rows, long long cols, const void* in_base, long long in_off, long long row_stride,
                      void* out);
void ccc_amin_float64(long long rows, long long cols, const void* in_base, long long in_off, long long row_stride,
                      void* out);
void ccc_softmax_float32(long long rows, long long cols, const void* in_base, long long in_off, long long row_stride,
                         void* out, int take_log);
void ccc_softmax_float64(long long rows, long long cols, const void* in_base, long long in_off, long long row_stride,
                         void* out, int take_log);
