"""Atomic writes: a file or a folder appears complete or not at all."""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes(path: Path | str, data: bytes, mode: int | None = None) -> Path:
    """Write bytes to path through a temp file in the same folder and an atomic rename (mode: default 0666 less the umask)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600 files; published outputs get the usual permissions so others can read them.
        os.fchmod(fd, mode if mode is not None else 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def write_text(path: Path | str, text: str, mode: int | None = None) -> Path:
    """Write UTF-8 text atomically."""
    return write_bytes(path, text.encode("utf-8"), mode)


def _partial_dir(path: Path) -> Path:
    """A new temp folder beside `path` (same filesystem, so renames are atomic), with umask permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent))
    tmp.chmod(0o777 & ~_umask())
    return tmp


@contextlib.contextmanager
def atomic_dir(path: Path | str) -> Iterator[Path]:
    """Yield a temp folder beside `path`; on success it replaces `path`, on error it is removed."""
    path = Path(path)
    tmp = _partial_dir(path)
    try:
        yield tmp
        if path.exists():
            old = path.with_name(f".{path.name}.old")
            if old.exists():
                shutil.rmtree(old)
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def staged_files(path: Path | str) -> Iterator[Path]:
    """Yield a temp folder beside `path`; on success its files move into `path` (kept: other files there), on error it is removed.

    A missing `path` appears in one rename; otherwise each file is renamed into place, after every file was written.
    """
    path = Path(path)
    tmp = _partial_dir(path)
    try:
        yield tmp
        if not path.exists():
            os.replace(tmp, path)
            return
        for f in sorted(tmp.iterdir()):
            os.replace(f, path / f.name)
        tmp.rmdir()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
