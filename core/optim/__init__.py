"""``core.optim``: optimizers and learning-rate schedulers."""
