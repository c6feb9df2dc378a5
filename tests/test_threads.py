"""A device used from several Python threads at once gives each thread the results it gets alone (as in PyTorch).

Each thread trains its own small model (or runs its own op sequence) on the same device; the results must equal,
exactly, those of the same computation run on one thread. Kernels are deterministic for a given shape, so any
difference means one thread's launch saw another's arguments or buffers.
"""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import core
from core import nn, optim
from core.plugins.manager import BackendUnavailableError, get_manager

THREADS = 4
ROUNDS = 6  # each round starts THREADS threads together; one round rarely hides a race, six almost never do
STEPS = 12
SLOT_ROUNDS = 20  # a round of the old unguarded first use made two slots 1 time in 4

DEVICE_TYPES = ("cpu", "opencl", "cuda")


@pytest.fixture(params=DEVICE_TYPES)
def device_type(request):
    """Each device type in turn; one that does not load here is skipped with the reason, one left out by
    ``--core-backend`` is skipped too."""
    selected = request.config.getoption("--core-backend", default=None)
    if selected and selected != request.param:
        pytest.skip(f"--core-backend {selected}")
    try:
        get_manager().backend_for(request.param)
    except BackendUnavailableError as exc:
        pytest.skip(str(exc))
    return request.param


@pytest.fixture(autouse=True)
def frequent_thread_switches():
    """Switch threads every microsecond instead of every 5 ms, so that launches interleave in every round."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(previous)


def run_in_threads(work, seeds) -> dict:
    """``{seed: work(seed)}`` with one thread per seed, all released at once; an exception in a thread is raised."""
    results, errors = {}, []
    start = threading.Barrier(len(seeds))

    def target(seed):
        try:
            start.wait()
            results[seed] = work(seed)
        except BaseException as exc:  # noqa: B036 - re-raised on the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=target, args=(seed,)) for seed in seeds]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def train_mlp(device: str, seed: int) -> list:
    """Losses of STEPS SGD steps of a two-layer MLP whose weights and data come from ``seed`` (not from core's
    global generator, which the threads share)."""
    rng = np.random.default_rng(seed)

    def draw(*shape, scale=1.0):
        return core.tensor((rng.standard_normal(shape) * scale).astype(np.float32), device=device)

    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    with core.no_grad():
        for p in model.parameters():
            p.copy_(draw(*p.shape, scale=0.3))
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y = draw(32, 8), draw(32, 1)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def op_sequence(device: str, seed: int) -> list:
    """Host copies of a chain of elementwise (broadcast, strided), reduction and matmul results."""
    rng = np.random.default_rng(seed)
    a = core.tensor(rng.standard_normal((6, 5)).astype(np.float32), device=device)
    b = core.tensor(rng.standard_normal((5,)).astype(np.float32), device=device)
    out = []
    for _ in range(STEPS):
        c = (a * b + 1.0).exp().t()  # broadcast, scalar operand, transposed view
        s = c.sum(1) + c.amax(0).sum()
        m = (a @ c).relu()
        a = (m[:, :5] * 0.1 + a).tanh()
        out += [s.cpu().numpy(), m.argmax(1).cpu().numpy()]
    return out


def assert_same_as_alone(work, device: str) -> None:
    seeds = list(range(THREADS))
    alone = {seed: work(device, seed) for seed in seeds}
    for round_ in range(ROUNDS):
        together = run_in_threads(lambda seed: work(device, seed), seeds)
        for seed in seeds:
            for step, (got, want) in enumerate(zip(together[seed], alone[seed])):
                np.testing.assert_array_equal(got, want, err_msg=f"round {round_}, thread {seed}, step {step}: "
                                                                 f"{device} result differs from the single-thread run")


def test_threads_training_separate_models_match_single_thread(device_type):
    assert_same_as_alone(train_mlp, device_type)


def test_threads_running_op_sequences_match_single_thread(device_type):
    assert_same_as_alone(op_sequence, device_type)


def test_threads_first_using_opencl_share_one_device_slot():
    """Threads that touch a fresh opencl runtime together get one context, queue and pool: buffers of two contexts
    cannot meet in one kernel."""
    pytest.importorskip("core_opencl", reason="the core-opencl plugin is not installed")
    if not core.opencl.is_available():
        pytest.skip(f"no OpenCL device: {core.opencl.unavailable_reason()}")
    from core_opencl.runtime import OpenCLRuntime

    for _ in range(SLOT_ROUNDS):
        runtime = OpenCLRuntime()
        slots = run_in_threads(lambda seed, runtime=runtime: runtime.slot(0), list(range(THREADS)))
        assert len({id(slot) for slot in slots.values()}) == 1
