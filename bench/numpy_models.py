"""Hand-written NumPy training steps (forward, backward, update): the baseline of bench/train_step.py."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def _softmax_cross_entropy(logits: np.ndarray, labels: np.ndarray) -> tuple:
    shifted = logits - logits.max(1, keepdims=True)
    probs = np.exp(shifted)
    probs /= probs.sum(1, keepdims=True)
    n = len(labels)
    loss = -np.log(probs[np.arange(n), labels]).mean()
    grad = probs
    grad[np.arange(n), labels] -= 1
    return loss, grad / n


class NumpyMLP:
    """784-512-512-10 with ReLU, cross-entropy and SGD with momentum."""

    def __init__(self, rng, lr: float = 0.01, momentum: float = 0.9):
        sizes = [(512, 784), (512, 512), (10, 512)]
        self.params = []
        for out_f, in_f in sizes:
            bound = 1 / np.sqrt(in_f)
            self.params += [rng.uniform(-bound, bound, (out_f, in_f)).astype(np.float32),
                            rng.uniform(-bound, bound, out_f).astype(np.float32)]
        self.velocity = [np.zeros_like(p) for p in self.params]
        self.lr, self.momentum = lr, momentum

    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        w1, b1, w2, b2, w3, b3 = self.params
        z1 = x @ w1.T + b1
        h1 = np.maximum(z1, 0)
        z2 = h1 @ w2.T + b2
        h2 = np.maximum(z2, 0)
        logits = h2 @ w3.T + b3
        loss, g = _softmax_cross_entropy(logits, y)
        grads = [None] * 6
        grads[4], grads[5] = g.T @ h2, g.sum(0)
        g = (g @ w3) * (z2 > 0)
        grads[2], grads[3] = g.T @ h1, g.sum(0)
        g = (g @ w2) * (z1 > 0)
        grads[0], grads[1] = g.T @ x, g.sum(0)
        for p, v, dp in zip(self.params, self.velocity, grads):
            v *= self.momentum
            v += dp
            p -= self.lr * v
        return float(loss)


def _conv_forward(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> tuple:
    k = w.shape[-1]
    windows = sliding_window_view(x, (k, k), axis=(2, 3))  # (N, C, OH, OW, k, k)
    return np.einsum("nchwij,ocij->nohw", windows, w, optimize=True) + b[None, :, None, None], windows


def _conv_backward(g: np.ndarray, x: np.ndarray, windows: np.ndarray, w: np.ndarray) -> tuple:
    k = w.shape[-1]
    grad_w = np.einsum("nohw,nchwij->ocij", g, windows, optimize=True)
    grad_b = g.sum((0, 2, 3))
    grad_x = np.zeros_like(x)
    oh, ow = g.shape[2], g.shape[3]
    for i in range(k):
        for j in range(k):
            grad_x[:, :, i:i + oh, j:j + ow] += np.einsum("nohw,oc->nchw", g, w[:, :, i, j], optimize=True)
    return grad_x, grad_w, grad_b


def _pool_forward(x: np.ndarray) -> tuple:
    n, c, h, w = x.shape
    blocks = x.reshape(n, c, h // 2, 2, w // 2, 2)
    out = blocks.max((3, 5))
    mask = blocks == out[:, :, :, None, :, None]
    return out, mask


def _pool_backward(g: np.ndarray, mask: np.ndarray) -> np.ndarray:
    n, c, h, _, w, _ = mask.shape
    return (mask * g[:, :, :, None, :, None]).reshape(n, c, h * 2, w * 2)


class NumpyLeNet:
    """conv(1→6,5) relu pool, conv(6→16,5) relu pool, 256→120→84→10, cross-entropy, Adam."""

    def __init__(self, rng, lr: float = 1e-3):
        def uniform(shape, fan_in):
            bound = 1 / np.sqrt(fan_in)
            return rng.uniform(-bound, bound, shape).astype(np.float32)

        self.params = [uniform((6, 1, 5, 5), 25), uniform(6, 25), uniform((16, 6, 5, 5), 150), uniform(16, 150),
                       uniform((120, 256), 256), uniform(120, 256), uniform((84, 120), 120), uniform(84, 120),
                       uniform((10, 84), 84), uniform(10, 84)]
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]
        self.t = 0
        self.lr = lr

    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        c1w, c1b, c2w, c2b, f1w, f1b, f2w, f2b, f3w, f3b = self.params
        z1, win1 = _conv_forward(x, c1w, c1b)
        a1 = np.maximum(z1, 0)
        p1, mask1 = _pool_forward(a1)
        z2, win2 = _conv_forward(p1, c2w, c2b)
        a2 = np.maximum(z2, 0)
        p2, mask2 = _pool_forward(a2)
        flat = p2.reshape(len(x), -1)
        z3 = flat @ f1w.T + f1b
        h3 = np.maximum(z3, 0)
        z4 = h3 @ f2w.T + f2b
        h4 = np.maximum(z4, 0)
        logits = h4 @ f3w.T + f3b
        loss, g = _softmax_cross_entropy(logits, y)
        grads = [None] * 10
        grads[8], grads[9] = g.T @ h4, g.sum(0)
        g = (g @ f3w) * (z4 > 0)
        grads[6], grads[7] = g.T @ h3, g.sum(0)
        g = (g @ f2w) * (z3 > 0)
        grads[4], grads[5] = g.T @ flat, g.sum(0)
        g = (g @ f1w).reshape(p2.shape)
        g = _pool_backward(g, mask2) * (z2 > 0)
        g, grads[2], grads[3] = _conv_backward(g, p1, win2, c2w)
        g = _pool_backward(g, mask1) * (z1 > 0)
        _, grads[0], grads[1] = _conv_backward(g, x, win1, c1w)
        self.t += 1
        b1, b2, eps = 0.9, 0.999, 1e-8
        for p, m, v, dp in zip(self.params, self.m, self.v, grads):
            m *= b1
            m += (1 - b1) * dp
            v *= b2
            v += (1 - b2) * dp * dp
            m_hat = m / (1 - b1 ** self.t)
            v_hat = v / (1 - b2 ** self.t)
            p -= self.lr * m_hat / (np.sqrt(v_hat) + eps)
        return float(loss)
