"""``DataLoader``: batches from a dataset, loaded in the main process or in worker processes that prefetch."""

from __future__ import annotations

import atexit
import math
import multiprocessing
import multiprocessing.context
import os
import pickle
import queue
import signal
import sys
import time
import warnings

from ... import dtypes as dt
from ...ops.creation import empty
from . import _worker
from ._fetch import create_fetcher
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler, _InfiniteConstantSampler

__all__ = ["DataLoader"]

# How often a main process waiting for a batch checks that every worker is still alive.
_LIVENESS_POLL_INTERVAL = 0.1
_exiting = False  # set at interpreter exit, when multiprocessing itself reaps the (daemonic) workers


def _set_exiting():
    global _exiting
    _exiting = True


atexit.register(_set_exiting)


class _DatasetKind:
    Map = 0
    Iterable = 1


def _default_context():
    """'fork' on Linux (no need to pickle the dataset, fast start); the platform's default elsewhere."""
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


class DataLoader:
    """Batches from a dataset, optionally shuffled and loaded by worker processes (``torch.utils.data.DataLoader``).

    Batches come out in sampler order whatever the number of workers; with the same ``generator``
    seed, ``num_workers=0`` and ``num_workers>0`` give the same batches (shuffling happens in
    the main process). Worker ``i`` seeds Python's ``random``, NumPy and core with
    ``base_seed + i``, where ``base_seed`` is drawn from ``generator`` (or core's default
    generator) once per iterator. ``pin_memory`` is accepted and does nothing: core has no
    pinned host memory.
    """

    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context):
        if context is not None:
            if self.num_workers == 0:
                raise ValueError(f"multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{methods!r}, but got multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError(f"multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={context}")
        self.__multiprocessing_context = context

    def __setattr__(self, attr, value):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                           "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        if not (self.persistent_workers and self.num_workers > 0):
            return self._get_iterator()
        if self._iterator is None or self._iterator._shutdown:
            self._iterator = self._get_iterator()
        else:
            self._iterator._reset(self)
        return self._iterator

    def __len__(self) -> int:
        if self._dataset_kind == _DatasetKind.Iterable:
            # only an estimate: PyTorch trusts the dataset to shard itself correctly across workers
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    """One pass over a DataLoader; the persistent-workers iterator is reset for the next pass instead."""

    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # drawn in every mode so that a seeded generator gives the same shuffle with or without workers
        self._base_seed = int(empty((), dtype=dt.int64).random_(generator=loader.generator).item())
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if (self._dataset_kind == _DatasetKind.Iterable and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            msg = (f"Length of IterableDataset {self._dataset} was reported to be {self._IterableDataset_len_called} "
                   f"(when accessing len(dataloader)), but {self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                        "IterableDataset replica at each worker.")
            warnings.warn(msg, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Loads each batch in the main process when it is asked for."""

    def __init__(self, loader):
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._shutdown = False
        self._fetcher = create_fetcher(self._dataset_kind == _DatasetKind.Iterable, self._dataset,
                                       self._auto_collation, self._collate_fn, self._drop_last)

    def _next_data(self):
        return self._fetcher.fetch(next(self._sampler_iter))


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Hands sampler indices round-robin to worker processes, keeps ``prefetch_factor * num_workers`` tasks in flight
    and returns the results in task order.

    Task ``i`` is recorded in ``_task_info[i]`` as ``(worker,)`` while in flight and ``(worker, data)`` once
    it arrived early; ``_rcvd_idx`` is the next task to return, ``_send_idx`` the next to hand out.
    """

    def __init__(self, loader):
        self._shutdown = True  # until there is something to shut down: __del__ may run after a failed __init__
        super().__init__(loader)
        if loader.prefetch_factor <= 0:
            raise AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        self._max_tasks = loader.prefetch_factor * self._num_workers
        self._in_order = loader.in_order
        self._owner_pid = os.getpid()
        context = loader.multiprocessing_context or _default_context()
        self._data_queue = context.Queue()
        self._workers_done_event = context.Event()
        self._index_queues, self._workers = [], []
        self._shutdown = False
        iterable = self._dataset_kind == _DatasetKind.Iterable
        for worker_id in range(self._num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()  # a dead worker must not block our exit on its unread requests
            worker = context.Process(
                target=_worker._worker_loop, daemon=True,
                args=(iterable, self._dataset, index_queue, self._data_queue, self._workers_done_event,
                      self._auto_collation, self._collate_fn, self._drop_last, self._base_seed,
                      loader.worker_init_fn, worker_id, self._num_workers))
            worker.start()
            self._index_queues.append(index_queue)
            self._workers.append(worker)
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._next_worker = 0
        if not first_iter:
            # persistent workers: let each finish (and drop) the last epoch's tasks, then start over
            for index_queue in self._index_queues:
                index_queue.put(_worker._ResumeIteration())
            remaining = self._num_workers
            while remaining > 0:
                task, _ = self._get_data()
                if isinstance(task, _worker._ResumeIteration):
                    remaining -= 1
        for _ in range(self._max_tasks):
            self._try_put_index()

    def _try_put_index(self):
        """Hand the next sampler index to the next active worker, if the budget and the sampler allow."""
        if self._tasks_outstanding >= self._max_tasks:
            return
        for _ in range(self._num_workers):
            worker_id = self._next_worker
            self._next_worker = (self._next_worker + 1) % self._num_workers
            if self._workers_status[worker_id]:
                break
        else:
            return  # every worker's iterable dataset is exhausted
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _get_data(self):
        """The next ``(task, result)`` from any worker, failing if a worker died or ``timeout`` passed."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _LIVENESS_POLL_INTERVAL
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - time.monotonic()))
            try:
                task, payload = self._data_queue.get(timeout=wait)
            except queue.Empty:
                self._check_workers_alive()
                if deadline is not None and time.monotonic() >= deadline:
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None
                continue
            return task, pickle.loads(payload) if isinstance(payload, bytes) else payload

    def _check_workers_alive(self):
        dead = [(i, w) for i, w in enumerate(self._workers) if self._workers_status[i] and not w.is_alive()]
        if not dead:
            return
        details = "; ".join(f"worker {i} {_describe_exit(w.exitcode)}" for i, w in dead)
        pids = ", ".join(str(w.pid) for _, w in dead)
        self._shutdown_workers()
        raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly ({details})")

    def _next_data(self):
        while True:
            if self._shutdown:
                raise StopIteration  # the workers are gone (a worker died, or the pass already ended)
            # skip tasks of workers that stopped without answering them (an exhausted iterable dataset)
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process_data(info[1])
            task, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _worker._IterableDatasetStopIteration):
                self._mark_worker_inactive(data.worker_id, task)
                self._try_put_index()
                continue
            if task != self._rcvd_idx and self._in_order:
                self._task_info[task] += (data,)  # early: keep it until its turn
                continue
            del self._task_info[task]
            if task == self._rcvd_idx:
                self._rcvd_idx += 1
            return self._process_data(data)

    def _process_data(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_inactive(self, worker_id, stop_task):
        """A worker whose iterable dataset ran out (answering ``stop_task``): it gets no more tasks, and the ones it
        skips after that are not awaited."""
        self._workers_status[worker_id] = False
        self._tasks_outstanding -= sum(1 for task, info in self._task_info.items()
                                       if info == (worker_id,) and task != stop_task)
        if not self._persistent_workers:
            self._index_queues[worker_id].put(None)

    def _shutdown_workers(self):
        """Stop and reap every worker: ask politely, wait a little, then terminate. Safe to call twice."""
        if self._shutdown or _exiting or os.getpid() != self._owner_pid:
            return  # a forked child must not stop its parent's workers
        self._shutdown = True
        try:
            self._workers_done_event.set()
            for index_queue in self._index_queues:
                index_queue.put(None)
            deadline = time.monotonic() + _worker.STATUS_CHECK_INTERVAL
            for w in self._workers:
                w.join(timeout=max(0.0, deadline - time.monotonic()))
            for index_queue in self._index_queues:
                index_queue.close()
            self._data_queue.cancel_join_thread()
            self._data_queue.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=_worker.STATUS_CHECK_INTERVAL)

    def __del__(self):
        self._shutdown_workers()


def _describe_exit(exitcode) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            pass
    return f"exit code {exitcode}"
