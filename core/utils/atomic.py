"""``atomic_write``: the one way core writes a file, so a crash mid-write never leaves a truncated target.

The bytes go to a temporary file in the target's directory (a rename is atomic only within one file system),
which is flushed and fsynced before ``os.replace`` makes it the target; the directory is then fsynced (where the
platform allows) so the rename itself survives a power cut. Readers see the old file or the new one, never half.
"""

from __future__ import annotations

import contextlib
import os
import secrets

__all__ = ["atomic_write", "is_path"]


def is_path(f) -> bool:
    """True for targets :func:`atomic_write` renames into place (str, bytes and ``os.PathLike`` paths)."""
    return isinstance(f, (str, bytes, os.PathLike))


@contextlib.contextmanager
def atomic_write(path, mode: str = "wb", **open_kwargs):
    """Yield a file object whose contents replace ``path`` only when the block ends without an exception.

    ``path`` is a str or ``os.PathLike``; ``mode`` is a write mode ("wb" or "w"), ``open_kwargs`` go to
    ``open`` (encoding, newline). On an exception the temporary file is removed and ``path`` is untouched.
    An existing target's permission bits are kept; a new file gets ``open``'s usual ``0o666 & ~umask``.
    """
    if mode not in ("w", "wb", "wt"):
        raise ValueError(f"atomic_write(): mode must be 'w' or 'wb', not {mode!r}")
    target = os.path.abspath(os.fsdecode(os.fspath(path)))
    directory, name = os.path.split(target)
    descriptor, temporary = _create_temporary(directory, name, _permissions(target))
    try:
        with os.fdopen(descriptor, mode, **open_kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())  # the bytes are on disk before the rename makes them the target
        os.replace(temporary, target)
    except BaseException:  # KeyboardInterrupt too: never leave the temporary file behind
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_directory(directory)


def _permissions(target: str) -> int:
    """The mode bits of an existing target (kept across the replace); 0o666 (less the umask) for a new one."""
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        return 0o666


def _create_temporary(directory: str, name: str, mode: int) -> tuple[int, str]:
    """A new, exclusively created file beside the target (unlike mkstemp's 0o600, ``mode`` meets the umask)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        temporary = os.path.join(directory, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(temporary, flags, mode), temporary
        except FileExistsError:
            continue


def _fsync_directory(directory: str) -> None:
    """Make the rename durable; Windows cannot open directories, and some file systems refuse fsync on them."""
    if os.name != "posix":
        return
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
