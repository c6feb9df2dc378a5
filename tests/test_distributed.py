"""core.distributed on MPI: real multi-process jobs (mpiexec -n 2 and 3) run the workers in
tests/distributed_workers/, which compare every collective and DistributedDataParallel against NumPy or a
single process; plus the launcher, faults, and the checks that need no MPI job."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import core
import core.distributed as dist
from core.plugins import get_manager

ROOT = Path(__file__).resolve().parent.parent
WORKERS = Path(__file__).resolve().parent / "distributed_workers"


def _mpiexec():
    from core.distributed.run import find_mpiexec

    try:
        return find_mpiexec()
    except RuntimeError:
        return None


needs_mpi = pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None or _mpiexec() is None,
                               reason="mpi4py or mpiexec is not installed (the core[mpi] extra)")


def _env() -> dict:
    """The ranks' environment: one CPU-kernel thread each unless set (as the launcher does), so that 2-3 ranks'
    OpenMP workers, which spin a few ms before sleeping, do not share 2 cores."""
    return {"OMP_NUM_THREADS": "1", **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def _launch(ranks: int, worker: str, *args, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``worker`` as ``ranks`` MPI processes (through the launcher's own mpiexec command line)."""
    from core.distributed.run import mpiexec_command

    command = mpiexec_command(ranks, [str(WORKERS / worker), *args])
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=_env())


def _ok(done: subprocess.CompletedProcess, ranks: int, marker: str) -> None:
    assert done.returncode == 0, done.stdout + done.stderr
    for rank in range(ranks):
        assert f"rank {rank} {marker}" in done.stdout, done.stdout + done.stderr


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_collectives_match_numpy(ranks):
    _ok(_launch(ranks, "collectives.py"), ranks, "ok")


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_ddp_gradients_equal_one_process_on_the_whole_batch(ranks):
    _ok(_launch(ranks, "ddp.py"), ranks, "ddp ok")


@needs_mpi
def test_launcher_runs_the_script_with_torchrun_variables(tmp_path):
    script = tmp_path / "job.py"
    script.write_text("import os, sys\nimport core, core.distributed as dist\ndist.init_process_group()\n"
                      "t = core.tensor([float(os.environ['RANK'])])\ndist.all_reduce(t)\n"
                      "line = f\"rank {os.environ['RANK']} {os.environ['LOCAL_RANK']} {os.environ['WORLD_SIZE']} "
                      "{t.item()} {sys.argv[1:]} threads {os.environ['OMP_NUM_THREADS']} {core.get_num_threads()}"
                      "\\n\"\n"
                      "os.write(1, line.encode())  # one write: the ranks share the pipe\n")
    done = subprocess.run([sys.executable, "-m", "core.distributed.run", "--nproc-per-node", "2", str(script), "a",
                           "--b"], capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in _env().items() if k not in ("OMP_NUM_THREADS", "CORE_NUM_THREADS")})
    assert done.returncode == 0, done.stderr
    for rank in (0, 1):  # as torchrun: one thread per rank when OMP_NUM_THREADS is not set, with its warning
        assert f"rank {rank} {rank} 2 1.0 ['a', '--b'] threads 1 1" in done.stdout, done.stdout
    assert "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default" in done.stderr


@needs_mpi
def test_a_rank_that_dies_is_named_by_the_others_within_the_timeout(tmp_path):
    start = time.monotonic()
    done = _launch(2, "fault.py", "exit", "2", str(tmp_path / "stderr"))
    assert time.monotonic() - start < 30
    assert done.returncode != 0 and "rank 0 was not stopped" not in done.stdout
    said = _said(done, tmp_path)
    # MPI either leaves rank 0 waiting (our timeout) or reports the closed connection first (a backend error)
    assert re.search(r"all_reduce on rank 0 (did not complete within 2 s|failed \(.*\)): rank 1 \(pid \d+\) has "
                     r"exited", said, re.S), (done.returncode, done.stdout, said)


@needs_mpi
def test_an_uncaught_exception_in_a_rank_aborts_every_rank(tmp_path):
    done = _launch(2, "fault.py", "raise", "60", str(tmp_path / "stderr"), timeout=30)  # far within the 60 s timeout
    assert done.returncode != 0 and "rank 0 was not stopped" not in done.stdout
    said = _said(done, tmp_path)
    assert "ValueError: rank 1 fails on purpose" in said
    assert "core.distributed: rank 1 raised an uncaught ValueError; aborting every rank" in said


def _said(done, tmp_path) -> str:
    """What the ranks said on stderr: as mpiexec forwarded it, and as each rank wrote it to its own file (mpiexec may
    stop forwarding once a rank is gone or the job aborts, before another rank's last line arrives)."""
    return done.stderr + "".join(p.read_text() for p in sorted(tmp_path.glob("stderr.rank*")))


# -- no MPI job needed ------------------------------------------------------------------------------------------
def test_mpi_is_a_process_group_plugin_listed_by_core_info():
    info = get_manager().process_group_backends["mpi"]
    assert info.plugin == "mpi" and info.runtime == "core.distributed.mpi:ProcessGroupMPI"
    assert "Distributed (process-group backends)" in core.info.report()
    assert core.info.collect()["process_groups"]["mpi"]["plugin"] == "mpi"


def test_a_third_party_process_group_backend_registers_through_the_hook():
    from core.plugins import hookimpl

    class ToyGroup(dist.ProcessGroup):
        name = "toycomm"

    class Plugin:
        @hookimpl
        def register_process_group_backends(self, register):
            register(name="toycomm", runtime=ToyGroup, probe=lambda: (False, "no toy network here"))

    manager = get_manager()
    manager.register_plugin(Plugin(), name="toycomm-plugin")
    try:
        assert manager.process_group_backends["toycomm"].plugin == "toycomm-plugin"
        with pytest.raises(RuntimeError, match="process-group backend 'toycomm' is unavailable: no toy network"):
            dist.init_process_group("toycomm")
        assert not dist.is_backend_available("toycomm") and not dist.is_initialized()
    finally:
        manager._forget_plugin("toycomm-plugin")
    assert "toycomm" not in manager.process_group_backends


def test_errors_before_init_and_for_unknown_backends():
    assert dist.is_available() and not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="has not been initialized"):
        dist.all_reduce(core.ones(2))
    with pytest.raises(RuntimeError, match=r"no process-group backend 'gloo' is installed \(process-group "
                                           r"backends: .*mpi"):
        dist.init_process_group("gloo")
    with pytest.raises(TypeError, match="timeout must be a datetime.timedelta"):
        dist.init_process_group("mpi", timeout=5)
    assert [op.name for op in dist.ReduceOp][:5] == ["SUM", "AVG", "PRODUCT", "MIN", "MAX"]


def test_work_times_out_with_the_backends_diagnosis():
    work = dist.Work("all_reduce on rank 0", lambda: False, diagnose=lambda: "rank 1 (pid 7) has exited")
    assert not work.is_completed()
    from datetime import timedelta

    with pytest.raises(dist.DistBackendError, match="all_reduce on rank 0 did not complete within 0.05 s: rank 1"):
        work.wait(timedelta(seconds=0.05))
    finished = []
    work = dist.Work("barrier", lambda: True, finish=[lambda: finished.append(1)])
    assert work.wait() and work.is_completed() and finished == [1]


@needs_mpi
def test_digits_example_trains_data_parallel_and_resumes_as_if_never_stopped(tmp_path):
    pytest.importorskip("tqdm")  # examples/train_digits.py's progress bar (the examples extra)

    def run(checkpoint, *args):
        done = subprocess.run([sys.executable, "-m", "core.distributed.run", "--nproc-per-node", "2",
                               str(ROOT / "examples" / "train_digits_ddp.py"), "--checkpoint", str(checkpoint),
                               "--batch-size", "64", "--train-size", "512", *args], capture_output=True, text=True,
                              timeout=120, env=_env())
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    assert "done: test accuracy" in run(tmp_path / "straight.ckpt", "--epochs", "2")
    run(tmp_path / "resumed.ckpt", "--epochs", "1")
    assert "epoch  2:" in run(tmp_path / "resumed.ckpt", "--epochs", "2", "--resume")
    straight, resumed = core.load(tmp_path / "straight.ckpt"), core.load(tmp_path / "resumed.ckpt")
    assert straight["epoch"] == resumed["epoch"] == 2
    for name, value in straight["model"].items():
        assert core.equal(value, resumed["model"][name]), name


def test_backend_names_and_capabilities(monkeypatch):
    assert dist.Backend("MPI") == dist.Backend.MPI == "mpi" and dist.Backend("Toy") == "toy"
    with pytest.raises(ValueError, match="must be string-ish"):
        dist.Backend(3)
    assert dist.get_default_backend_for_device("cpu") == "mpi"
    assert dist.get_default_backend_for_device(core.device("cpu")) == "mpi"
    with pytest.raises(ValueError, match="Default backend not registered for device : nowhere"):
        dist.get_default_backend_for_device("nowhere")
    assert not dist.is_ucc_available() and not dist.is_xccl_available()
    assert dist.supports_complex(dist.ReduceOp.SUM) and not dist.supports_complex(dist.ReduceOp.MAX)
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    assert not dist.is_torchelastic_launched()
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "7")
    assert dist.is_torchelastic_launched()
    with pytest.raises(ValueError, match="has not been initialized"):
        dist.new_subgroups(group_size=1)


@needs_mpi
def test_without_a_launcher_the_world_is_one_process_and_env_must_agree():
    code = ("import core.distributed as dist\ndist.init_process_group()\n"
            "print(dist.get_rank(), dist.get_world_size(), dist.get_backend())\ndist.destroy_process_group()\n"
            "print(dist.is_initialized())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=_env())
    assert done.returncode == 0 and done.stdout.split() == ["0", "1", "mpi", "False"], done.stderr
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**_env(), "WORLD_SIZE": "2"})
    assert done.returncode != 0
    assert "init_process_group(): world_size 2 does not match the launcher's (1); start the processes with " \
           "mpiexec -n N" in done.stderr


_FAST_PATH = """
import numpy as np
import core, core.nn as nn, core.distributed as dist

dist.init_process_group()
pg = dist.group.WORLD
for t in (core.arange(6.0), nn.Parameter(core.ones(2, 3)), core.arange(4, dtype=core.int64)):
    array, write_back = pg.buffer(t)  # contiguous host memory of a dtype MPI knows: the tensor's own
    assert write_back is None and np.shares_memory(array, t.detach().numpy()), t
for t in (core.zeros(4, 2)[:, 0], core.ones(3, dtype=core.float16)):  # strided, no MPI dtype: staged
    array, write_back = pg.buffer(t)
    assert write_back is not None and array.flags.c_contiguous and array.dtype == np.float32, t
t = core.arange(6.0)
assert dist.all_reduce(t) is None and t.tolist() == [0, 1, 2, 3, 4, 5]
work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
assert work.wait() and work.result()[0] is t and t.tolist() == [0, 1, 2, 3, 4, 5]
half = core.tensor([1.5, 2.5], dtype=core.float16)
dist.all_reduce(half, op=dist.ReduceOp.MAX)
assert half.dtype == core.float16 and half.tolist() == [1.5, 2.5]
for call, error in ((lambda: dist.all_reduce([1.0]), "all_reduce(): expected parameter `tensor` of type Tensor "
                                                    "but got list instead"),
                    (lambda: dist.all_reduce(t, op="sum"), "all_reduce(): op must be a ReduceOp, got 'sum'"),
                    (lambda: dist.all_reduce(core.ones(2, dtype=core.complex64), op=dist.ReduceOp.MAX),
                     "all_reduce does not support ReduceOp.MAX on complex tensors")):
    try:
        call()
    except (TypeError, ValueError) as exc:
        assert str(exc) == error, exc
    else:
        raise AssertionError(error)
dist.destroy_process_group()
print("ok")
"""


@needs_mpi
def test_all_reduce_hands_host_tensors_to_mpi_without_copies_and_checks_its_arguments():
    done = subprocess.run([sys.executable, "-c", _FAST_PATH], capture_output=True, text=True, timeout=60,
                          env=_env())
    assert done.returncode == 0 and done.stdout.split() == ["ok"], done.stderr


@pytest.mark.parametrize("kind", ["hash", "file", "prefix", "tcp"])
def test_stores_set_get_add_compare_set_and_wait(kind, tmp_path):
    from datetime import timedelta

    base = {"file": lambda: dist.FileStore(str(tmp_path / "store"), 2),
            "tcp": lambda: dist.TCPStore("127.0.0.1", 0, is_master=True)}.get(kind, dist.HashStore)()
    store = dist.PrefixStore("job", base) if kind == "prefix" else base
    store.set("a", "1")
    store.set("b", b"\x00\xff")
    assert store.get("a") == b"1" and store.get("b") == b"\x00\xff"
    assert store.add("n", 5) == 5 and store.add("n", -2) == 3 and store.get("n") == b"3"
    assert store.compare_set("c", "", "first") == b"first"        # missing and expected empty: set
    assert store.compare_set("c", "other", "second") == b"first"  # mismatch: unchanged
    assert store.compare_set("c", "first", "second") == b"second"
    assert store.compare_set("missing", "x", "y") == b"x" and not store.check(["missing"])
    assert store.check(["a", "b"]) and store.num_keys() == 4
    assert store.delete_key("a") and not store.delete_key("a") and store.num_keys() == 3
    store.set_timeout(timedelta(seconds=0.05))
    with pytest.raises(dist.DistStoreError, match=r"Wait timeout after 0.05 s for keys \['(job/)?a'\]"):
        store.get("a")
    if kind == "prefix":
        assert base.get("job/b") == b"\x00\xff" and base.num_keys() == 3
    if kind in ("file", "tcp"):  # another process sees it and writes to it
        opened = f"d.FileStore({str(tmp_path / 'store')!r})" if kind == "file" else \
            f"d.TCPStore('127.0.0.1', {base.port})"
        code = f"import core.distributed as d\ns = {opened}\nprint(s.get('b').hex())\ns.set('from_child', 'hi')"
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=_env())
        assert done.stdout.strip() == "00ff", done.stderr
        store.wait(["from_child"], timedelta(seconds=5))
        assert store.get("from_child") == b"hi"
