"""Train a small CNN on the handwritten digits that ship in examples/data/digits.npz.

examples:
  python examples/train_digits.py                       # default device, 20 epochs, >= 97% test accuracy
  python examples/train_digits.py --device cpu --epochs 5
  python examples/train_digits.py --resume --epochs 25  # 5 more epochs from the saved checkpoint
  python examples/train_digits.py --out /tmp/digits     # checkpoint and log go to /tmp/digits
  python examples/train_digits.py --device meta         # shapes only: meta tensors hold no data
  python examples/train_digits.py --tensorboard runs/digits   # then: tensorboard --logdir runs
  python examples/train_digits.py --amp                 # mixed precision: autocast (bfloat16 on cpu) + GradScaler
  bash scripts/train.sh --device cpu                    # the main job: installs core, then runs this

output:
  First the device with the backend that serves it, and the absolute paths of the checkpoint and the log.
  Per epoch a progress bar, the loss, train and test accuracy; the checkpoint (model + optimizer + epoch,
  what --resume continues from) is replaced atomically, so a run killed mid-save keeps the previous one;
  the log (<checkpoint name>-log.csv beside it) gets a row: epoch, loss, train_accuracy, test_accuracy,
  seconds. Last, one line: "done: test accuracy 98.9% in 7.1 s on cpu (backend cpu_c), checkpoint PATH".
  On --device meta the model runs one batch forward, through the loss and backward, and its shapes are
  checked; there is no training, accuracy, checkpoint or log.

exit status:
  0 done; 1 the run failed on the device (traceback above the error line);
  2 bad arguments, or a device that is malformed, unknown or unavailable (`python3 -m core info` lists them)
"""

from __future__ import annotations

import argparse
import csv
import pathlib
import sys
import time
import traceback

import numpy as np
from tqdm import tqdm

import core
import core.nn as nn
import core.nn.functional as F
from core.config import ConfigError
from core.plugins import get_manager
from core.utils.atomic import atomic_write
from core.utils.data import DataLoader, TensorDataset

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / "data" / "digits.npz"
DEFAULT_OUT = HERE / "checkpoints"
CHECKPOINT_NAME = "digits.ckpt"
LOG_FIELDS = ("epoch", "loss", "train_accuracy", "test_accuracy", "seconds")
CLASSES = 10


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
                                        nn.Linear(64, CLASSES))

    def forward(self, x):
        return self.classifier(self.features(x))


def evaluate(model, images, labels, batch_size: int = 256, amp: bool = False) -> float:
    """Accuracy on (images, labels) (under autocast with ``amp``)."""
    model.eval()
    correct = 0
    with core.no_grad(), core.autocast(images.device.type, enabled=amp):
        for start in range(0, len(labels), batch_size):
            logits = model(images[start:start + batch_size])
            correct += int((logits.argmax(1) == labels[start:start + batch_size]).sum().item())
    model.train()
    return correct / len(labels)


# -- command line ---------------------------------------------------------------------------------------------------

def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _default_device_text() -> str:
    """The default device for --help; a broken configuration is reported when the run starts, not here."""
    try:
        return str(core.get_default_device())
    except ConfigError:
        return "unset: the configuration is invalid"


def build_parser() -> argparse.ArgumentParser:
    """The command line: every option with its help and default, the module docstring's examples as epilog."""
    description, _, epilog = __doc__.partition("\n\n")
    parser = argparse.ArgumentParser(prog=pathlib.Path(__file__).name, description=description, epilog=epilog,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default=None,
                        help="device to train on: any device type an installed backend provides (cpu, cpu:0, "
                             "opencl, cuda:1, ...; `python3 -m core info` lists them), or meta to check shapes "
                             f"only (default: core's default device, now {_default_device_text()}; "
                             "CORE_DEVICE or the config file sets it)")
    parser.add_argument("--epochs", type=_positive_int, default=20, metavar="N",
                        help="epochs in all; with --resume, counted from the start of the first run "
                             "(default: %(default)s)")
    parser.add_argument("--batch-size", type=_positive_int, default=32, metavar="N",
                        help="images per optimizer step (default: %(default)s)")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam's learning rate (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help="seed of weight initialization, dropout and shuffling (default: %(default)s)")
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT, metavar="DIR",
                        help=f"directory for the checkpoint ({CHECKPOINT_NAME}) and the per-epoch log; created "
                             "if missing (default: %(default)s)")
    parser.add_argument("--checkpoint", type=pathlib.Path, default=None, metavar="FILE",
                        help=f"checkpoint file instead of DIR/{CHECKPOINT_NAME}; the log goes beside it as "
                             f"<name>-log.csv (default: DIR/{CHECKPOINT_NAME})")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the checkpoint (model, optimizer, epoch) up to --epochs "
                             "(default: off, start over and replace it)")
    parser.add_argument("--amp", action="store_true",
                        help="mixed precision: the forward under core.autocast in the device's default low dtype "
                             "(bfloat16 on cpu, float16 elsewhere), the loss scaled by core.amp.GradScaler "
                             "(default: off, float32)")
    parser.add_argument("--capture", action="store_true",
                        help="compile the training step whole with core.compile(mode='reduce-overhead'): its "
                             "kernel calls are recorded once and replayed without per-op Python (default: off, "
                             "eager)")
    parser.add_argument("--tensorboard", type=pathlib.Path, default=None, metavar="DIR",
                        help="also log the loss and accuracy curves and the model's graph for TensorBoard in DIR "
                             "(default: off; needs the tensorboard extra: CORE_EXTRAS=tensorboard bash "
                             "scripts/train.sh ...)")
    return parser


def open_tensorboard(log_dir: pathlib.Path | None):
    """A SummaryWriter for ``log_dir``, or None when not asked for; SystemExit(2) when tensorboard is missing."""
    if log_dir is None:
        return None
    try:
        from core.utils.tensorboard import SummaryWriter

        return SummaryWriter(str(log_dir))
    except ImportError as exc:
        raise SystemExit(f"error: --tensorboard: {exc}") from None


def resolve_device(name: str | None) -> tuple:
    """(device, name of the backend serving it); core's error when it is malformed, unknown or unavailable."""
    device = core.device(name) if name else core.get_default_device()
    backend = get_manager().backend_for(device.type).name
    count = getattr(core, device.type).device_count()
    if count == 0 or (device.index is not None and device.index >= count):
        raise RuntimeError(f"device '{device}' does not exist: backend {backend} sees {count} {device.type} "
                           f"device(s)")
    return device, backend


# -- checkpoint and log ---------------------------------------------------------------------------------------------

def log_path_for(checkpoint: pathlib.Path) -> pathlib.Path:
    """The per-epoch log beside ``checkpoint``: digits.ckpt -> digits-log.csv."""
    return checkpoint.with_name(f"{checkpoint.stem}-log.csv")


def save_checkpoint(state: dict, checkpoint: pathlib.Path) -> None:
    """Write ``state`` to a temporary file beside ``checkpoint``, then rename it over: readers (and --resume)
    only ever see a complete checkpoint, and a run killed mid-save keeps the previous one."""
    with atomic_write(checkpoint) as handle:  # what core.save(state, path) does too, spelled out for readers
        core.save(state, handle)


def log_rows_to_keep(path: pathlib.Path, resumed_epoch: int) -> list:
    """Rows of the log a run starts with: none for a fresh run; for a resumed one, those up to the checkpoint's
    epoch (later rows belong to epochs whose checkpoint was never written)."""
    if not resumed_epoch or not path.is_file():
        return []
    with open(path, newline="") as handle:
        return [row for row in csv.DictReader(handle)
                if (row.get("epoch") or "").isdigit() and int(row["epoch"]) <= resumed_epoch]


# -- the runs -------------------------------------------------------------------------------------------------------

def train(args, device, backend: str, checkpoint: pathlib.Path) -> float:
    """Train (or resume) on ``device``, checkpointing and logging every epoch; prints the summary, returns the
    final test accuracy."""
    core.manual_seed(args.seed)
    x_train, y_train, x_test, y_test = load_digits(device)
    model = DigitsNet().to(device)
    optimizer = core.optim.Adam(model.parameters(), lr=args.lr)
    # a float16 forward needs loss scaling against underflowing gradients; bfloat16 (cpu's) has float32's range
    scaler = core.amp.GradScaler(device.type, enabled=args.amp and core.get_autocast_dtype(device.type) ==
                                 core.float16)
    start_epoch = 0
    if args.resume:
        state = core.load(checkpoint, map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        if state.get("scaler"):
            scaler.load_state_dict(state["scaler"])
        start_epoch = state["epoch"]
        print(f"resumed from {checkpoint} after epoch {start_epoch}")
        if start_epoch >= args.epochs:
            print(f"the checkpoint is at epoch {start_epoch}, --epochs is {args.epochs}: nothing to train")

    generator = core.Generator().manual_seed(args.seed + start_epoch)
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=args.batch_size, shuffle=True,
                        generator=generator)
    log_path = log_path_for(checkpoint)
    kept_rows = log_rows_to_keep(log_path, start_epoch)
    writer = open_tensorboard(args.tensorboard)
    if writer is not None:
        writer.add_graph(model, x_train[:1])

    def train_step(images, labels):
        """One optimizer step; returns the batch's loss and number of correct predictions (as tensors)."""
        with core.autocast(device.type, enabled=args.amp):
            logits = model(images)
            loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.detach(), (logits.argmax(1) == labels).sum()

    step = core.compile(train_step, mode="reduce-overhead") if args.capture else train_step
    started = time.perf_counter()
    with open(log_path, "w", newline="") as log_file:
        log = csv.DictWriter(log_file, LOG_FIELDS, restval="", extrasaction="ignore")
        log.writeheader()
        log.writerows(kept_rows)
        for epoch in range(start_epoch, args.epochs):
            epoch_started = time.perf_counter()
            total_loss, correct, seen = 0.0, 0, 0
            bar = tqdm(loader, desc=f"epoch {epoch + 1}/{args.epochs}", unit="batch", leave=False,
                       disable=None)  # a bar on a terminal; none in logs and pipes
            for images, labels in bar:
                loss, hits = step(images, labels)
                total_loss += loss.item() * len(labels)
                correct += int(hits.item())
                seen += len(labels)
                bar.set_postfix(loss=f"{total_loss / seen:.4f}")
            test_accuracy = evaluate(model, x_test, y_test, amp=args.amp)
            print(f"epoch {epoch + 1:2d}: loss {total_loss / seen:.4f}  train acc {correct / seen:.4f}  "
                  f"test acc {test_accuracy:.4f}")
            save_checkpoint({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch + 1,
                             "scaler": scaler.state_dict()}, checkpoint)
            log.writerow({"epoch": epoch + 1, "loss": f"{total_loss / seen:.6f}",
                          "train_accuracy": f"{correct / seen:.6f}", "test_accuracy": f"{test_accuracy:.6f}",
                          "seconds": f"{time.perf_counter() - epoch_started:.3f}"})
            log_file.flush()
            if writer is not None:
                writer.add_scalar("loss/train", total_loss / seen, epoch + 1)
                writer.add_scalar("accuracy/train", correct / seen, epoch + 1)
                writer.add_scalar("accuracy/test", test_accuracy, epoch + 1)
                writer.flush()
    if writer is not None:
        writer.close()
    seconds = time.perf_counter() - started
    accuracy = evaluate(model, x_test, y_test, amp=args.amp)
    print(f"done: test accuracy {accuracy:.1%} in {seconds:.1f} s on {device} (backend {backend}), "
          f"checkpoint {checkpoint}")
    return accuracy


def check_shapes_on_meta(args, device, backend: str) -> None:
    """One batch forward, through the loss, backward and an optimizer step on meta tensors, checking shapes."""
    core.manual_seed(args.seed)
    x_train, y_train, _, _ = load_digits(device)
    model = DigitsNet().to(device)
    optimizer = core.optim.Adam(model.parameters(), lr=args.lr)
    images, labels = x_train[:args.batch_size], y_train[:args.batch_size]
    batch = images.shape[0]

    logits = model(images)
    if tuple(logits.shape) != (batch, CLASSES):
        raise RuntimeError(f"the model maps {tuple(images.shape)} to {tuple(logits.shape)}, "
                           f"expected {(batch, CLASSES)}")
    print(f"forward: {tuple(images.shape)} -> {tuple(logits.shape)}")
    loss = F.cross_entropy(logits, labels)
    if tuple(loss.shape) != ():
        raise RuntimeError(f"the loss has shape {tuple(loss.shape)}, expected a scalar")
    print(f"loss: shape {tuple(loss.shape)}")
    loss.backward()
    wrong = [name for name, p in model.named_parameters() if p.grad is None or p.grad.shape != p.shape]
    if wrong:
        raise RuntimeError(f"gradients missing or of the wrong shape: {', '.join(wrong)}")
    optimizer.step()
    print(f"backward: {len(list(model.parameters()))} gradients with their parameters' shapes; optimizer step ran")
    print(f"done: shapes checked on {device} (backend {backend}): forward, loss, backward, optimizer step; "
          f"meta has no data, so no training, accuracy or checkpoint")


def main(argv=None) -> float | None:
    """Run the command line ``argv``; the final test accuracy, or None on meta (which computes shapes only)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        device, backend = resolve_device(args.device)
    except (RuntimeError, ConfigError) as exc:  # core's own errors: a malformed, unknown or unavailable device
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    if device.type == "meta" and args.resume:
        parser.error("--resume needs a device with data; meta computes shapes only")
    print(f"device: {device} (backend {backend})")

    if device.type == "meta":
        print("meta computes shapes only: its tensors have no data, so nothing is trained, measured or written")
        run = lambda: check_shapes_on_meta(args, device, backend)  # noqa: E731
    else:
        checkpoint = (args.checkpoint or args.out / CHECKPOINT_NAME).resolve()
        if args.resume and not checkpoint.is_file():
            parser.exit(2, f"{parser.prog}: error: --resume: no checkpoint at {checkpoint}\n")
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        print(f"checkpoint: {checkpoint}")
        print(f"log: {log_path_for(checkpoint)}")
        run = lambda: train(args, device, backend, checkpoint)  # noqa: E731
    try:
        return run()
    except Exception as exc:  # a backend that loads but cannot run the job: say so after the traceback
        traceback.print_exc()
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        parser.exit(1, f"{parser.prog}: error: the run on {device} (backend {backend}) failed: "
                       f"{type(exc).__name__}: {first_line} (traceback above; `python3 -m core info` describes "
                       f"the backends)\n")


if __name__ == "__main__":
    main(sys.argv[1:])
