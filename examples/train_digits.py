"""Train a small CNN on the handwritten digits that ship in examples/data/digits.npz.

    python examples/train_digits.py                 # default device, 20 epochs
    python examples/train_digits.py --device meta   # any installed device type
    python examples/train_digits.py --resume        # continue from the saved checkpoint

Prints a progress bar per epoch, the epoch's loss and accuracy, the test accuracy, and saves a checkpoint
(model + optimizer + epoch) after every epoch that --resume continues from.
"""

from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np
from tqdm import tqdm

import core
import core.nn as nn
import core.nn.functional as F
from core.utils.data import DataLoader, TensorDataset

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / "data" / "digits.npz"


def load_digits(device) -> tuple:
    """(train images, train labels, test images, test labels): a fixed 80/20 split, pixels scaled to [0, 1]."""
    with np.load(DATA) as data:
        images = data["images"].astype(np.float32)[:, None] / 16.0  # (N, 1, 8, 8)
        labels = data["labels"].astype(np.int64)
    order = np.random.default_rng(0).permutation(len(labels))
    split = int(0.8 * len(labels))
    train, test = order[:split], order[split:]
    as_tensor = lambda a: core.tensor(a, device=device)  # noqa: E731
    return as_tensor(images[train]), as_tensor(labels[train]), as_tensor(images[test]), as_tensor(labels[test])


class DigitsNet(nn.Module):
    """Two 3×3 convolutions with max pooling, then two linear layers."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 16 × 4 × 4
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 32 × 2 × 2
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(128, 64), nn.ReLU(), nn.Dropout(0.1),
                                        nn.Linear(64, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def evaluate(model, images, labels, batch_size: int = 256) -> float:
    """Accuracy on (images, labels)."""
    model.eval()
    correct = 0
    with core.no_grad():
        for start in range(0, len(labels), batch_size):
            logits = model(images[start:start + batch_size])
            correct += int((logits.argmax(1) == labels[start:start + batch_size]).sum().item())
    model.train()
    return correct / len(labels)


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="device to train on (default: the configured default)")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", default=str(HERE / "checkpoints" / "digits.ckpt"))
    parser.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    args = parser.parse_args(argv)

    device = core.device(args.device) if args.device else core.get_default_device()
    core.manual_seed(args.seed)
    x_train, y_train, x_test, y_test = load_digits(device)
    model = DigitsNet().to(device)
    optimizer = core.optim.Adam(model.parameters(), lr=args.lr)
    start_epoch = 0
    checkpoint = pathlib.Path(args.checkpoint)
    if args.resume:
        state = core.load(checkpoint, map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start_epoch = state["epoch"]
        print(f"resumed from {checkpoint} after epoch {start_epoch}")

    generator = core.Generator().manual_seed(args.seed + start_epoch)
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=args.batch_size, shuffle=True,
                        generator=generator)
    started = time.perf_counter()
    for epoch in range(start_epoch, args.epochs):
        total_loss, correct, seen = 0.0, 0, 0
        bar = tqdm(loader, desc=f"epoch {epoch + 1}/{args.epochs}", unit="batch", leave=False)
        for images, labels in bar:
            logits = model(images)
            loss = F.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total_loss += loss.item() * len(labels)
            correct += int((logits.argmax(1) == labels).sum().item())
            seen += len(labels)
            bar.set_postfix(loss=f"{total_loss / seen:.4f}")
        test_accuracy = evaluate(model, x_test, y_test)
        print(f"epoch {epoch + 1:2d}: loss {total_loss / seen:.4f}  train acc {correct / seen:.4f}  "
              f"test acc {test_accuracy:.4f}")
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        core.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch + 1}, checkpoint)
    accuracy = evaluate(model, x_test, y_test)
    print(f"final test accuracy {accuracy:.4f} ({len(y_test)} test images, "
          f"{time.perf_counter() - started:.1f} s on {device})")
    return accuracy


if __name__ == "__main__":
    main()
