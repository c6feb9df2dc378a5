/* Fused GELU, layer norm and batch norm, forward and backward (declarations cffi reads: plain C, no macros).
approximate_tanh selects PyTorch's tanh approximation; weight, bias, grad_input, grad_weight and grad_bias may be
NULL. The layer norm backward functions return nonzero when their scratch memory cannot be allocated. */
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
/* Batch norm over contiguous (n, c, s) data (s: the product of the spatial dims), one channel per loop step. The
forward updates running_mean / running_var in place in training (each may be NULL; momentum 0 leaves them alone);
evaluation reads them. The backward reads the running statistics only in evaluation. */
void ccc_batch_norm_float32(long long n, long long c, long long s, const void* x, const void* weight,
                            const void* bias, void* running_mean, void* running_var, int training, double momentum,
                            double eps, void* out);
void ccc_batch_norm_float64(long long n, long long c, long long s, const void* x, const void* weight,
                            const void* bias, void* running_mean, void* running_var, int training, double momentum,
                            double eps, void* out);
void ccc_batch_norm_backward_float32(long long n, long long c, long long s, const void* grad, const void* x,
                                     const void* running_mean, const void* running_var, const void* weight,
                                     int training, double eps, void* grad_input, void* grad_weight, void* grad_bias);
void ccc_batch_norm_backward_float64(long long n, long long c, long long s, const void* grad, const void* x,
                                     const void* running_mean, const void* running_var, const void* weight,
                                     int training, double eps, void* grad_input, void* grad_weight, void* grad_bias);
