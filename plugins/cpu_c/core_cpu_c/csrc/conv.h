/* 2-D convolution, max and average pooling (declarations cffi reads: plain C, no macros). Every pointer is a dense
   (contiguous) buffer validated in Python (conv.py); bias, grad_x, grad_w and grad_b may be NULL (not used / not
   wanted). Each returns 0, or -1 when its scratch memory could not be allocated. */
typedef struct {
    long long batch, channels, height, width; /* input (N, C, H, W) */
    long long out_channels, kernel_h, kernel_w; /* weight (O, C / groups, KH, KW) */
    long long out_h, out_w; /* output (N, O, OH, OW) */
    long long stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;
} ccc_conv2d;

typedef struct {
    long long planes, height, width, out_h, out_w; /* input (N * C, H, W), output (N * C, OH, OW) */
    long long kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
} ccc_pool2d;

/* im2col rows per group up to which the weight gradient is dot products, not a GEMM (kernels/conv.py also routes
   narrow ungrouped backward calls here rather than to oneDNN by it) */
int ccc_conv_dot_rows(void);

int ccc_conv2d_float32(const ccc_conv2d* g, const void* x, const void* w, const void* bias, void* out);
int ccc_conv2d_float64(const ccc_conv2d* g, const void* x, const void* w, const void* bias, void* out);
int ccc_conv2d_backward_float32(const ccc_conv2d* g, const void* grad_out, const void* x, const void* w,
                                void* grad_x, void* grad_w, void* grad_b);
int ccc_conv2d_backward_float64(const ccc_conv2d* g, const void* grad_out, const void* x, const void* w,
                                void* grad_x, void* grad_w, void* grad_b);
int ccc_max_pool2d_float32(const ccc_pool2d* g, const void* x, void* out);
int ccc_max_pool2d_float64(const ccc_pool2d* g, const void* x, void* out);
int ccc_max_pool2d_backward_float32(const ccc_pool2d* g, const void* grad_out, const void* x, void* grad_x);
int ccc_max_pool2d_backward_float64(const ccc_pool2d* g, const void* grad_out, const void* x, void* grad_x);
/* Average pooling (dilation 1): PyTorch's divisors (count_include_pad counts the padding inside the window but not
   what ceil_mode adds beyond it); divisor_override 0 means none. */
int ccc_avg_pool2d_float32(const ccc_pool2d* g, const void* x, void* out, int count_include_pad,
                           double divisor_override);
int ccc_avg_pool2d_float64(const ccc_pool2d* g, const void* x, void* out, int count_include_pad,
                           double divisor_override);
int ccc_avg_pool2d_backward_float32(const ccc_pool2d* g, const void* grad_out, void* grad_x, int count_include_pad,
                                    double divisor_override);
int ccc_avg_pool2d_backward_float64(const ccc_pool2d* g, const void* grad_out, void* grad_x, int count_include_pad,
                                    double divisor_override);
