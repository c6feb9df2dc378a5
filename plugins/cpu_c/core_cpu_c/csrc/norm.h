/* Fused GELU and layer norm, forward and backward (declarations cffi reads: plain C, no macros). approximate_tanh
selects PyTorch's tanh approximation; weight, bias, grad_input, grad_weight and grad_bias may be NULL. The layer
norm backward functions return nonzero when their scratch memory cannot be allocated. */
void ccc_gelu_float32(long long n, const void* x, void* out, int approximate_tanh);
void ccc_gelu_float64(long long n, const void* x, void* out, int approximate_tanh);
void ccc_gelu_backward_float32(long long n, const void* grad, const void* x, void* out, int approximate_tanh);
void ccc_gelu_backward_float64(long long n, const void* grad, const void* x, void* out, int approximate_tanh);
void ccc_layer_norm_float32(long long rows, long long cols, const void* x, const void* weight, const void* bias,
                            double eps, void* out);
void ccc_layer_norm_float64(long long rows, long long cols, const void* x, const void* weight, const void* bias,
                            double eps, void* out);
int ccc_layer_norm_backward_float32(long long rows, long long cols, const void* grad, const void* x,
                                    const void* weight, double eps, void* grad_input, void* grad_weight,
                                    void* grad_bias);
int ccc_layer_norm_backward_float64(long long rows, long long cols, const void* grad, const void* x,
                                    const void* weight, double eps, void* grad_input, void* grad_weight,
                                    void* grad_bias);
