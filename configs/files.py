"""Atomic file writes used by every package: an error or crash mid-write never damages the old file.

The new content goes to a temporary file in the destination's folder, is flushed to disk, and is
then renamed over the destination with `os.replace` (atomic on POSIX and Windows). It lives at the
bottom of the data flow (configs -> rearrange -> trainer -> skills -> eval) so that the simulator's
episode files and the trainer's checkpoints share it without a lower room importing a higher one, and
it imports only the standard library, so the HalfCheetah bench's SB3 venv can use it too.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = ".tmp") -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces `path`, on error it is removed.

    `suffix` lets writers that pick a format from the file name (images) see the right extension.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual file mode
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write `data` to `path` atomically; returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write `text` (UTF-8) to `path` atomically; returns the path."""
    return write_bytes_atomic(path, text.encode("utf-8"))
