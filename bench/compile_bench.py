"""core.compile and core.jit.export_c against core eager, PyTorch and onnxruntime (issue 23's closing table).

Run: ``cd bench && python compile_bench.py [--seconds S] [--device cpu] [--clock cpu] [--stat min]``. One run,
contenders alternating round by round, medians reported (on a loaded machine: ``OMP_NUM_THREADS=1 ... --clock cpu
--stat min --rounds 25`` reports each contender's least disturbed round of CPU time instead).

* Training step (zero_grad, forward + cross-entropy, backward, optimizer step): MLP 784-512-512-10 at batch 128
  with SGD (momentum 0.9) and a LeNet CNN at batch 64 with Adam — core eager, core with the forward and loss
  compiled (``core.compile``; backward and optimizer eager, as ``torch.compile`` of a forward gives), the whole
  compiled step captured (``core.compile(step, mode="reduce-overhead")``: its kernel calls recorded and replayed),
  PyTorch eager and ``torch.compile`` when torch is importable; and the MLP with GELU's tanh form written out as
  elementwise ops (a chain that fuses, with a generated backward kernel) with Adam. Goals: compiled >= 1.3x
  core eager, >= 1.0x torch.compile.
* Inference (``no_grad``) at batch 1 and 64 of the same models: the ``core.jit.export_c`` C model (built as a
  shared library with the Makefile's flags and called through ctypes, so no process start is timed) against core
  eager, core.compile, onnxruntime (``core.onnx.export``) and PyTorch. Goal: C export >= 1.0x onnxruntime.
Every contender's first result is checked against core eager's before it is timed.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # see jit_bench.py: spinning OpenMP pools steal the cores

import argparse  # noqa: E402
import ctypes  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import core  # noqa: E402
import core.jit as jit  # noqa: E402
import core.nn as nn  # noqa: E402
import core.nn.functional as F  # noqa: E402
from _harness import time_synced_us  # noqa: E402
from train_step import core_lenet, core_mlp  # noqa: E402

MISSING = "not installed"


# --clock cpu: this process's CPU time; --stat min: the least disturbed round (both for a loaded machine)
CLOCK = {"clock": "wall", "rounds": 3, "stat": "median"}


def _time_us(fn, seconds: float) -> float:
    if CLOCK["clock"] == "wall":
        return time_synced_us(fn, lambda: None, seconds)
    fn()
    rates = []
    for _ in range(3):
        count, start = 0, time.process_time()
        while time.process_time() - start < seconds / 3:
            fn()
            count += 1
        rates.append((time.process_time() - start) / count * 1e6)
    return sorted(rates)[1]


def _alternate(contenders: dict, seconds: float) -> dict:
    """Median µs per call of each contender, timed round-robin so that noise hits all alike."""
    samples = {name: [] for name in contenders}
    for _ in range(CLOCK["rounds"]):
        for name, fn in contenders.items():
            samples[name].append(_time_us(fn, seconds))
    stat = min if CLOCK["stat"] == "min" else statistics.median
    return {name: stat(v) for name, v in samples.items()}


def _check(name: str, got, want, rtol=1e-4, atol=1e-5) -> None:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        raise AssertionError(f"{name}: result differs from core eager's (max abs diff "
                             f"{np.abs(got - want).max():.3g})")


def _torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(os.cpu_count() or 1)
    return torch


# -- training -----------------------------------------------------------------------------------------------------

class TanhGELU(nn.Module):
    """GELU's tanh approximation written out as elementwise ops (``nn.GELU(approximate="tanh")``): a chain that
    core.compile fuses, forward and backward."""

    def forward(self, x):
        return 0.5 * x * (1.0 + (0.7978845608028654 * (x + 0.044715 * x * x * x)).tanh())


def core_gelu_mlp(device):
    return nn.Sequential(nn.Linear(784, 512), TanhGELU(), nn.Linear(512, 512), TanhGELU(),
                         nn.Linear(512, 10)).to(device)


CASES = {"MLP 784-512-512-10 b128 SGD": (core_mlp, (128, 784), "sgd"),
         "LeNet b64 Adam": (core_lenet, (64, 1, 28, 28), "adam"),
         "MLP + written-out GELU b128 Adam": (core_gelu_mlp, (128, 784), "adam")}
INFERENCE = ("MLP 784-512-512-10 b128 SGD", "LeNet b64 Adam")


def _optimizer(kind: str, params, lib):
    if kind == "sgd":
        return lib.optim.SGD(params, lr=0.01, momentum=0.9)
    return lib.optim.Adam(params, lr=1e-3)


def _core_step(model, kind, x, y, how: str):
    """A training step: ``how`` is "eager", "compile" (the forward and loss compiled) or "capture" (that step, whole,
    compiled with ``mode="reduce-overhead"``: its kernel calls, fused ones included, recorded and replayed)."""
    loss_fn = lambda x, y: F.cross_entropy(model(x), y)  # noqa: E731
    forward = core.compile(loss_fn) if how != "eager" else loss_fn
    optimizer = _optimizer(kind, model.parameters(), core)

    def step():
        optimizer.zero_grad()
        loss = forward(x, y)
        loss.backward()
        optimizer.step()
        return loss

    return core.compile(step, mode="reduce-overhead") if how == "capture" else step


def _torch_steps(torch, make, shape, kind, x_np, y_np, state: dict) -> dict:
    """PyTorch eager and torch.compile steps on a copy of core's initial weights."""
    tnn = torch.nn
    steps = {}
    for name in ("torch eager", "torch.compile"):
        layers = [_torch_layer(torch, m) for m in make("cpu")]
        model = tnn.Sequential(*layers)
        model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in state.items()})
        forward = (lambda m: (lambda x, y: tnn.functional.cross_entropy(m(x), y)))(model)
        if name == "torch.compile":
            try:
                forward = torch.compile(forward)
            except Exception as exc:  # no compiler, unsupported platform
                steps[name] = f"n/a ({type(exc).__name__})"
                continue
        optimizer = _optimizer(kind, model.parameters(), torch)
        x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)

        def step(forward=forward, optimizer=optimizer, x=x, y=y):
            optimizer.zero_grad()
            loss = forward(x, y)
            loss.backward()
            optimizer.step()
            return loss.detach()

        steps[name] = step
    return steps


def _ctor_args(m) -> tuple:
    """The constructor arguments of a core layer of the benchmark models, for its PyTorch twin."""
    name = type(m).__name__
    if name == "Linear":
        return m.in_features, m.out_features
    if name == "Conv2d":
        return m.in_channels, m.out_channels, m.kernel_size
    if name == "MaxPool2d":
        return (m.kernel_size,)
    return ()


def _torch_layer(torch, m):
    if isinstance(m, TanhGELU):
        return torch.nn.GELU(approximate="tanh")
    return getattr(torch.nn, type(m).__name__)(*_ctor_args(m))


def training_table(device: str, seconds: float, torch) -> dict:
    rng = np.random.default_rng(0)
    results = {}
    for case, (make, shape, kind) in CASES.items():
        x_np = rng.standard_normal(shape).astype(np.float32)
        y_np = rng.integers(0, 10, shape[0])
        x, y = core.tensor(x_np, device=device), core.tensor(y_np, device=device)
        core.manual_seed(0)
        first = make(device)
        state = {k: v.cpu().numpy() for k, v in first.state_dict().items()}
        steps = {}
        for name, how in (("core eager", "eager"), ("core.compile", "compile"), ("core captured", "capture")):
            model = make(device)
            model.load_state_dict({k: core.tensor(v, device=device) for k, v in state.items()})
            steps[name] = _core_step(model, kind, x, y, how)
        if torch is not None and device == "cpu":
            steps.update(_torch_steps(torch, make, shape, kind, x_np, y_np, state))
        contenders, reference = {}, None
        for name, step in steps.items():
            if isinstance(step, str):  # torch.compile unavailable: the reason is the cell
                continue
            loss = step().item()  # the same first loss everywhere: same weights, same data
            reference = loss if reference is None else reference
            _check(f"{case}: {name}", loss, reference, rtol=1e-4, atol=1e-5)
            for _ in range(3):  # a compiled step replays its graph from the second call, a captured one its tape
                step()              # from the third (the first creates the optimizer's state)
            contenders[name] = step
        timed = _alternate(contenders, seconds)
        results[case] = {n: timed.get(n, steps.get(n, MISSING))
                         for n in ("core eager", "core.compile", "core captured", "torch eager", "torch.compile")}
    for subject in ("core.compile", "core captured"):
        _print(results, f"Training step on {device} (ms per step; ratio = {subject}'s speed-up)", subject,
               scale=1e-3, unit="ms")
    return results


# -- inference ----------------------------------------------------------------------------------------------------

def _cc_flags() -> list:
    """The Makefile's optional flags where the compiler takes them: OpenMP, and -O3 -march=native."""
    flags = []
    for probe in (["-fopenmp"], ["-O3", "-march=native"]):
        r = subprocess.run(["cc", "-x", "c", "-", "-o", os.devnull, *probe], input="int main(void){return 0;}\n",
                           capture_output=True, text=True)
        if r.returncode == 0:
            flags += probe
    return flags


class CModel:
    """An exported model built as a shared library: ``model_forward`` called through ctypes."""

    def __init__(self, traced, directory: Path, flags: list):
        files = jit.export_c(traced, directory, main=False)
        lib = directory / "libmodel.so"
        subprocess.run(["cc", "-O2", "-std=c99", "-fPIC", "-shared", *flags, str(files["source"]), "-o", str(lib),
                        "-lm"], check=True, capture_output=True, text=True)
        self.lib = ctypes.CDLL(str(lib))
        if self.lib.model_init(str(files["weights"]).encode()) != 0:
            raise RuntimeError("model_init failed")
        self.out_shape = tuple(traced.graph.output.shape) if hasattr(traced.graph.output, "shape") else None

    def runner(self, x: np.ndarray, out: np.ndarray):
        ptr = ctypes.POINTER(ctypes.c_float)
        ins = (ptr * 1)(x.ctypes.data_as(ptr))
        outs = (ptr * 1)(out.ctypes.data_as(ptr))
        forward = self.lib.model_forward
        return lambda: forward(ins, outs)


def inference_table(device: str, seconds: float, torch) -> dict:
    import importlib.util

    ort = importlib.import_module("onnxruntime") if importlib.util.find_spec("onnxruntime") else None
    flags = _cc_flags()
    print(f"\nC export built with: cc -O2 -std=c99 {' '.join(flags)}")
    rng = np.random.default_rng(1)
    results = {}
    with tempfile.TemporaryDirectory() as tmp, core.no_grad():
        for (case, (make, shape, _)), batch in [((c, CASES[c]), b) for c in INFERENCE for b in (1, 64)]:
            core.manual_seed(0)
            model = make("cpu").eval()
            x_np = rng.standard_normal((batch, *shape[1:])).astype(np.float32)
            x = core.tensor(x_np)
            want = model(x).numpy()
            label = f"{case.split(' b')[0]} b{batch}"
            contenders = {"core eager": lambda m=model, x=x: m(x)}
            compiled = core.compile(model)
            _check(f"{label}: core.compile", compiled(x).numpy(), want)
            contenders["core.compile"] = lambda c=compiled, x=x: c(x)
            directory = Path(tmp) / label.replace(" ", "_")
            cmodel = CModel(jit.trace(model, x), directory, flags)
            out = np.empty(want.shape, np.float32)
            contenders["C export"] = cmodel.runner(np.ascontiguousarray(x_np), out)
            contenders["C export"]()
            _check(f"{label}: C export", out, want)
            if ort is not None:
                path = directory / "model.onnx"
                core.onnx.export(model, x, str(path))
                options = ort.SessionOptions()
                options.intra_op_num_threads = os.cpu_count() or 1
                session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
                name = session.get_inputs()[0].name
                _check(f"{label}: onnxruntime", session.run(None, {name: x_np})[0], want)
                contenders["onnxruntime"] = lambda s=session, n=name: s.run(None, {n: x_np})
            if torch is not None:
                tmodel = torch.nn.Sequential(*[_torch_layer(torch, m) for m in model])
                tmodel.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()})
                tx = torch.from_numpy(x_np)
                torch.set_grad_enabled(False)
                contenders["torch eager"] = lambda t=tmodel, tx=tx: t(tx)
            timed = _alternate(contenders, seconds)
            results[label] = {n: timed.get(n, MISSING) for n in
                              ("core eager", "core.compile", "C export", "onnxruntime", "torch eager")}
    _print(results, "Inference, no_grad, cpu (µs per call; ratio = the C export's speed-up)", "C export")
    return results


def _print(results: dict, title: str, subject: str, scale: float = 1.0, unit: str = "µs") -> None:
    names = list(next(iter(results.values())))
    others = [n for n in names if n != subject]
    print(f"\n{title}\n")
    print("| case | " + " | ".join(f"{n} {unit}" for n in names) + " | " +
          " | ".join(f"vs {n}" for n in others) + " |")
    print("|" + "---|" * (1 + len(names) + len(others)))
    for case, by in results.items():
        cells = [f"{by[n] * scale:.2f}" if isinstance(by[n], float) else by[n] for n in names]
        ratios = [f"{by[n] / by[subject]:.2f}x" if isinstance(by[n], float) else "-" for n in others]
        print(f"| {case} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.5, help="timing window per contender and round")
    parser.add_argument("--device", default="cpu", help="device of the training table")
    parser.add_argument("--skip", choices=("training", "inference"), default=None, help="leave one table out")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: time this process's CPU use (with OMP_NUM_THREADS=1 on a loaded machine)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of alternation")
    parser.add_argument("--stat", choices=("median", "min"), default="median", help="which round is reported")
    args = parser.parse_args()
    CLOCK.update(clock=args.clock, rounds=args.rounds, stat=args.stat)
    print(f"clock: {args.clock}; {args.stat} of {args.rounds} rounds; "
          f"threads: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    torch = _torch()
    if torch is None:
        print("torch not importable: its columns say 'not installed'")
    if args.skip != "training":
        training_table(args.device, args.seconds, torch)
    if args.skip != "inference":
        inference_table(args.device, args.seconds, torch)


if __name__ == "__main__":
    main()
