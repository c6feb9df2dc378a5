/* Fused cross entropy over class indices, forward and backward (declarations cffi reads: plain C, no macros).
x is contiguous (rows, classes) logits, target int64 (rows); weight may be NULL. reduction: 0 none (out has rows
entries), 1 sum, 2 mean (out has one; the mean divides by the kept rows' weights). grad holds one value, or one
per row when grad_per_row. The functions return 1 + the first row whose target is outside 0..classes-1 and not
ignore_index (nothing computed), -1 when their scratch memory cannot be allocated, else 0. */
long long ccc_cross_entropy_loss_float32(long long rows, long long classes, const void* x, const void* target,
                                         const void* weight, long long ignore_index, int reduction, void* out);
long long ccc_cross_entropy_loss_float64(long long rows, long long classes, const void* x, const void* target,
                                         const void* weight, long long ignore_index, int reduction, void* out);
long long ccc_cross_entropy_loss_backward_float32(long long rows, long long classes, const void* grad,
                                                  int grad_per_row, const void* x, const void* target,
                                                  const void* weight, long long ignore_index, int reduction,
                                                  void* grad_input);
long long ccc_cross_entropy_loss_backward_float64(long long rows, long long classes, const void* grad,
                                                  int grad_per_row, const void* x, const void* target,
                                                  const void* weight, long long ignore_index, int reduction,
                                                  void* grad_input);
