"""What runs inside a DataLoader worker process, and the messages it exchanges with the main process."""

from __future__ import annotations

import dataclasses
import os
import pickle
import queue
import random
import sys
import traceback

import numpy as np

from ...ops.random import manual_seed
from ._fetch import create_fetcher

__all__ = ["WorkerInfo", "get_worker_info"]

# How long a blocked worker waits before checking that its parent is still alive.
STATUS_CHECK_INTERVAL = 5.0


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` gives in a worker: its ``id``, ``num_workers``, ``seed`` and ``dataset`` copy."""

    id: int
    num_workers: int
    seed: int
    dataset: object


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """This worker's ``WorkerInfo``, or ``None`` in the main process (``torch.utils.data.get_worker_info``)."""
    return _worker_info


@dataclasses.dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """Sent by a worker whose copy of an iterable dataset is exhausted."""

    worker_id: int


@dataclasses.dataclass(frozen=True)
class _ResumeIteration:
    """Sent to persistent workers to start a new epoch; echoed back once everything before it is done."""


class _KeyErrorMessage(str):
    """A message that KeyError shows as is: KeyError prints the repr of its argument."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception and its formatted traceback, to be raised again in another process (``torch._utils``)."""

    def __init__(self, exc_info=None, where: str = "in background"):
        exc_type, exc_value, exc_tb = exc_info if exc_info is not None else sys.exc_info()
        self.exc_type = exc_type
        self.type_name = exc_type.__name__
        # the text, not the traceback object: it cannot be pickled and would keep frames alive
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc_value, exc_tb))
        self.where = where

    def reraise(self):
        """Raise the same exception type with "Caught X in <where>.\\nOriginal Traceback ..." as its message."""
        msg = f"Caught {self.type_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None  # an exception type that needs other arguments
        raise exception


def _dumps(data, worker_id: int) -> bytes:
    """Pickle a result here, so a batch that cannot be pickled becomes an error message instead of a lost result."""
    try:
        return pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        if isinstance(data, ExceptionWrapper):
            data.exc_type = RuntimeError  # e.g. an exception class defined inside a function; its text survives
        else:
            data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id} while pickling a batch")
        return pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)


def _numpy_seed(base_seed: int, worker_id: int) -> list:
    """PyTorch's NumPy seed for a worker: four 32-bit words hashed from (worker_id, base_seed), SeedSequence style."""
    mask = 0xFFFFFFFF
    hash_const = [0x43B0D7E5]

    def hash32(value):
        value = (value ^ hash_const[0]) & mask
        hash_const[0] = (hash_const[0] * 0x931E8875) & mask
        value = (value * hash_const[0]) & mask
        return (value ^ (value >> 16)) & mask

    def mix(x, y):
        result = ((0xCA01F9DD * x) - (0x4973F715 * y)) & mask
        return (result ^ (result >> 16)) & mask

    pool = [hash32(v) for v in (worker_id, base_seed & mask, base_seed >> 32, 0)]
    for src in range(4):
        for dst in range(4):
            if src != dst:
                pool[dst] = mix(pool[dst], hash32(pool[src]))
    state, out_const = [], 0x8B51F9DD
    for value in pool:
        value = (value ^ out_const) & mask
        out_const = (out_const * 0x58F38DED) & mask
        value = (value * out_const) & mask
        state.append((value ^ (value >> 16)) & mask)
    return state


def _worker_loop(iterable: bool, dataset, index_queue, data_queue, done_event, auto_collation: bool, collate_fn,
                 drop_last: bool, base_seed: int, init_fn, worker_id: int, num_workers: int) -> None:
    """Serve ``(task index, sampler index)`` requests from ``index_queue`` until ``None`` or the parent dies.

    Each reply on ``data_queue`` is ``(task index, pickled result)`` where the result is a batch,
    an ``ExceptionWrapper`` or an ``_IterableDatasetStopIteration``.
    """
    global _worker_info
    try:
        seed = base_seed + worker_id
        random.seed(seed)
        manual_seed(seed)
        np.random.seed(_numpy_seed(base_seed, worker_id))
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        where = f"in DataLoader worker process {worker_id}"

        def new_fetcher(init: bool):
            """A fetcher, or the error making it, which is reported as the result of the next task."""
            try:
                if init and init_fn is not None:
                    init_fn(worker_id)
                return create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last), None
            except Exception:
                return None, ExceptionWrapper(where=where)

        fetcher, init_error = new_fetcher(init=True)
        iteration_end = False
        parent = os.getppid()
        while os.getppid() == parent:  # reparented: the main process is gone, stop
            try:
                request = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(request, _ResumeIteration):
                data_queue.put((request, None))
                iteration_end = False
                fetcher, error = new_fetcher(init=False)
                init_error = init_error or error
                continue
            if request is None:
                break
            if done_event.is_set() or iteration_end:
                continue  # shutting down, or nothing left to give: skip until the final None
            task, index = request
            if init_error is not None:
                result, init_error = init_error, None
            else:
                try:
                    result = fetcher.fetch(index)
                except StopIteration:
                    if not iterable:
                        result = ExceptionWrapper(where=where)
                    else:
                        result = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                except Exception:
                    result = ExceptionWrapper(where=where)
            data_queue.put((task, _dumps(result, worker_id)))
            del result, request, index  # do not hold a batch while waiting for the next request
    except KeyboardInterrupt:
        pass  # the main process sees Ctrl-C too and shuts the workers down
    if done_event.is_set():
        # nobody reads the results any more: do not block exit on flushing them into the pipe
        data_queue.cancel_join_thread()
        data_queue.close()
