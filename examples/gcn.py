"""A two-layer graph convolutional network (Kipf & Welling) written as for PyTorch, on a sparse adjacency.

examples:
  python examples/gcn.py                  # default device, 100 epochs
  python examples/gcn.py --device opencl --epochs 50

The graph is two communities of 30 nodes (dense inside, a few edges across) with noisy features; the model
learns each node's community. The normalised adjacency D^-1/2 (A + I) D^-1/2 is a ``sparse_coo_tensor`` and
each layer is ``core.sparse.mm(adj, X @ W)``: message passing through a sparse x dense product, differentiated
into the dense operand. Prints the loss every 10 epochs and the final accuracy.
"""

from __future__ import annotations

import argparse

import numpy as np

import core
import core.nn as nn
import core.nn.functional as F


def community_graph(rng, nodes_per_side: int = 30, features: int = 8):
    """Edges (2, E), features (N, F) and labels (N,) of two noisy communities."""
    n = 2 * nodes_per_side
    labels = np.repeat([0, 1], nodes_per_side)
    same = labels[:, None] == labels[None, :]
    upper = np.triu(rng.random((n, n)) < np.where(same, 0.3, 0.02), 1)
    adjacency = upper | upper.T
    x = rng.standard_normal((n, features)) + 0.5 * labels[:, None] * np.ones(features)
    return np.stack(np.nonzero(adjacency)), x, labels


def normalized_adjacency(edges: np.ndarray, n: int, device) -> core.Tensor:
    """D^-1/2 (A + I) D^-1/2 as a coalesced sparse COO tensor, computed the way PyTorch code computes it."""
    edge_index = core.tensor(edges, device=device)
    loops = core.arange(n, device=device).expand(2, n)
    edge_index = core.cat([edge_index, loops], 1)
    weights = core.ones(edge_index.shape[1], device=device)
    adjacency = core.sparse_coo_tensor(edge_index, weights, (n, n)).coalesce()
    degree = core.sparse.sum(adjacency, 1).to_dense()
    scale = degree.pow(-0.5)
    row, col = adjacency.indices()
    return core.sparse_coo_tensor(adjacency.indices(), scale[row] * adjacency.values() * scale[col], (n, n),
                                  is_coalesced=True)


class GCN(nn.Module):
    """Two graph convolutions: relu(A X W1), then A H W2 (logits)."""

    def __init__(self, features: int, hidden: int, classes: int):
        super().__init__()
        self.first = nn.Linear(features, hidden)
        self.second = nn.Linear(hidden, classes)

    def forward(self, adjacency, x):
        h = F.relu(core.sparse.mm(adjacency, self.first(x)))
        return core.sparse.mm(adjacency, self.second(h))


def train(device="cpu", epochs: int = 100, seed: int = 0, log=None) -> list:
    """Train on the community graph; returns the loss of every epoch."""
    rng = np.random.default_rng(seed)
    core.manual_seed(seed)
    edges, x, labels = community_graph(rng)
    adjacency = normalized_adjacency(edges, len(labels), device)
    features = core.tensor(x, dtype=core.float32, device=device)
    targets = core.tensor(labels, device=device)
    model = GCN(x.shape[1], 16, 2).to(device)
    optimizer = core.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for epoch in range(epochs):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(adjacency, features), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if log is not None and epoch % 10 == 0:
            log(f"epoch {epoch:3d}  loss {losses[-1]:.4f}")
    if log is not None:
        accuracy = (model(adjacency, features).argmax(1) == targets).float().mean().item()
        log(f"done: loss {losses[-1]:.4f}, accuracy {accuracy:.1%} on {device}")
    return losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=str(core.get_default_device()))
    parser.add_argument("--epochs", type=int, default=100)
    args = parser.parse_args()
    train(args.device, args.epochs, log=print)


if __name__ == "__main__":
    main()
