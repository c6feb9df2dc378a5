"""Key-value stores (``torch.distributed.Store``): in memory (``HashStore``), in a shared file (``FileStore``,
usable by processes on one machine or a shared file system), or under a key prefix (``PrefixStore``).

Values are bytes (a str is stored as its UTF-8). ``get`` and ``wait`` wait for missing keys until the store's
timeout and then raise ``DistStoreError``.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import threading
import time
from datetime import timedelta

from .backends import DistError, default_pg_timeout

__all__ = ["Store", "HashStore", "FileStore", "PrefixStore", "DistStoreError"]


class DistStoreError(DistError):
    """A store operation failed or timed out (``torch.distributed.DistStoreError``)."""


def _bytes(value) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


class Store:
    """The store interface (``torch.distributed.Store``); subclasses implement ``_update(fn)``, which applies
    ``fn`` to the whole ``{key: bytes}`` mapping atomically and returns its result."""

    def __init__(self, timeout: timedelta = default_pg_timeout):
        self._timeout = timeout

    @property
    def timeout(self) -> timedelta:
        """How long ``get`` and ``wait`` wait for a missing key."""
        return self._timeout

    def set_timeout(self, timeout: timedelta) -> None:
        """Change the default waiting time (``Store.set_timeout``)."""
        self._timeout = timeout

    def _update(self, fn):
        raise NotImplementedError

    def set(self, key: str, value) -> None:
        """Store ``value`` (bytes or str) under ``key`` (``Store.set``)."""
        self._update(lambda data: data.__setitem__(key, _bytes(value)))

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting for it up to the timeout (``Store.get``)."""
        self.wait([key])
        return self._update(lambda data: data[key])

    def add(self, key: str, amount: int) -> int:
        """Add ``amount`` to the integer under ``key`` (0 when missing); returns the new value (``Store.add``)."""
        def add(data):
            data[key] = str(int(data.get(key, b"0")) + int(amount)).encode()
            return int(data[key])
        return self._update(add)

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        """Set ``key`` to ``desired_value`` if it holds ``expected_value`` (or is missing and ``expected_value``
        is empty); returns the value now stored (``Store.compare_set``)."""
        def swap(data):
            if data.get(key, b"") == _bytes(expected_value) and (key in data or not _bytes(expected_value)):
                data[key] = _bytes(desired_value)
            return data.get(key, _bytes(expected_value))
        return self._update(swap)

    def check(self, keys: list) -> bool:
        """Whether every key is set, without waiting (``Store.check``)."""
        return self._update(lambda data: all(k in data for k in keys))

    def wait(self, keys: list, timeout: timedelta | None = None) -> None:
        """Wait until every key is set; DistStoreError naming the missing ones after ``timeout`` (``Store.wait``)."""
        limit = (timeout or self._timeout).total_seconds()
        deadline = time.monotonic() + limit
        while not self.check(keys):
            if time.monotonic() > deadline:
                missing = self._update(lambda data: [k for k in keys if k not in data])
                raise DistStoreError(f"Wait timeout after {limit:g} s for keys {missing}")
            time.sleep(0.001)

    def delete_key(self, key: str) -> bool:
        """Remove ``key``; whether it was there (``Store.delete_key``)."""
        return self._update(lambda data: data.pop(key, None) is not None)

    def num_keys(self) -> int:
        """How many keys are set (``Store.num_keys``)."""
        return self._update(len)


class HashStore(Store):
    """A store in this process's memory, safe across threads (``torch.distributed.HashStore``)."""

    def __init__(self):
        super().__init__()
        self._data: dict = {}
        self._lock = threading.Lock()

    def _update(self, fn):
        with self._lock:
            return fn(self._data)


class FileStore(Store):
    """A store in the file ``file_name``, shared by the processes that open it (``torch.distributed.FileStore``);
    every operation holds an exclusive ``flock`` on the file while it reads and rewrites the mapping."""

    def __init__(self, file_name: str, world_size: int = -1):
        super().__init__()
        self.path, self.world_size = os.fspath(file_name), world_size
        open(self.path, "ab").close()

    def _update(self, fn):
        with open(self.path, "r+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            raw = f.read()
            data = pickle.loads(raw) if raw else {}
            before = dict(data)
            result = fn(data)
            if data != before:
                f.seek(0)
                f.truncate()
                f.write(pickle.dumps(data))
            return result


class PrefixStore(Store):
    """``store`` with every key under ``prefix + "/"`` (``torch.distributed.PrefixStore``)."""

    def __init__(self, prefix: str, store: Store):
        super().__init__(store.timeout)
        self.underlying_store, self._prefix = store, prefix + "/"

    def _update(self, fn):
        prefix = self._prefix

        def scoped(data):
            view = {k[len(prefix):]: v for k, v in data.items() if k.startswith(prefix)}
            before = dict(view)
            result = fn(view)
            if view != before:
                for k in before:
                    data.pop(prefix + k, None)
                data.update({prefix + k: v for k, v in view.items()})
            return result

        return self.underlying_store._update(scoped)
