"""Key-value stores (``torch.distributed.Store``): in memory (``HashStore``), in a shared file (``FileStore``,
usable by processes on one machine or a shared file system), served over TCP (``TCPStore``), or under a key
prefix (``PrefixStore``).

Values are bytes (a str is stored as its UTF-8). ``get`` and ``wait`` wait for missing keys until the store's
timeout and then raise ``DistStoreError``.
"""

from __future__ import annotations

import fcntl
import json
import os
import pickle
import socket
import struct
import threading
import time
from datetime import timedelta

from .backends import DistError, default_pg_timeout

__all__ = ["Store", "HashStore", "FileStore", "PrefixStore", "TCPStore", "DistStoreError"]


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
    """``store`` with every key under ``prefix + "/"`` (``torch.distributed.PrefixStore``); ``num_keys`` counts
    the underlying store's keys, as PyTorch's does."""

    def __init__(self, prefix: str, store: Store):
        super().__init__(store.timeout)
        self.underlying_store, self._prefix = store, prefix + "/"

    def set_timeout(self, timeout: timedelta) -> None:
        super().set_timeout(timeout)
        self.underlying_store.set_timeout(timeout)

    def set(self, key: str, value) -> None:
        self.underlying_store.set(self._prefix + key, value)

    def get(self, key: str) -> bytes:
        return self.underlying_store.get(self._prefix + key)

    def add(self, key: str, amount: int) -> int:
        return self.underlying_store.add(self._prefix + key, amount)

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        return self.underlying_store.compare_set(self._prefix + key, expected_value, desired_value)

    def check(self, keys: list) -> bool:
        return self.underlying_store.check([self._prefix + k for k in keys])

    def wait(self, keys: list, timeout: timedelta | None = None) -> None:
        self.underlying_store.wait([self._prefix + k for k in keys], timeout)

    def delete_key(self, key: str) -> bool:
        return self.underlying_store.delete_key(self._prefix + key)

    def num_keys(self) -> int:
        return self.underlying_store.num_keys()


def _encode(value) -> object:
    """JSON-safe form of a request or reply (bytes as hex): the wire format carries no code, unlike pickle."""
    if isinstance(value, bytes):
        return {"b": value.hex()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _decode(value) -> object:
    if isinstance(value, dict):
        return bytes.fromhex(value["b"])
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _send(sock, message) -> None:
    payload = json.dumps(_encode(message)).encode()
    sock.sendall(struct.pack("!I", len(payload)) + payload)


def _receive(sock):
    def exactly(n):
        chunks = b""
        while len(chunks) < n:
            chunk = sock.recv(n - len(chunks))
            if not chunk:
                raise ConnectionError("TCPStore: the connection was closed")
            chunks += chunk
        return chunks

    return _decode(json.loads(exactly(struct.unpack("!I", exactly(4))[0])))


class TCPStore(Store):
    """A store served over TCP by the process with ``is_master=True`` to every client that connects
    (``torch.distributed.TCPStore``): requests are length-prefixed JSON, one thread per connection, the
    data in a :class:`HashStore`. ``port=0`` on the master picks a free port (see ``port``)."""

    _COMMANDS = ("set", "get", "add", "compare_set", "check", "wait_seconds", "delete_key", "num_keys")

    def __init__(self, host_name: str, port: int, world_size=None, is_master: bool = False,
                 timeout: timedelta = timedelta(seconds=300), wait_for_workers: bool = True, multi_tenant=False,
                 master_listen_fd=None, use_libuv=True):
        super().__init__(timeout)
        self.host, self.world_size = host_name, world_size
        if is_master:
            self._data = HashStore()
            self._server = socket.create_server((host_name, port))
            threading.Thread(target=self._serve, daemon=True).start()
            port = self._server.getsockname()[1]
        self.port = port
        deadline = time.monotonic() + timeout.total_seconds()
        while True:
            try:
                self._sock = socket.create_connection((host_name, port), timeout=timeout.total_seconds())
                break
            except OSError as error:
                if time.monotonic() > deadline:
                    raise DistStoreError(f"TCPStore: could not connect to {host_name}:{port}: {error}") from error
                time.sleep(0.05)
        self._lock = threading.Lock()

    def _serve(self) -> None:
        while True:
            connection, _ = self._server.accept()
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection) -> None:
        with connection:
            while True:
                try:
                    command, *args = _receive(connection)
                except (ConnectionError, OSError):
                    return
                try:
                    if command == "wait_seconds":
                        self._data.wait(args[0], timedelta(seconds=args[1]))
                        reply = ["ok", None]
                    elif command in self._COMMANDS:
                        reply = ["ok", getattr(self._data, command)(*args)]
                    else:
                        reply = ["error", f"unknown command {command!r}"]
                except DistStoreError as error:
                    reply = ["error", str(error)]
                _send(connection, reply)

    def _call(self, command: str, *args):
        with self._lock:
            _send(self._sock, [command, *args])
            status, value = _receive(self._sock)
        if status != "ok":
            raise DistStoreError(value)
        return value

    def set(self, key: str, value) -> None:
        self._call("set", key, _bytes(value))

    def get(self, key: str) -> bytes:
        self.wait([key])
        return self._call("get", key)

    def add(self, key: str, amount: int) -> int:
        return self._call("add", key, int(amount))

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        return self._call("compare_set", key, _bytes(expected_value), _bytes(desired_value))

    def check(self, keys: list) -> bool:
        return self._call("check", list(keys))

    def wait(self, keys: list, timeout: timedelta | None = None) -> None:
        self._call("wait_seconds", list(keys), (timeout or self._timeout).total_seconds())

    def delete_key(self, key: str) -> bool:
        return self._call("delete_key", key)

    def num_keys(self) -> int:
        return self._call("num_keys")
