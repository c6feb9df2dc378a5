/* Data-movement kernels of the cpu_c backend (declarations cffi reads: plain C, no macros).
Strides count elements and may be negative (flip); pointers point at each operand's first element. Python
(movement.py) has checked every view against its storage and that written memory overlaps nothing read.
Type codes: 0 bool, 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float32, 7 float64 (8 float16, 9 bfloat16: casts
to and from float32 only). */

/* dst[i] = (dst type) src[i] over an ndim-d shape. Returns 1 when a float -> integer value was NaN or out of the
integer type's range (C leaves those undefined; the caller then runs NumPy's copy), or for a pair of types C does not
cast, else 0. */
int ccc_copy_cast(int dst_type, int src_type, int ndim, const long long* shape, const long long* dst_strides,
                  const long long* src_strides, void* dst, const void* src);
/* dst[i] = src[i] for elements of itemsize 1, 2, 4, 8 or 16 bytes (a fill is a copy from a stride-0 source). */
void ccc_copy_bytes(int itemsize, int ndim, const long long* shape, const long long* dst_strides,
                    const long long* src_strides, void* dst, const void* src);
/* arange in int64 (start + i * step, wrapping) or in double, then cast to dst_type; linspace's symmetric formula
in double. Return 1 as ccc_copy_cast when a float value does not fit an integer dst. */
int ccc_arange_int(int dst_type, long long n, long long start, long long step, void* dst, long long stride);
int ccc_arange_double(int dst_type, long long n, double start, double step, void* dst, long long stride);
int ccc_linspace(int dst_type, long long n, double start, double end, void* dst, long long stride);
/* out[p] = input[p with p[dim] = index[p]] over index's shape (out contiguous). Returns 1 (nothing defined
written) when an index is outside [0, dim_size), storing it in *bad. */
int ccc_gather(int itemsize, int ndim, const long long* shape, const long long* in_strides,
               const long long* index_strides, int dim, long long dim_size, const void* input,
               const long long* index, void* out, long long* bad);
/* self[p with p[dim] = index[p]] = src[p], or combined with reduce 1 sum, 2 prod, 3 amax, 4 amin (include_self
0: those positions start from the reduction's identity), in the order NumPy's ufunc.at uses. Every index is
checked before anything is written: returns 1 (self untouched) and *bad when one is outside [0, dim_size). */
int ccc_scatter(int type, int reduce, int include_self, int ndim, const long long* shape,
                const long long* self_strides, const long long* index_strides, const long long* src_strides,
                int dim, long long dim_size, void* self, const long long* index, const void* src, long long* bad);
/* input[p, index[j], q] over a (P, J, Q) view into the contiguous out; index_put: self[p, index[j], q] =
values[p, j, q] (accumulate: +=, duplicates in order). Index values lie in [low, high); negative ones count from
high (one index tensor: low = -size, high = size; several: element offsets along the indexed dims, whose stride
in_strides[1] is then 1, low = 0, high = the farthest offset + 1). Both return 1 and *bad when an index is out of
range (index_put checks before writing). */
int ccc_index(int itemsize, long long P, long long J, long long Q, const long long* in_strides /* p, dim, q */,
              long long low, long long high, const void* input, const long long* index, long long index_stride,
              void* out, long long* bad);
int ccc_index_put(int type, int accumulate, long long P, long long J, long long Q,
                  const long long* self_strides /* p, dim, q */, const long long* values_strides /* p, j, q */,
                  long long low, long long high, void* self, const long long* index, long long index_stride,
                  const void* values, long long* bad);
/* nonzero in two passes over chunks of `chunk` elements in row-major order: counts[c] = the nonzero elements of
chunk c; then out (offsets[chunks] x ndim int64, row-major) gets their coordinates, chunk c's from row offsets[c]
on and at most offsets[c + 1] - offsets[c] of them. Type 8: a 16-bit float (half, bfloat16): nonzero when any bit
but the sign is set. */
void ccc_nonzero_count(int type, int ndim, const long long* shape, const long long* strides, const void* input,
                       long long chunk, long long* counts);
void ccc_nonzero_write(int type, int ndim, const long long* shape, const long long* strides, const void* input,
                       long long chunk, const long long* offsets, long long* out);
