"""Futures and asynchronous calls: ``core.Future``, ``core.fork``, ``core.wait`` (``torch.futures``, ``torch.jit``).

``fork`` runs a function on a pool of ``core.get_num_interop_threads()`` threads; the kernels release the GIL, so
forked work overlaps.
"""

from __future__ import annotations

import concurrent.futures
import threading

__all__ = ["Future", "fork", "wait", "collect_all", "wait_all"]

_pool: list = []
_pool_lock = threading.Lock()


class Future:
    """The result of asynchronous work, set once; callbacks run when it is (``torch.futures.Future``)."""

    def __init__(self, *, devices=None):
        self._future = concurrent.futures.Future()

    def done(self) -> bool:
        """Whether the result (or an exception) is set."""
        return self._future.done()

    def wait(self):
        """Block until set; the result, or the exception raised."""
        return self._future.result()

    def value(self):
        """The result of a done future (raises its exception; RuntimeError if not done yet)."""
        if not self.done():
            raise RuntimeError("value() called on a Future that is not completed yet; call wait() first")
        return self._future.result()

    def set_result(self, result) -> None:
        """Set the result; RuntimeError when already set."""
        try:
            self._future.set_result(result)
        except concurrent.futures.InvalidStateError:
            raise RuntimeError("Future can only be marked completed once.") from None

    def set_exception(self, result: BaseException) -> None:
        """Complete with an exception that ``wait`` and ``value`` raise."""
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception(): expected an exception, got {type(result).__name__}")
        try:
            self._future.set_exception(result)
        except concurrent.futures.InvalidStateError:
            raise RuntimeError("Future can only be marked completed once.") from None

    def add_done_callback(self, callback) -> None:
        """Call ``callback(self)`` when set (at once if set already)."""
        self._future.add_done_callback(lambda _: callback(self))

    def then(self, callback) -> "Future":
        """A new future holding ``callback(self)`` once this one is set (or the exception the callback raised)."""
        chained = Future()

        def run(fut):
            try:
                chained.set_result(callback(fut))
            except Exception as error:  # the chained future carries it, as in PyTorch
                chained.set_exception(error)

        self.add_done_callback(run)
        return chained

    def __repr__(self) -> str:
        return f"core.Future(done={self.done()})"


def pool_started() -> bool:
    """Whether ``fork`` has started its thread pool (after that the interop thread count is fixed)."""
    return bool(_pool)


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    with _pool_lock:
        if not _pool:
            from .global_state import get_num_interop_threads

            _pool.append(concurrent.futures.ThreadPoolExecutor(get_num_interop_threads(), "core-interop"))
    return _pool[0]


def fork(func, *args, **kwargs) -> Future:
    """Run ``func(*args, **kwargs)`` asynchronously; a Future of its result (``torch.jit.fork``)."""
    if not callable(func):
        raise TypeError(f"fork(): expected a callable, got {type(func).__name__}")
    result = Future()

    def run():
        try:
            result.set_result(func(*args, **kwargs))
        except BaseException as error:  # the future carries it to wait()
            result.set_exception(error)

    _executor().submit(run)
    return result


def wait(future: Future):
    """The result of a forked call, once it is done (``torch.jit.wait``)."""
    if not isinstance(future, Future):
        raise TypeError(f"wait(): expected a Future, got {type(future).__name__}")
    return future.wait()


def collect_all(futures: list) -> Future:
    """A future set, with the list of ``futures``, once all of them are (``torch.futures.collect_all``)."""
    combined, futures = Future(), list(futures)
    remaining = [len(futures)]
    lock = threading.Lock()

    def one_done(_):
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            combined.set_result(futures)

    if not futures:
        combined.set_result([])
    for f in futures:
        f.add_done_callback(one_done)
    return combined


def wait_all(futures: list) -> list:
    """The results of all ``futures``, raising the first exception among them (``torch.futures.wait_all``)."""
    return [f.wait() for f in collect_all(futures).wait()]
