"""The ``nccl`` process-group backend of the cuda plugin (plugins/cuda/core_cuda/nccl.py).

Everywhere: it is registered through the plugin hook, ``python -m core info`` lists it with the reason it cannot
run, ``init_process_group("nccl")`` raises a RuntimeError naming that reason, and the rendezvous its ranks meet
through works (threads sharing a store). Where CuPy loads NCCL and sees GPUs: real jobs through
``core.distributed.run`` run tests/distributed_workers/nccl_*.py, which check every collective against NumPy and
DDP against one process; 2-rank jobs need 2 GPUs (NCCL refuses two ranks on one GPU).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest

import core.distributed as dist
from core.distributed.rendezvous import Rendezvous, StoreBootstrap, bootstrap
from core.plugins import get_manager

nccl = pytest.importorskip("core_cuda.nccl", reason="the core-cuda plugin with the nccl backend is not importable")

ROOT = Path(__file__).resolve().parent.parent
WORKERS = Path(__file__).resolve().parent / "distributed_workers"
AVAILABLE, REASON = nccl.probe()


def _gpus() -> int:
    if not AVAILABLE:
        return 0
    import cupy

    return cupy.cuda.runtime.getDeviceCount()


def _env() -> dict:
    paths = [str(ROOT), str(ROOT / "plugins" / "cuda"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


# -- everywhere -------------------------------------------------------------------------------------------------
def test_the_cuda_plugin_registers_nccl_for_cuda_tensors():
    manager = get_manager()
    manager.scan()
    info = manager.process_group_backends["nccl"]
    assert info.plugin == "cuda" and info.devices == ("cuda",) and info.runtime == "core_cuda.nccl:ProcessGroupNCCL"
    assert dist.get_default_backend_for_device("cuda") == "nccl"
    assert dist.get_default_backend_for_device("cpu") == "mpi"
    assert dist.is_nccl_available() is AVAILABLE


@pytest.mark.skipif(AVAILABLE, reason="nccl is available here")
def test_unavailable_nccl_says_why():
    assert REASON and ("CUDA device" in REASON or "CuPy" in REASON or "NCCL" in REASON), REASON
    with pytest.raises(RuntimeError) as caught:
        dist.init_process_group("nccl", init_method="file:///nonexistent/never-used", rank=0, world_size=1)
    message = str(caught.value)
    assert "process-group backend 'nccl' is unavailable" in message and REASON in message, message
    assert "pip install -e 'plugins/cuda[nccl]'" in message
    assert not dist.is_initialized()
    report = subprocess.run([sys.executable, "-m", "core", "info"], capture_output=True, text=True, env=_env(),
                            timeout=120).stdout
    row = next(line for line in report.splitlines() if line.strip().startswith("nccl "))
    assert "cuda" in row and "unavailable: " + REASON in row, report


# -- the rendezvous: threads standing in for ranks, sharing one store -----------------------------------------
def _ranks(size: int, body) -> list:
    """Run ``body(rank)`` in ``size`` threads at once; their results in rank order (re-raising a failure)."""
    results, errors = [None] * size, []

    def run(rank):
        try:
            results[rank] = body(rank)
        except BaseException as error:  # noqa: BLE001 - re-raised below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(r,)) for r in range(size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    if errors:
        raise errors[0]
    return results


def test_store_bootstrap_broadcasts_gathers_and_splits():
    store = dist.HashStore()

    def rank_body(rank):
        boot = bootstrap(Rendezvous(store=store, rank=rank, world_size=3), 30.0)
        assert isinstance(boot, StoreBootstrap) and (boot.rank, boot.size) == (rank, 3)
        uid = boot.broadcast("id", [rank - 128, 7, 127] if rank == 1 else None, root=1)
        peers = boot.allgather("peers", ["host", 100 + rank])
        sub = boot.split([0, 2], "group1")
        inner = None
        if sub is not None:
            inner = (sub.rank, sub.size, sub.broadcast("id", f"from {rank}" if sub.rank == 0 else None),
                     sub.allgather("x", rank * 10))
        return uid, peers, sub is None, inner

    results = _ranks(3, rank_body)
    for rank, (uid, peers, outside, _) in enumerate(results):
        assert uid == [-127, 7, 127] and peers == [["host", 100], ["host", 101], ["host", 102]]
        assert outside == (rank == 1)
    assert results[0][3] == (0, 2, "from 0", [0, 20]) and results[2][3] == (1, 2, "from 0", [0, 20])


def test_file_init_method_and_explicit_ranks(tmp_path):
    method = f"file://{tmp_path / 'rendezvous'}"
    results = _ranks(2, lambda rank: bootstrap(Rendezvous(method, rank, 2), 30.0).allgather("k", rank * 3))
    assert results == [[0, 3], [0, 3]]


def test_tcp_init_method(tmp_path):
    import socket

    with socket.socket() as probe:  # a free port for rank 0's TCPStore
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    method = f"tcp://127.0.0.1:{port}"
    results = _ranks(2, lambda rank: bootstrap(Rendezvous(method, rank, 2), 30.0).broadcast("uid", rank or "zero"))
    assert results == ["zero", "zero"]


def test_rendezvous_errors_name_what_is_missing(monkeypatch):
    for variable in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "PMI_RANK", "OMPI_COMM_WORLD_RANK"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ValueError, match="rank is not given and RANK is not in the environment"):
        bootstrap(Rendezvous("tcp://127.0.0.1:1"), 1.0)
    with pytest.raises(ValueError, match="env:// needs MASTER_ADDR and MASTER_PORT"):
        bootstrap(Rendezvous(None, 0, 1), 1.0)
    assert bootstrap(Rendezvous(store=dist.HashStore(), rank=0, world_size=1), 1.0).broadcast("k", 5) == 5


# -- on GPUs -----------------------------------------------------------------------------------------------------
def _launch(ranks: int, worker: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "core.distributed.run", "--nproc-per-node", str(ranks), str(WORKERS / worker)]
    return subprocess.run(command, capture_output=True, text=True, timeout=900, env=_env())


def _mpiexec():
    from core.distributed.run import find_mpiexec

    try:
        return find_mpiexec()
    except RuntimeError:
        return None


def _needs(ranks: int, launcher: bool = True):
    if not AVAILABLE:
        pytest.skip(f"nccl is unavailable: {REASON}")
    if launcher and (importlib.util.find_spec("mpi4py") is None or _mpiexec() is None):
        pytest.skip("core.distributed.run needs mpi4py and mpiexec (the core[mpi] extra)")
    if _gpus() < ranks:
        pytest.skip(f"NCCL needs one GPU per rank: {ranks} ranks, {_gpus()} GPU(s) here")


@pytest.mark.parametrize("ranks", [1, 2])
@pytest.mark.parametrize("worker, marker", [("nccl_collectives.py", "nccl ok"), ("nccl_ddp.py", "nccl ddp ok")])
def test_nccl_jobs_on_gpus(ranks, worker, marker):
    _needs(ranks)
    done = _launch(ranks, worker)
    assert done.returncode == 0, done.stdout + done.stderr
    for rank in range(ranks):
        assert f"rank {rank} {marker}" in done.stdout, done.stdout + done.stderr


def test_nccl_is_initialized_from_a_store_on_one_gpu():
    """init_process_group("nccl", store=...) in this process: a one-rank group, its all_reduce and barrier."""
    _needs(1, launcher=False)
    import numpy as np

    import core

    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1, timeout=timedelta(seconds=30))
    try:
        x = core.arange(6, dtype=core.float32, device="cuda").reshape(2, 3)
        dist.all_reduce(x, op=dist.ReduceOp.AVG)
        dist.barrier()
        assert np.array_equal(x.cpu().numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))
        assert dist.get_backend() == "nccl" and dist.get_world_size() == 1
    finally:
        dist.destroy_process_group()


# -- the backend's own logic on the host: NCCL's semantics simulated (tests/nccl_host.py) ------------------------
def _module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def host_groups(monkeypatch):
    """``groups(size)``: one host-simulated ProcessGroupNCCL per thread-rank, met through a HashStore."""
    host = _module(Path(__file__).resolve().parent / "nccl_host.py")

    def groups(size):
        store = dist.HashStore()
        made = _ranks(size, lambda rank: host.HostNCCL.world(30.0, Rendezvous(store=store, rank=rank,
                                                                               world_size=size)))
        monkeypatch.setattr(dist.GroupMember, "WORLD", made[0])  # initialised; the calls below name their group
        return made
    return groups


@pytest.mark.parametrize("size", [2, 3])
def test_every_collective_on_host_simulated_nccl(size, host_groups):
    """The GPU worker's checks, run by threads over ProcessGroupNCCL with NCCL's calls carried out on the host."""
    groups, worker = host_groups(size), _module(WORKERS / "nccl_collectives.py")
    counts = _ranks(size, lambda rank: worker.check_collectives(groups[rank], "cpu"))
    assert min(counts) > 300, counts  # rank 0 checks more (gather), rank 1 one more (a recv)

