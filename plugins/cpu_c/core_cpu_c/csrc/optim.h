/* Fused optimizer updates (declarations cffi reads: plain C, no macros). buf / vmax may be NULL. */
void ccc_sgd_update_float32(long long n, void* p, const void* g, void* buf, double lr, double momentum,
                            double dampening, double weight_decay, int nesterov);
void ccc_sgd_update_float64(long long n, void* p, const void* g, void* buf, double lr, double momentum,
                            double dampening, double weight_decay, int nesterov);
void ccc_adam_update_float32(long long n, void* p, const void* g, void* m, void* v, void* vmax, double lr,
                             double beta1, double beta2, double eps, double weight_decay, int decoupled,
                             double step_size, double bias_correction2_sqrt);
void ccc_adam_update_float64(long long n, void* p, const void* g, void* m, void* v, void* vmax, double lr,
                             double beta1, double beta2, double eps, double weight_decay, int decoupled,
                             double step_size, double bias_correction2_sqrt);
