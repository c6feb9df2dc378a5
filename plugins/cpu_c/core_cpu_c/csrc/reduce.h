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
/* float16/bfloat16 rows: float32 compute (sums accumulate in double), rounded once to the dtype */
void ccc_sum_float16(long long rows, long long cols, const void* in_base, long long in_off, long long row_stride,
                     void* out);
void ccc_sum_bfloat16(long long rows, long long cols, const void* in_base, long long in_off, long long row_stride,
                      void* out);
void ccc_sum_float16_float32(long long rows, long long cols, const void* in_base, long long in_off,
                             long long row_stride, void* out);
void ccc_sum_bfloat16_float32(long long rows, long long cols, const void* in_base, long long in_off,
                              long long row_stride, void* out);
void ccc_amax_float16(long long rows, long long cols, const void* in_base, long long in_off, long long row_stride,
                      void* out);
void ccc_amax_bfloat16(long long rows, long long cols, const void* in_base, long long in_off, long long row_stride,
                       void* out);
void ccc_amin_float16(long long rows, long long cols, const void* in_base, long long in_off, long long row_stride,
                      void* out);
void ccc_amin_bfloat16(long long rows, long long cols, const void* in_base, long long in_off, long long row_stride,
                       void* out);
void ccc_softmax_float32(long long rows, long long cols, const void* in_base, long long in_off, long long row_stride,
                         void* out, int take_log);
void ccc_softmax_float64(long long rows, long long cols, const void* in_base, long long in_off, long long row_stride,
                         void* out, int take_log);
/* Strided reductions over any set of dims: meta = [nk, nr, block, in_off, kept shape[nk], kept strides[nk],
   reduced shape[nr], reduced strides[nr]] (element units, nk >= 1, nr >= 1, every size >= 1); out is dense over
   the kept dims (row-major). block = 1: the last kept dim is walked inner-most, BLOCK outputs at a time. */
void ccc_reduce_sum_float32(const long long* meta, const void* in_base, void* out);
void ccc_reduce_sum_float64(const long long* meta, const void* in_base, void* out);
void ccc_reduce_sum_int8(const long long* meta, const void* in_base, void* out);
void ccc_reduce_sum_uint8(const long long* meta, const void* in_base, void* out);
void ccc_reduce_sum_int16(const long long* meta, const void* in_base, void* out);
void ccc_reduce_sum_int32(const long long* meta, const void* in_base, void* out);
void ccc_reduce_sum_int64(const long long* meta, const void* in_base, void* out);
void ccc_reduce_sum_bool(const long long* meta, const void* in_base, void* out);
void ccc_reduce_sum_float16(const long long* meta, const void* in_base, void* out); /* float sums, rounded once */
void ccc_reduce_sum_bfloat16(const long long* meta, const void* in_base, void* out);
void ccc_reduce_prod_float32(const long long* meta, const void* in_base, void* out);
void ccc_reduce_prod_float64(const long long* meta, const void* in_base, void* out);
void ccc_reduce_prod_int8(const long long* meta, const void* in_base, void* out);
void ccc_reduce_prod_uint8(const long long* meta, const void* in_base, void* out);
void ccc_reduce_prod_int16(const long long* meta, const void* in_base, void* out);
void ccc_reduce_prod_int32(const long long* meta, const void* in_base, void* out);
void ccc_reduce_prod_int64(const long long* meta, const void* in_base, void* out);
void ccc_reduce_prod_bool(const long long* meta, const void* in_base, void* out);
void ccc_reduce_amax_float32(const long long* meta, const void* in_base, void* out);
void ccc_reduce_amax_float64(const long long* meta, const void* in_base, void* out);
void ccc_reduce_amax_int8(const long long* meta, const void* in_base, void* out);
void ccc_reduce_amax_uint8(const long long* meta, const void* in_base, void* out);
void ccc_reduce_amax_int16(const long long* meta, const void* in_base, void* out);
void ccc_reduce_amax_int32(const long long* meta, const void* in_base, void* out);
void ccc_reduce_amax_int64(const long long* meta, const void* in_base, void* out);
void ccc_reduce_amax_bool(const long long* meta, const void* in_base, void* out);
void ccc_reduce_amin_float32(const long long* meta, const void* in_base, void* out);
void ccc_reduce_amin_float64(const long long* meta, const void* in_base, void* out);
void ccc_reduce_amin_int8(const long long* meta, const void* in_base, void* out);
void ccc_reduce_amin_uint8(const long long* meta, const void* in_base, void* out);
void ccc_reduce_amin_int16(const long long* meta, const void* in_base, void* out);
void ccc_reduce_amin_int32(const long long* meta, const void* in_base, void* out);
void ccc_reduce_amin_int64(const long long* meta, const void* in_base, void* out);
void ccc_reduce_amin_bool(const long long* meta, const void* in_base, void* out);
void ccc_reduce_any_float32(const long long* meta, const void* in_base, void* out);
void ccc_reduce_any_float64(const long long* meta, const void* in_base, void* out);
void ccc_reduce_any_int8(const long long* meta, const void* in_base, void* out);
void ccc_reduce_any_uint8(const long long* meta, const void* in_base, void* out);
void ccc_reduce_any_int16(const long long* meta, const void* in_base, void* out);
void ccc_reduce_any_int32(const long long* meta, const void* in_base, void* out);
void ccc_reduce_any_int64(const long long* meta, const void* in_base, void* out);
void ccc_reduce_any_bool(const long long* meta, const void* in_base, void* out);
void ccc_reduce_all_float32(const long long* meta, const void* in_base, void* out);
void ccc_reduce_all_float64(const long long* meta, const void* in_base, void* out);
void ccc_reduce_all_int8(const long long* meta, const void* in_base, void* out);
void ccc_reduce_all_uint8(const long long* meta, const void* in_base, void* out);
void ccc_reduce_all_int16(const long long* meta, const void* in_base, void* out);
void ccc_reduce_all_int32(const long long* meta, const void* in_base, void* out);
void ccc_reduce_all_int64(const long long* meta, const void* in_base, void* out);
void ccc_reduce_all_bool(const long long* meta, const void* in_base, void* out);
void ccc_reduce_argmax_float32(const long long* meta, const void* in_base, void* out);
void ccc_reduce_argmax_float64(const long long* meta, const void* in_base, void* out);
void ccc_reduce_argmax_int8(const long long* meta, const void* in_base, void* out);
void ccc_reduce_argmax_uint8(const long long* meta, const void* in_base, void* out);
void ccc_reduce_argmax_int16(const long long* meta, const void* in_base, void* out);
void ccc_reduce_argmax_int32(const long long* meta, const void* in_base, void* out);
void ccc_reduce_argmax_int64(const long long* meta, const void* in_base, void* out);
void ccc_reduce_argmin_float32(const long long* meta, const void* in_base, void* out);
void ccc_reduce_argmin_float64(const long long* meta, const void* in_base, void* out);
void ccc_reduce_argmin_int8(const long long* meta, const void* in_base, void* out);
void ccc_reduce_argmin_uint8(const long long* meta, const void* in_base, void* out);
void ccc_reduce_argmin_int16(const long long* meta, const void* in_base, void* out);
void ccc_reduce_argmin_int32(const long long* meta, const void* in_base, void* out);
void ccc_reduce_argmin_int64(const long long* meta, const void* in_base, void* out);
/* Scans along one dim: meta = [nk, block, in_off, n, in stride, out stride, kept shape[nk], kept in strides[nk],
   kept out strides[nk]] (nk >= 1, sizes >= 1); idx: the int64 indices of cummax/cummin (NULL otherwise). */
void ccc_scan_cumsum_float32(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cumsum_float64(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cumsum_int8(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cumsum_uint8(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cumsum_int16(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cumsum_int32(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cumsum_int64(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cumsum_bool(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cumprod_float32(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cumprod_float64(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cumprod_int8(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cumprod_uint8(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cumprod_int16(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cumprod_int32(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cumprod_int64(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cumprod_bool(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cummax_float32(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cummax_float64(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cummax_int8(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cummax_uint8(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cummax_int16(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cummax_int32(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cummax_int64(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cummax_bool(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cummin_float32(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cummin_float64(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cummin_int8(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cummin_uint8(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cummin_int16(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cummin_int32(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cummin_int64(const long long* meta, const void* in_base, void* out, void* idx);
void ccc_scan_cummin_bool(const long long* meta, const void* in_base, void* out, void* idx);
