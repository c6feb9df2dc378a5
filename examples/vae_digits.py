"""Train a small variational autoencoder with core.distributions on the digits in examples/data/digits.npz.

examples:
  python examples/vae_digits.py                         # default device, 30 epochs
  python examples/vae_digits.py --device cpu --epochs 5
  python examples/vae_digits.py --latent 2 --seed 1

model:
  The encoder maps an image (64 pixels scaled to [0, 1]) to Normal(loc, scale) over the latent code; a code is
  drawn with rsample (the reparameterisation trick, so gradients reach the encoder). The decoder maps the code to
  Bernoulli(logits=...) over the pixels; its log_prob of the grey levels in [0, 1] is the usual binary
  cross-entropy (validate_args=False, since the pixels are not all 0 or 1). The loss is the negative ELBO,
  -log p(x | z) + KL(q(z | x) || Normal(0, 1)), with the KL from core.distributions.kl_divergence.

output:
  The device with its backend, then per epoch the mean training loss and the test-set negative ELBO per image
  (nats, one latent sample per image, drawn from a fixed seed); last, one line:
  "done: test negative ELBO 26.12 nats per image in 7.1 s on cpu (backend cpu_c)".

exit status:
  0 done; 1 the run failed on the device (traceback above the error line);
  2 bad arguments, or a device that is malformed, unknown or unavailable (`python3 -m core info` lists them)
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
import traceback

import numpy as np

import core
import core.nn as nn
from core.config import ConfigError
from core.distributions import Bernoulli, Normal, kl_divergence
from core.utils.data import DataLoader, TensorDataset

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from train_digits import DATA, _default_device_text, _positive_int, resolve_device  # noqa: E402

PIXELS = 64


def load_images(device) -> tuple:
    """(train images, test images) as (N, 64) in [0, 1]: the same fixed 80/20 split as train_digits.py."""
    with np.load(DATA) as data:
        images = data["images"].astype(np.float32).reshape(-1, PIXELS) / 16.0
    order = np.random.default_rng(0).permutation(len(images))
    split = int(0.8 * len(images))
    return core.tensor(images[order[:split]], device=device), core.tensor(images[order[split:]], device=device)


class VAE(nn.Module):
    """An MLP encoder to Normal(loc, scale) over ``latent`` dimensions and an MLP decoder to Bernoulli logits."""

    def __init__(self, latent: int = 8, hidden: int = 128):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(PIXELS, hidden), nn.ReLU(), nn.Linear(hidden, 2 * latent))
        self.decoder = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, PIXELS))
        self.latent = latent

    def posterior(self, x) -> Normal:
        """q(z | x): the encoder's Normal over the code of each image in ``x``."""
        out = self.encoder(x)
        loc, raw_scale = out[:, :self.latent], out[:, self.latent:]
        return Normal(loc, nn.functional.softplus(raw_scale) + 1e-4)

    def negative_elbo(self, x):
        """Per image: -log p(x | z) + KL(q(z | x) || N(0, 1)), with z ~ q(z | x) reparameterised (shape (N,))."""
        q = self.posterior(x)
        z = q.rsample()
        likelihood = Bernoulli(logits=self.decoder(z), validate_args=False)
        prior = Normal(core.zeros_like(q.loc), core.ones_like(q.scale))
        return -likelihood.log_prob(x).sum(1) + kl_divergence(q, prior).sum(1)


def evaluate(model, images, seed: int, batch_size: int = 512) -> float:
    """Mean negative ELBO per image (nats) on ``images``, one latent sample each, drawn after seeding the default
    generators with ``seed``."""
    model.eval()
    total = 0.0
    core.manual_seed(seed)  # the same samples after every epoch; train() reseeds before the next one
    with core.no_grad():
        for start in range(0, len(images), batch_size):
            total += model.negative_elbo(images[start:start + batch_size]).sum().item()
    model.train()
    return total / len(images)


def train(args, device, backend: str) -> float:
    """Train on ``device``, printing the test negative ELBO per epoch; returns the final one."""
    core.manual_seed(args.seed)
    x_train, x_test = load_images(device)
    model = VAE(args.latent).to(device)
    optimizer = core.optim.Adam(model.parameters(), lr=args.lr)
    loader = DataLoader(TensorDataset(x_train), batch_size=args.batch_size, shuffle=True,
                        generator=core.Generator().manual_seed(args.seed))
    started = time.perf_counter()
    for epoch in range(args.epochs):
        core.manual_seed(args.seed + 1 + epoch)  # evaluate() reseeds the default generators: fresh noise per epoch
        total, seen = 0.0, 0
        for (images,) in loader:
            loss = model.negative_elbo(images).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(images)
            seen += len(images)
        print(f"epoch {epoch + 1:2d}: train loss {total / seen:.3f}  "
              f"test negative ELBO {evaluate(model, x_test, args.seed):.3f} nats per image")
    result = evaluate(model, x_test, args.seed)
    print(f"done: test negative ELBO {result:.2f} nats per image in {time.perf_counter() - started:.1f} s "
          f"on {device} (backend {backend})")
    return result


def build_parser() -> argparse.ArgumentParser:
    """The command line: every option with its help and default, the module docstring's examples as epilog."""
    description, _, epilog = __doc__.partition("\n\n")
    parser = argparse.ArgumentParser(prog=pathlib.Path(__file__).name, description=description, epilog=epilog,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default=None,
                        help="device to train on: any device type an installed backend provides (cpu, opencl, ...; "
                             "`python3 -m core info` lists them) (default: core's default device, now "
                             f"{_default_device_text()})")
    parser.add_argument("--epochs", type=_positive_int, default=30, metavar="N",
                        help="epochs to train (default: %(default)s)")
    parser.add_argument("--batch-size", type=_positive_int, default=64, metavar="N",
                        help="images per optimizer step (default: %(default)s)")
    parser.add_argument("--latent", type=_positive_int, default=8, metavar="N",
                        help="dimensions of the latent code (default: %(default)s)")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam's learning rate (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help="seed of weight initialization, shuffling and latent samples (default: %(default)s)")
    return parser


def main(argv=None) -> float:
    """Run the command line ``argv``; returns the final test negative ELBO per image (nats)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        device, backend = resolve_device(args.device)
    except (RuntimeError, ConfigError) as exc:  # core's own errors: a malformed, unknown or unavailable device
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    if device.type == "meta":
        parser.exit(2, f"{parser.prog}: error: meta tensors hold no data: pick a device that computes\n")
    print(f"device: {device} (backend {backend})")
    try:
        return train(args, device, backend)
    except Exception as exc:  # a backend that loads but cannot run the job: say so after the traceback
        traceback.print_exc()
        parser.exit(1, f"{parser.prog}: error: the run on {device} (backend {backend}) failed: "
                       f"{type(exc).__name__}: {exc}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
