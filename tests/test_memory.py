"""Memory: allocation failures as core.OutOfMemoryError, memory statistics and their peaks per device, no leaks."""

from __future__ import annotations

import gc
import os
import resource

import pytest

import core

HUGE = 1 << 40  # elements: 4 TiB of float32, beyond any test machine's memory and any OpenCL buffer limit
SIZE = 1 << 20  # elements: 4 MiB of float32


def test_huge_allocation_raises_out_of_memory_naming_device_and_size(device):
    with pytest.raises(core.OutOfMemoryError) as info:
        core.empty(HUGE, device=device)
    message = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert str(HUGE * 4) in message and "4.00 TiB" in message
    assert str(core.empty(0, device=device).device) in message
    assert "pool:" in message
    assert info.value.__cause__ is not None  # the backend's own error, chained


def test_out_of_memory_from_kernels_outputs_and_factories(device):
    for make in (lambda: core.zeros(HUGE, device=device), lambda: core.ones(HUGE // 2, 2, device=device)):
        with pytest.raises(core.OutOfMemoryError):
            make()


def test_out_of_memory_error_is_pytorchs_shape():
    assert issubclass(core.OutOfMemoryError, RuntimeError)
    assert core.cuda.OutOfMemoryError is core.OutOfMemoryError


def test_other_backend_errors_are_not_relabelled():
    from core.errors import allocate_buffer

    class Broken:
        name = "broken"

        def allocate(self, nbytes, dev):
            raise KeyError("not a memory problem")

    with pytest.raises(KeyError):
        allocate_buffer(Broken(), 8, core.device("cpu"))


def _settle(device) -> None:
    gc.collect()
    core.get_device_module(device).synchronize()


def test_memory_allocated_counts_a_tensor_and_returns_after_del(device):
    _settle(device)
    before = core.memory_allocated(device)
    x = core.empty(SIZE, device=device)
    assert core.memory_allocated(device) >= before + SIZE * 4
    assert core.get_device_module(device).memory_allocated() == core.memory_allocated(device)
    del x
    _settle(device)
    assert core.memory_allocated(device) == before


def test_peak_and_reset(device):
    _settle(device)
    core.reset_peak_memory_stats(device)
    base = core.memory_allocated(device)
    assert core.max_memory_allocated(device) == base
    x = core.empty(SIZE, device=device)
    y = core.empty(SIZE, device=device)
    del x, y
    _settle(device)
    assert core.max_memory_allocated(device) >= base + 2 * SIZE * 4
    core.reset_peak_memory_stats(device)
    assert core.max_memory_allocated(device) == core.memory_allocated(device)


def test_memory_stats_uses_pytorchs_names(device):
    x = core.empty(SIZE, device=device)
    stats = core.memory_stats(device)
    assert stats["allocated_bytes.all.current"] >= SIZE * 4
    assert stats["allocated_bytes.all.peak"] >= stats["allocated_bytes.all.current"]
    assert stats["reserved_bytes.all.current"] >= stats["allocated_bytes.all.current"]
    assert stats == core.get_device_module(device).memory_stats()
    del x


def test_kernel_outputs_are_counted(device):
    x = core.ones(SIZE, device=device)
    _settle(device)
    before = core.memory_allocated(device)
    y = x * 2.0
    assert core.memory_allocated(device) >= before + SIZE * 4
    del y


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_training_keeps_memory_flat(device):
    """2,000 training steps of a tiny MLP: allocated, pool and resident memory after 2,000 steps as after 200."""
    core.manual_seed(0)
    model = core.nn.Sequential(core.nn.Linear(32, 64), core.nn.ReLU(), core.nn.Linear(64, 10)).to(device)
    optimizer = core.optim.Adam(model.parameters(), lr=1e-3)
    inputs, targets = core.randn(8, 32, device=device), core.randint(0, 10, (8,), device=device)
    module = core.get_device_module(device)

    def step() -> None:
        optimizer.zero_grad()
        loss = core.nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()

    def measure() -> tuple:
        _settle(device)
        return module.memory_allocated(), module.memory_reserved(), _resident_bytes()

    for _ in range(200):
        step()
    allocated, reserved, resident = measure()
    for _ in range(1800):
        step()
    allocated_after, reserved_after, resident_after = measure()
    assert allocated_after <= allocated + 64 * 1024
    assert reserved_after <= reserved + 1024 * 1024
    assert resident_after <= resident + 8 * 1024 * 1024
