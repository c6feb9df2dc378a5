"""core.utils.data: DistributedSampler, generator-seeded DataLoader shuffling and the DataPipe API."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np
import pytest

import core
from core.utils.data import (DataChunk, DataLoader, DFIterDataPipe, DistributedSampler, IterableDataset,
                             IterDataPipe, MapDataPipe, TensorDataset, argument_validation, functional_datapipe,
                             guaranteed_datapipes_determinism, non_deterministic, runtime_validation,
                             runtime_validation_disabled)


def _seeded(seed=0) -> core.Generator:
    return core.Generator().manual_seed(seed)


# -- DistributedSampler -----------------------------------------------------------------------------------------------

def _shares(n, replicas, **kwargs) -> list:
    return [list(DistributedSampler(range(n), num_replicas=replicas, rank=r, **kwargs)) for r in range(replicas)]


def test_distributed_sampler_pads_by_repeating_the_start():
    # PyTorch's documented split: pad to a multiple of num_replicas with the first indices, rank r takes r::replicas
    assert _shares(10, 3, shuffle=False) == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    assert _shares(2, 5, shuffle=False) == [[0], [1], [0], [1], [0]]  # padding longer than the dataset
    assert _shares(6, 3, shuffle=False) == [[0, 3], [1, 4], [2, 5]]
    assert [len(DistributedSampler(range(10), 3, r, shuffle=False)) for r in range(3)] == [4, 4, 4]


def test_distributed_sampler_drop_last_cuts_the_tail():
    shares = _shares(10, 3, shuffle=False, drop_last=True)
    assert shares == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    sampler = DistributedSampler(range(10), 3, 0, drop_last=True)
    assert (len(sampler), sampler.num_samples, sampler.total_size) == (3, 3, 9)


def test_distributed_sampler_shuffle_is_seeded_by_seed_plus_epoch():
    n, replicas = 11, 4
    shares = _shares(n, replicas, seed=5)
    order = core.randperm(n, generator=_seeded(5)).tolist()
    padded = order + order[:12 - n]
    assert shares == [padded[r::replicas] for r in range(replicas)]
    assert set(sum(shares, [])) == set(range(n))  # every sample is seen by some replica
    sampler = DistributedSampler(range(n), replicas, 1, seed=5)
    sampler.set_epoch(3)
    assert sampler.epoch == 3
    order3 = core.randperm(n, generator=_seeded(8)).tolist()
    assert list(sampler) == (order3 + order3[:1])[1::replicas]
    assert order3 != order  # a new epoch, a new order


def test_distributed_sampler_in_a_dataloader(device):
    x = core.arange(8, device=device)
    loader = DataLoader(TensorDataset(x), batch_size=2, sampler=DistributedSampler(x, 2, 1, shuffle=False))
    np.testing.assert_array_equal(np.concatenate([b[0].cpu().numpy() for b in loader]), [1, 3, 5, 7])


def test_distributed_sampler_errors():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(4))  # num_replicas and rank come from core.distributed's default group
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="Invalid rank -1"):
        DistributedSampler(range(4), num_replicas=2, rank=-1)
    with pytest.raises(TypeError, match="num_replicas must be an int"):
        DistributedSampler(range(4), num_replicas=2.0, rank=0)


# -- DataLoader shuffling with a generator ----------------------------------------------------------------------------

def test_dataloader_shuffle_with_equal_generators_gives_equal_order(device):
    x = core.arange(30, device=device)

    def order(seed):
        loader = DataLoader(TensorDataset(x), batch_size=4, shuffle=True, generator=_seeded(seed))
        return np.concatenate([b[0].cpu().numpy() for b in loader]).tolist()

    first = order(0)
    assert first == order(0)
    assert sorted(first) == list(range(30)) and first != list(range(30))
    assert order(1) != first


# -- DataPipes --------------------------------------------------------------------------------------------------------

@pytest.fixture
def registry():
    """Restores the functional-name registries after the test, so its names can be registered again."""
    saved = dict(IterDataPipe.functions), dict(MapDataPipe.functions)
    yield
    for functions, old in zip((IterDataPipe.functions, MapDataPipe.functions), saved):
        functions.clear()
        functions.update(old)


class Numbers(IterDataPipe[int]):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        yield from range(self.n)


class Squares(MapDataPipe):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return i * i

    def __len__(self):
        return self.n


def _register_map_and_batch():
    @functional_datapipe("test_map")
    class Mapper(IterDataPipe):
        def __init__(self, source, fn):
            self.source, self.fn = source, fn

        def __iter__(self):
            return map(self.fn, self.source)

    @functional_datapipe("test_batch")
    class Batcher(IterDataPipe):
        def __init__(self, source, batch_size):
            self.source, self.batch_size = source, batch_size

        def __iter__(self):
            items = list(self.source)
            for i in range(0, len(items), self.batch_size):
                yield DataChunk(items[i:i + self.batch_size])

    return Mapper, Batcher


def test_functional_datapipe_chains_by_name(registry):
    Mapper, Batcher = _register_map_and_batch()
    dp = Numbers(7).test_map(lambda v: 10 * v).test_batch(3)
    assert isinstance(dp, Batcher) and isinstance(dp.source, Mapper)
    assert [list(c) for c in dp] == [[0, 10, 20], [30, 40, 50], [60]]
    assert all(isinstance(c, DataChunk) for c in dp)
    assert "test_map" in dir(Numbers(1))
    with pytest.raises(Exception, match="test_map as it is already taken"):
        functional_datapipe("test_map")(Mapper)
    with pytest.raises(AttributeError, match="'Numbers' object has no attribute 'no_such_pipe'"):
        Numbers(1).no_such_pipe()


def test_map_datapipe_functional_and_register_function(registry):
    @functional_datapipe("test_scaled")
    class Scaled(MapDataPipe):
        def __init__(self, source, k):
            self.source, self.k = source, k

        def __getitem__(self, i):
            return self.k * self.source[i]

        def __len__(self):
            return len(self.source)

    dp = Squares(5).test_scaled(3)
    assert [dp[i] for i in range(len(dp))] == [3 * i * i for i in range(5)]
    assert not hasattr(Numbers(1), "test_scaled")  # Iter and Map registries are separate
    MapDataPipe.register_function("test_total", lambda source: sum(source[i] for i in range(len(source))))
    assert Squares(4).test_total() == 0 + 1 + 4 + 9
    with pytest.raises(TypeError, match="can only decorate IterDataPipe or MapDataPipe"):
        functional_datapipe("test_bad")(int)


def test_datapipes_work_in_a_dataloader(registry):
    Mapper, _ = _register_map_and_batch()
    batches = list(DataLoader(Numbers(6).test_map(float), batch_size=4))
    np.testing.assert_array_equal(batches[0].numpy(), [0.0, 1.0, 2.0, 3.0])
    assert list(DataLoader(Squares(3), batch_size=None)) == [0, 1, 4]
    assert isinstance(Numbers(1), IterableDataset)


def test_datachunk():
    chunk = DataChunk([1, 2, 3])
    assert chunk == [1, 2, 3] and isinstance(chunk, list)
    assert chunk.as_str() == "[1, 2, 3]" and chunk.as_str("  ") == "  [1, 2, 3]"
    assert list(chunk.raw_iterator()) == [1, 2, 3]


def test_df_iter_datapipe():
    class Frames(DFIterDataPipe):
        def __iter__(self):
            yield {"a": [1]}

    assert Frames()._is_dfpipe() and isinstance(Frames(), IterDataPipe) and list(Frames()) == [{"a": [1]}]


def test_datapipe_type_and_repr():
    assert Numbers.type.param is int and Numbers(1).type.issubtype(int)
    assert repr(IterDataPipe[int].type) == "int" and repr(Numbers(2)) == "Numbers"
    assert IterDataPipe.type.param is Any
    assert IterDataPipe[List[int]].type.issubtype(List[Union[int, str]])
    assert not IterDataPipe[List[str]].type.issubtype(List[int])
    assert IterDataPipe[bool].type.issubtype(Optional[int])
    t = IterDataPipe[Tuple[int, str]].type
    assert t.issubtype_of_instance((1, "a")) and not t.issubtype_of_instance((1, 2))
    assert IterDataPipe[Dict[str, int]].type.issubtype_of_instance({"a": 1})
    assert not IterDataPipe[Dict[str, int]].type.issubtype_of_instance({"a": "b"})


def test_argument_validation():
    @argument_validation
    def take(source: IterDataPipe[int], k: int = 1):
        return [k * v for v in source]

    assert take(Numbers(3), k=2) == [0, 2, 4]
    with pytest.raises(TypeError, match="Expected argument 'source' as a IterDataPipe"):
        take([1, 2])

    class Words(IterDataPipe[str]):
        def __iter__(self):
            yield "a"

    with pytest.raises(TypeError, match="Expected type of argument 'source' as a subtype of hint int, but found str"):
        take(Words())


def test_runtime_validation():
    class Mixed(IterDataPipe[int]):
        @runtime_validation
        def __iter__(self):
            yield from [1, 2, "three"]

    it = iter(Mixed())
    assert [next(it), next(it)] == [1, 2]
    with pytest.raises(RuntimeError, match=r"Expected an instance as subtype of int, but found three\(<class 'str'>\)"):
        next(it)
    with runtime_validation_disabled():
        assert list(Mixed()) == [1, 2, "three"]
    with pytest.raises(RuntimeError):
        list(Mixed())  # re-enabled on exit
    with pytest.raises(TypeError, match="Can not decorate function forward with 'runtime_validation'"):
        runtime_validation(_named("forward"))


def _named(name):
    def f(self):
        return iter(())
    f.__name__ = name
    return f


def test_non_deterministic_and_guaranteed_determinism():
    @non_deterministic
    class Shuffled(IterDataPipe):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            yield from range(self.n)

    assert list(Shuffled(3)) == [0, 1, 2]
    with guaranteed_datapipes_determinism():
        with pytest.raises(TypeError, match="Shuffled is non-deterministic"):
            Shuffled(3)
    assert list(Shuffled(2)) == [0, 1]  # the guarantee ends with the block

    @non_deterministic(lambda n, shuffle=False: shuffle)
    class MaybeShuffled(IterDataPipe):
        def __init__(self, n, shuffle=False):
            self.n = n

    with guaranteed_datapipes_determinism():
        assert MaybeShuffled(3).n == 3
        with pytest.raises(TypeError, match="MaybeShuffled is non-deterministic with the inputs"):
            MaybeShuffled(3, shuffle=True)
    assert MaybeShuffled(4, shuffle=True).n == 4
    with pytest.raises(TypeError, match="Only `IterDataPipe` can be decorated with `non_deterministic`"):
        non_deterministic(dict)
    with pytest.raises(TypeError, match="can not be decorated by non_deterministic"):
        non_deterministic(3)


def test_functional_datapipe_accepts_non_deterministic_classes(registry):
    @functional_datapipe("test_nd")
    @non_deterministic
    class Repeat(IterDataPipe):
        def __init__(self, source, times):
            self.source, self.times = source, times

        def __iter__(self):
            for v in self.source:
                yield from [v] * self.times

    assert list(Numbers(2).test_nd(2)) == [0, 0, 1, 1]
    with guaranteed_datapipes_determinism(), pytest.raises(TypeError, match="non-deterministic"):
        Numbers(2).test_nd(2)
