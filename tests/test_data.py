"""core.utils.data: datasets, samplers, collation and the DataLoader with and without worker processes."""

from __future__ import annotations

import collections
import contextlib
import gc
import math
import multiprocessing
import os
import random
import signal
import time
import warnings

import numpy as np
import pytest

import core
from core.testing import assert_close
from core.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset, IterableDataset,
                             RandomSampler, SequentialSampler, StackDataset, Subset, SubsetRandomSampler,
                             TensorDataset, WeightedRandomSampler, default_collate, default_convert,
                             get_worker_info, random_split)

Point = collections.namedtuple("Point", ["x", "y"])


@contextlib.contextmanager
def _deadline(seconds: int):
    """Fail instead of hanging: a test that would block forever raises TimeoutError after ``seconds``."""
    def on_alarm(signum, frame):
        raise TimeoutError(f"test still blocked after {seconds} s")
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def no_leftover_workers():
    """Checks after the test that every worker process it started was stopped and reaped."""
    before = set(multiprocessing.active_children())
    yield
    gc.collect()
    assert set(multiprocessing.active_children()) <= before


def _seeded(seed=0) -> core.Generator:
    return core.Generator().manual_seed(seed)


def _flatten(batches) -> list:
    return [v for b in batches for v in (b.tolist() if isinstance(b, core.Tensor) else b)]


# -- datasets used by worker tests: module level, their samples are plain ints or tensors ------------------------------

class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return core.tensor([i, i * i])


class BadIndexError(ValueError):
    pass


class FailsAt(Squares):
    def __getitem__(self, i):
        if i == 5:
            raise BadIndexError(f"sample {i} is corrupt")
        return super().__getitem__(i)


class KillsItsWorkerAt(Squares):
    def __getitem__(self, i):
        if i == 5 and get_worker_info() is not None:  # never kill the test process itself
            os.kill(os.getpid(), signal.SIGKILL)
        return super().__getitem__(i)


class WorkerPid(Squares):
    def __getitem__(self, i):
        return os.getpid()


class WorkerState(Squares):
    """Reports what the worker set up: the id given to worker_init_fn, the worker's seed and its random draws."""

    def __getitem__(self, i):
        info = get_worker_info()
        return {"index": i, "init": _init_marker[0], "id": info.id, "seed": info.seed,
                "python": random.random(), "numpy": float(np.random.rand()), "core": core.rand(()).item()}


_init_marker = [None]


def _record_init(worker_id):
    _init_marker[0] = worker_id * 10 + 7


class Range(IterableDataset):
    """0..n-1, split into contiguous shards between the workers through get_worker_info()."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        per_worker = math.ceil(self.n / info.num_workers)
        return iter(range(info.id * per_worker, min(self.n, (info.id + 1) * per_worker)))


# -- collation --------------------------------------------------------------------------------------------------------

def test_collate_stacks_tensors_and_arrays():
    out = default_collate([core.ones(2, 3), core.zeros(2, 3)])
    assert out.shape == (2, 2, 3)
    assert_close(out, np.stack([np.ones((2, 3)), np.zeros((2, 3))]).astype(np.float32))
    arrays = [np.arange(3, dtype=np.int32), np.arange(3, 6, dtype=np.int32)]
    out = default_collate(arrays)
    assert out.dtype == core.int32
    assert_close(out, np.stack(arrays))
    with pytest.raises(RuntimeError):
        default_collate([core.ones(2), core.ones(3)])


def test_collate_numbers_follow_pytorch_dtypes():
    assert default_collate([1.5, 2.0]).dtype == core.float64  # not the default dtype
    assert default_collate([1, 2]).dtype == core.int64
    assert default_collate([True, False]).dtype == core.bool
    assert default_collate([True, False]).tolist() == [True, False]
    assert default_collate([np.float32(1), np.float32(2)]).dtype == core.float32
    assert default_collate([np.int16(1), np.int16(2)]).dtype == core.int16


def test_collate_nested_structures():
    batch = [(core.tensor([1.0]), 1, "a"), (core.tensor([2.0]), 2, "b")]
    x, y, s = default_collate(batch)  # a tuple sample gives a list of fields
    assert isinstance(default_collate(batch), list)
    assert x.shape == (2, 1) and y.tolist() == [1, 2]
    assert list(s) == ["a", "b"]
    out = default_collate([{"img": np.zeros(2), "meta": {"id": 3}}, {"img": np.ones(2), "meta": {"id": 4}}])
    assert out["img"].dtype == core.float64 and out["img"].shape == (2, 2)
    assert out["meta"]["id"].tolist() == [3, 4]
    point = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(point, Point) and point.x.tolist() == [1, 3] and point.y.dtype == core.float64
    assert [t.tolist() for t in default_collate([[1, 2], [3, 4]])] == [[1, 3], [2, 4]]
    ordered = default_collate([collections.OrderedDict(a=1), collections.OrderedDict(a=2)])
    assert isinstance(ordered, collections.OrderedDict)


def test_collate_errors():
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])


def test_collate_matches_torch():
    pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate
    cases = [[1.5, 2.5], [1, 2], [True, False], [np.float32(1), np.float64(2)], [np.arange(3), np.arange(3)],
             [np.float16(1), np.float16(2)], [np.uint8(1), np.uint8(2)]]
    for batch in cases:
        ours, theirs = default_collate(batch), torch_collate(batch)
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), batch
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_default_convert():
    out = default_convert({"a": np.arange(3), "b": (np.float32(1.0), "text"), "c": [np.zeros(1)]})
    assert isinstance(out["a"], core.Tensor) and out["a"].tolist() == [0, 1, 2]
    assert isinstance(out["b"], list) and out["b"][0].dtype == core.float32 and out["b"][1] == "text"
    assert isinstance(out["c"][0], core.Tensor)
    strings = np.array(["x", "y"])
    assert default_convert(strings) is strings
    assert default_convert(3) == 3
    assert isinstance(default_convert(Point(np.int64(1), 2)), Point)


# -- datasets ---------------------------------------------------------------------------------------------------------

def test_tensor_dataset(device):
    x, y = core.randn(5, 3, device=device), core.arange(5, device=device)
    ds = TensorDataset(x, y)
    assert len(ds) == 5
    sample_x, sample_y = ds[2]
    assert_close(sample_x, x[2])
    assert sample_y.item() == 2
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, core.arange(4, device=device))


def test_concat_chain_stack_subset():
    a, b = Squares(3), Squares(2)
    cat = a + b
    assert isinstance(cat, ConcatDataset) and len(cat) == 5 and cat.cumulative_sizes == [3, 5]
    assert [cat[i][0].item() for i in range(5)] == [0, 1, 2, 0, 1]
    assert cat[-1][0].item() == 1
    with pytest.raises(ValueError, match="absolute value of index"):
        cat[-6]
    with pytest.raises(AssertionError, match="empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([Range(2)])
    chain = Range(2) + Range(3)
    assert isinstance(chain, ChainDataset) and list(chain) == [0, 1, 0, 1, 2] and len(chain) == 5
    with pytest.raises(AssertionError, match="only supports IterableDataset"):
        list(ChainDataset([Squares(1)]))
    stacked = StackDataset(Squares(3), Squares(3))
    assert len(stacked) == 3 and len(stacked[1]) == 2
    named = StackDataset(a=Squares(2), b=Subset(Squares(4), [3, 2]))
    assert named[0]["b"].tolist() == [3, 9]
    assert [s["b"][0].item() for s in named.__getitems__([0, 1])] == [3, 2]
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(Squares(2), Squares(3))
    sub = Subset(Squares(10), [7, 1, 4])
    assert len(sub) == 3 and sub[0][0].item() == 7
    assert [s[0].item() for s in sub.__getitems__([2, 0])] == [4, 7]
    with pytest.raises(NotImplementedError):
        Dataset()[0]


def test_random_split_lengths_and_fractions():
    parts = random_split(range(10), [3, 7], generator=_seeded(0))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))
    again = random_split(range(10), [3, 7], generator=_seeded(0))
    assert list(again[0]) == list(parts[0])
    # floor(10 * f) each, the remainder dealt out from the first split on (PyTorch's rule)
    assert [len(p) for p in random_split(range(10), [0.33, 0.33, 0.34], generator=_seeded(1))] == [4, 3, 3]
    assert [len(p) for p in random_split(range(5), [0.5, 0.5])] == [3, 2]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        random_split(range(10), [0.5, 1.5, -1.0])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(2), [1.0, 0.0])


# -- samplers ---------------------------------------------------------------------------------------------------------

def test_sequential_and_random_sampler():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3] and len(SequentialSampler(range(4))) == 4
    order = list(RandomSampler(range(20), generator=_seeded(3)))
    assert sorted(order) == list(range(20)) and order != list(range(20))
    assert list(RandomSampler(range(20), generator=_seeded(3))) == order
    core.manual_seed(5)
    first = list(RandomSampler(range(20)))
    core.manual_seed(5)
    assert list(RandomSampler(range(20))) == first  # no generator: seeded from core's default generator


def test_random_sampler_num_samples_and_replacement():
    counts = collections.Counter(RandomSampler(range(4), num_samples=10, generator=_seeded(0)))
    assert sum(counts.values()) == 10 and all(counts[i] >= 2 for i in range(4))  # two full permutations + 2
    drawn = list(RandomSampler(range(5), replacement=True, num_samples=70, generator=_seeded(0)))
    assert len(drawn) == 70 and set(drawn) <= set(range(5))
    assert len(RandomSampler(range(5), replacement=True, num_samples=70)) == 70
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler([])


def test_subset_and_weighted_samplers():
    indices = [10, 20, 30, 40]
    drawn = list(SubsetRandomSampler(indices, generator=_seeded(2)))
    assert sorted(drawn) == indices and len(SubsetRandomSampler(indices)) == 4
    assert list(SubsetRandomSampler(indices, generator=_seeded(2))) == drawn
    weighted = list(WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 50, generator=_seeded(0)))
    assert len(weighted) == 50 and set(weighted) <= {1, 3}
    assert list(WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 50, generator=_seeded(0))) == weighted
    unique = list(WeightedRandomSampler([1.0, 2.0, 3.0], 3, replacement=False, generator=_seeded(1)))
    assert sorted(unique) == [0, 1, 2]
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0, 2.0]], 1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1.0], True)


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, drop_last=False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 2, 1)


# -- DataLoader in the main process -----------------------------------------------------------------------------------

def test_dataloader_batches_len_and_drop_last(device):
    ds = TensorDataset(core.arange(10.0, device=device).reshape(10, 1), core.arange(10, device=device))
    loader = DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].shape == (4, 1) and batches[0][0].device == ds.tensors[0].device
    loader = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(loader) == 2 and [len(b[1]) for b in loader] == [4, 4]
    unbatched = list(DataLoader(ds, batch_size=None))
    assert len(unbatched) == 10 and unbatched[3][1].item() == 3
    assert len(DataLoader(Range(10), batch_size=4)) == 3 and len(DataLoader(Range(10), batch_size=4,
                                                                            drop_last=True)) == 2


def test_dataloader_samplers_and_collate_fn():
    loader = DataLoader(range(6), batch_sampler=[[5, 0], [1]], collate_fn=lambda batch: batch)
    assert list(loader) == [[5, 0], [1]] and len(loader) == 2
    assert list(DataLoader(range(4), sampler=[3, 1], batch_size=2))[0].tolist() == [3, 1]
    assert [b.tolist() for b in DataLoader(range(5), batch_size=2, shuffle=True, generator=_seeded(4))] == \
        [b.tolist() for b in DataLoader(range(5), batch_size=2, shuffle=True, generator=_seeded(4))]
    assert list(DataLoader(Range(5), batch_size=2))[-1].tolist() == [4]
    assert list(DataLoader(range(3), batch_size=2, pin_memory=True))[0].tolist() == [0, 1]  # accepted, no-op


def test_dataloader_argument_errors():
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(range(3), batch_size=2, batch_sampler=[[0]])
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(range(3), sampler=[0], shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Range(3), shuffle=True)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(range(3), num_workers=-1)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
        DataLoader(range(3), prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(range(3), persistent_workers=True)
    with pytest.raises(ValueError, match="multiprocessing_context can only be used with multi-process loading"):
        DataLoader(range(3), multiprocessing_context="fork")
    with pytest.raises(ValueError, match="should specify a valid start method"):
        DataLoader(range(3), num_workers=1, multiprocessing_context="teleport")
    loader = DataLoader(range(3), batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3
    assert DataLoader(range(3), num_workers=2).prefetch_factor == 2
    with pytest.raises(AssertionError, match="requires timeout == 0"):
        iter(DataLoader(range(3), timeout=1))


# -- DataLoader with worker processes ---------------------------------------------------------------------------------

def test_workers_give_the_same_batches_as_the_main_process():
    ds = Squares(23)
    kwargs = {"batch_size": 4, "shuffle": True}
    single = [b.tolist() for b in DataLoader(ds, generator=_seeded(7), **kwargs)]
    multi = [b.tolist() for b in DataLoader(ds, generator=_seeded(7), num_workers=2, **kwargs)]
    assert multi == single
    assert sorted(row[0] for batch in single for row in batch) == list(range(23))
    unordered = DataLoader(ds, generator=_seeded(7), num_workers=2, in_order=False, **kwargs)
    assert sorted(map(str, (b.tolist() for b in unordered))) == sorted(map(str, single))


def test_worker_exception_carries_its_traceback():
    loader = DataLoader(FailsAt(8), batch_size=2, num_workers=2)
    it = iter(loader)
    assert next(it).tolist() == [[0, 0], [1, 1]]
    assert next(it)[1].tolist() == [3, 9]
    with pytest.raises(BadIndexError, match="Caught BadIndexError in DataLoader worker process 0") as info:
        next(it)
    message = str(info.value)
    assert "Original Traceback (most recent call last)" in message
    assert "sample 5 is corrupt" in message and "__getitem__" in message
    assert next(it)[0].tolist() == [6, 36]  # the loader goes on after a bad batch, as PyTorch's does
    assert list(it) == []


class _LocalError(Exception):
    def __init__(self, code, detail):  # cannot be rebuilt from a message alone
        super().__init__(f"{code}: {detail}")


class NeedsTwoArgs(Squares):
    def __getitem__(self, i):
        raise _LocalError(3, "unusual exception")


def test_worker_exception_that_cannot_be_rebuilt_becomes_runtime_error():
    with pytest.raises(RuntimeError, match="Caught _LocalError in DataLoader worker process 0(.|\n)*unusual"):
        list(DataLoader(NeedsTwoArgs(4), num_workers=1))


@pytest.mark.parametrize("timeout", [0, 30])
def test_killed_worker_raises_instead_of_hanging(timeout, no_leftover_workers):
    loader = DataLoader(KillsItsWorkerAt(8), batch_size=2, num_workers=2, timeout=timeout)
    with _deadline(20), pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        list(loader)


class Slow(Squares):
    def __getitem__(self, i):
        if get_worker_info() is not None:
            time.sleep(1.0)  # far longer than the loader's timeout
        return super().__getitem__(i)


def test_timeout(no_leftover_workers):
    loader = DataLoader(Slow(2), num_workers=1, timeout=0.1)
    with _deadline(20), pytest.raises(RuntimeError, match="DataLoader timed out after 0.1 seconds"):
        next(iter(loader))


def test_iterable_dataset_sharded_with_get_worker_info():
    assert get_worker_info() is None  # main process
    batches = [b.tolist() for b in DataLoader(Range(11), batch_size=3, num_workers=2)]
    assert batches == [[0, 1, 2], [6, 7, 8], [3, 4, 5], [9, 10]]  # round-robin over the workers, like PyTorch
    assert sorted(DataLoader(Range(11), batch_size=None, num_workers=3)) == list(range(11))
    dropped = [b.tolist() for b in DataLoader(Range(11), batch_size=3, num_workers=2, drop_last=True)]
    assert dropped == [[0, 1, 2], [6, 7, 8], [3, 4, 5]]


def test_worker_init_fn_and_seeds():
    loader = DataLoader(WorkerState(4), batch_size=None, num_workers=2, worker_init_fn=_record_init,
                        generator=_seeded(11))
    samples = list(loader)
    assert [s["index"] for s in samples] == [0, 1, 2, 3]
    assert [s["init"] for s in samples] == [s["id"] * 10 + 7 for s in samples]
    assert [s["id"] for s in samples] == [0, 1, 0, 1]
    seeds = {s["id"]: s["seed"] for s in samples}
    assert seeds[1] == seeds[0] + 1  # base_seed + worker_id
    again = list(DataLoader(WorkerState(4), batch_size=None, num_workers=2, generator=_seeded(11)))
    for key in ("seed", "python", "numpy", "core"):
        assert [s[key] for s in again] == [s[key] for s in samples]  # reproducible from the loader's generator
    assert samples[0]["numpy"] != samples[1]["numpy"] and samples[0]["core"] != samples[1]["core"]


def test_numpy_worker_seed_matches_torch():
    pytest.importorskip("torch")
    from torch.utils.data._utils.worker import _generate_state

    from core.utils.data._worker import _numpy_seed
    for base_seed, worker_id in [(0, 0), (123456789123, 3), (2 ** 63 - 1, 7)]:
        assert _numpy_seed(base_seed, worker_id) == _generate_state(base_seed, worker_id)


def test_persistent_workers_live_across_epochs(no_leftover_workers):
    loader = DataLoader(WorkerPid(6), batch_size=2, num_workers=2, persistent_workers=True)
    pids = [set(_flatten(loader)) for _ in range(3)]
    assert len(pids[0]) == 2 and pids[0] == pids[1] == pids[2]
    partial = iter(loader)
    next(partial)  # a new epoch while the last one is unfinished drops its leftovers
    assert len(_flatten(loader)) == 6
    iterable = DataLoader(Range(5), batch_size=2, num_workers=2, persistent_workers=True)
    assert [sorted(_flatten(iterable)) for _ in range(2)] == [list(range(5))] * 2
    del loader, partial, iterable


def test_workers_are_shut_down_and_reaped(no_leftover_workers):
    it = iter(DataLoader(Squares(6), batch_size=2, num_workers=2))
    workers = list(it._workers)
    assert len(list(it)) == 3
    assert all(w.exitcode is not None for w in workers)  # exhausted: stopped and joined
    it = iter(DataLoader(Squares(40), batch_size=2, num_workers=2))
    next(it)
    workers = list(it._workers)
    del it  # abandoned mid-epoch: garbage collection stops the workers
    gc.collect()
    assert all(w.exitcode is not None for w in workers)


def test_worker_batches_hold_tensors_of_every_kind():
    samples = [{"x": core.full((2,), float(i)), "y": i, "name": f"s{i}", "half": core.ones(1, dtype=core.float16)}
               for i in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        batches = list(DataLoader(samples, batch_size=2, num_workers=2))
    assert batches[1]["x"].tolist() == [[2.0, 2.0], [3.0, 3.0]]
    assert batches[1]["y"].dtype == core.int64 and list(batches[1]["name"]) == ["s2", "s3"]
    assert batches[0]["half"].dtype == core.float16
