/* oneDNN convolution (declarations cffi reads: plain C, no macros; onednn.c includes dnnl.h). A problem is one
   ccc_dnnl_conv: 1, 2 or 3 spatial dims, dense (contiguous) buffers of one dtype (dtype: 0 float32, 1 bfloat16,
   2 float16) in PyTorch's layouts (N, C, *spatial), (O, C / groups, *kernel), (O,). Half problems run only where
   oneDNN has an optimised (not its reference) implementation for the CPU; they accumulate in float32 and round once. Each call returns 0, or a nonzero dnnl_status_t when oneDNN cannot run the problem
   (the caller then runs its other kernels). Primitives are cached on the whole struct, so a repeated call reuses
   them and only reorders data. */
typedef struct {
    long long nd, batch, channels, out_channels, groups, has_bias, dtype;
    long long in[3], kernel[3], out[3], stride[3], pad[3], dilation[3];
    long long activation; /* forward only: 0 none, else applied to the output in the same primitive (a post-op):
                             1 relu, 2 sigmoid, 3 tanh, 4 exact GELU (erf), 5 GELU's tanh approximation */
    long long has_residual; /* forward only: 1 adds residual (dense, laid out as the output) before the activation,
                               in the same primitive (a post-op) */
} ccc_dnnl_conv;

/* out = act(conv(x, w) (+ bias) (+ residual)); residual NULL unless p->has_residual */
int ccc_dnnl_conv_forward(const ccc_dnnl_conv* p, const void* x, const void* w, const void* bias,
                          const void* residual, void* out);
int ccc_dnnl_conv_backward_data(const ccc_dnnl_conv* p, const void* grad_out, const void* w, void* grad_x);
/* grad_b may be NULL when p->has_bias is 0 */
int ccc_dnnl_conv_backward_weights(const ccc_dnnl_conv* p, const void* grad_out, const void* x, void* grad_w,
                                   void* grad_b);
/* C[i] = A[i] @ B[i] (+ bias on every row) for i < count, float32, bfloat16 or float16 (dtype 0, 1, 2) operands at
   element offsets a_offs[i], b_offs[i] (BLAS's layout: ta/tb = stored transposed, lda/ldb the leading dims), bias
   (m elements, NULL unless has_bias), C dense (n x m per product): oneDNN's matmul primitive, cached per problem,
   accumulating in float32 and rounding once. Products one stride apart run as one batched primitive. 0, or a
   nonzero dnnl_status_t (nothing written) where oneDNN cannot run the problem or has only its reference kernel.
   has_residual: R (dense like C, NULL unless set) is added after the bias; activation (as ccc_dnnl_conv's) is
   applied last: C = act(A @ B + bias + R), all in the one primitive (post-ops). */
typedef struct {
    long long n, m, k, ta, lda, tb, ldb, dtype, has_bias, activation, has_residual;
} ccc_dnnl_gemm;
int ccc_dnnl_matmul(const ccc_dnnl_gemm* p, long long count, const void* a, const long long* a_offs, const void* b,
                    const long long* b_offs, const void* bias, const void* residual, void* c);
/* The name of the implementation oneDNN picks for a dense float32 (n x k) @ (k x m) matmul (e.g.
   "brg_matmul:avx512_core", "gemm:jit:f32"), written into out (at most size bytes, NUL-terminated): 0, or a nonzero
   dnnl_status_t. */
int ccc_dnnl_matmul_impl(long long n, long long m, long long k, char* out, int size);
int ccc_dnnl_cache_size(void);
void ccc_dnnl_cache_clear(void);
int ccc_dnnl_version(void);
