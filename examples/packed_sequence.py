"""Classify the digits of examples/data/digits.npz with an LSTM over packed variable-length sequences.

Each 8×8 image is read left to right, one column of 8 pixels per time step, with its leading and trailing
all-zero columns dropped, so the sequences have 2 to 8 steps (every image has ink in all 8 rows, so reading rows
would give only length 8). The sequences are padded with core.nn.utils.rnn.pad_sequence, each batch is packed
with pack_padded_sequence(enforce_sorted=False), an nn.LSTM reads it, and its final hidden state goes through an
nn.Linear to the 10 classes; cross-entropy loss, core.optim.Adam, a fixed 80/20 split and seed.

examples:
  python examples/packed_sequence.py                    # default device, 3 epochs: about 93% test accuracy (~35 s)
  python examples/packed_sequence.py --device cpu --epochs 1  # about 86%

output:
  The device, the number of sequences per length, per epoch the loss and the test accuracy, and last one line:
  "done: test accuracy 93.1% after 3 epochs in 32.5 s on cpu".

exit status:
  0 done; 2 bad arguments, or a device that is malformed, unknown or unavailable
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

import core
import core.nn as nn
import core.nn.functional as F
from core.config import ConfigError
from core.nn.utils.rnn import pack_padded_sequence, pad_sequence

DATA = pathlib.Path(__file__).resolve().parent / "data" / "digits.npz"
CLASSES = 10
FEATURES = 8  # pixels per column: one time step


def image_to_sequence(image: np.ndarray) -> np.ndarray:
    """The (L, 8) sequence of an 8×8 image: its columns left to right, leading and trailing all-zero ones dropped."""
    ink = np.flatnonzero(image.max(axis=0) > 0)
    return image[:, ink[0]:ink[-1] + 1].T


def load_sequences(device) -> tuple:
    """(train padded, train lengths, train labels, test padded, test lengths, test labels): the sequences padded
    with pad_sequence to (N, T, 8) (batch first), their lengths (an int64 NumPy array), a fixed 80/20 split."""
    with np.load(DATA) as data:
        images = data["images"].astype(np.float32) / 16.0
        labels = data["labels"].astype(np.int64)
    sequences = [image_to_sequence(image) for image in images]
    lengths = np.array([len(s) for s in sequences], dtype=np.int64)
    padded = pad_sequence([core.tensor(s, device=device) for s in sequences], batch_first=True)
    order = np.random.default_rng(0).permutation(len(labels))
    split = int(0.8 * len(labels))
    parts = []
    for part in (order[:split], order[split:]):
        index = core.tensor(part, device=device)
        parts += [padded.index_select(0, index), lengths[part], core.tensor(labels[part], device=device)]
    return tuple(parts)


class SequenceClassifier(nn.Module):
    """An LSTM over a PackedSequence; its last layer's final hidden state -> Linear -> class logits."""

    def __init__(self, hidden: int = 64):
        super().__init__()
        self.lstm = nn.LSTM(FEATURES, hidden, batch_first=True)
        self.head = nn.Linear(hidden, CLASSES)

    def forward(self, padded, lengths):
        packed = pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
        _, (h_n, _) = self.lstm(packed)  # h_n: (layers, N, hidden) in the batch's original order
        return self.head(h_n[-1])


def evaluate(model, padded, lengths, labels, batch_size: int = 256) -> float:
    """Accuracy on the padded sequences with their lengths."""
    model.eval()
    correct = 0
    with core.no_grad():
        for start in range(0, len(lengths), batch_size):
            stop = start + batch_size
            logits = model(padded[start:stop], lengths[start:stop])
            correct += int((logits.argmax(1) == labels[start:stop]).sum().item())
    model.train()
    return correct / len(lengths)


def build_parser() -> argparse.ArgumentParser:
    """The command line: every option with its help and default, the module docstring's examples as epilog."""
    description, _, epilog = __doc__.partition("\n\nexamples:")
    parser = argparse.ArgumentParser(prog=pathlib.Path(__file__).name, description=description,
                                     epilog="examples:" + epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default=None,
                        help="device to train on (cpu, opencl, ...; `python3 -m core info` lists them; "
                             "default: core's default device)")
    parser.add_argument("--epochs", type=int, default=3, metavar="N", help="epochs (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=32, metavar="N",
                        help="sequences per optimizer step (default: %(default)s)")
    parser.add_argument("--lr", type=float, default=2e-2, help="Adam's learning rate (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help="seed of weight initialization and shuffling (default: %(default)s)")
    return parser


def train(args, device) -> float:
    """Train on ``device``, printing the test accuracy each epoch; returns the final test accuracy."""
    core.manual_seed(args.seed)
    x_train, len_train, y_train, x_test, len_test, y_test = load_sequences(device)
    counts = dict(zip(*np.unique(np.concatenate([len_train, len_test]), return_counts=True)))
    print("sequences per length: " + ", ".join(f"{int(k)}: {int(v)}" for k, v in counts.items()))
    model = SequenceClassifier().to(device)
    optimizer = core.optim.Adam(model.parameters(), lr=args.lr)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    accuracy = 0.0
    for epoch in range(args.epochs):
        order = rng.permutation(len(len_train))
        total_loss = 0.0
        for start in range(0, len(order), args.batch_size):
            batch = order[start:start + args.batch_size]
            index = core.tensor(batch, device=device)
            logits = model(x_train.index_select(0, index), len_train[batch])
            loss = F.cross_entropy(logits, y_train.index_select(0, index))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total_loss += loss.item() * len(batch)
        accuracy = evaluate(model, x_test, len_test, y_test)
        print(f"epoch {epoch + 1:2d}: loss {total_loss / len(order):.4f}  test acc {accuracy:.4f}")
    print(f"done: test accuracy {accuracy:.1%} after {args.epochs} epochs in {time.perf_counter() - started:.1f} s "
          f"on {device}")
    return accuracy


def main(argv=None) -> float:
    """Run the command line ``argv``; returns the final test accuracy."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1:
        parser.error("--epochs and --batch-size must be at least 1")
    try:
        device = core.device(args.device) if args.device else core.get_default_device()
    except (RuntimeError, ConfigError) as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    print(f"device: {device}")
    return train(args, device)


if __name__ == "__main__":
    main(sys.argv[1:])
