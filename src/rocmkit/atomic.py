"""Atomic file writes: a crash or kill mid-write never leaves a truncated file behind.

The one writer of the package: `atomic_open` streams into a fresh temporary file beside the target,
flushes it to disk (unless the caller opts out with `fsync=False`) and renames it over the target in
one step; `atomic_path` does the same for a library that writes only to a file name, and
`atomic_write_bytes/text/json` are the one-call forms.

Files get the mode a plain `open()` would give them (0666 minus the umask, or the mode of the file
they replace), not mkstemp's 0600. `check_writable_dir` / `check_writable_file` let a command refuse
an output location before it runs anything.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from rocmkit.errors import UserError

__all__ = [
    "atomic_open",
    "atomic_path",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "check_writable_dir",
    "check_writable_file",
    "current_umask",
]

# Temporary names are `.<pid>-<n>.<target name>`: unique per process without mkstemp's random
# names and retries (a measurable share of a whole-tree hipify run), hidden, and ending like the
# target, so a writer that looks at the suffix (torch's trace export and ".gz") behaves the same.
_counter = itertools.count()


def current_umask() -> int:
    """The process umask, read without changing it where Linux allows (os.umask is racy)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def _mode_for(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~current_umask()


def check_writable_dir(path: str | os.PathLike[str], *, what: str = "output directory") -> Path:
    """Create `path` if needed and prove a file can be written in it; else a one-line UserError."""
    directory = Path(path)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # e.g. under /proc or /sys, where "No such file" would mislead
        reason = exc.strerror or type(exc).__name__
        raise UserError(
            f"cannot write the {what} {directory}: it cannot be created there ({reason}); "
            "choose a directory you can write"
        ) from None
    try:
        fd, probe = tempfile.mkstemp(prefix=".rocmkit-probe.", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UserError(f"cannot write the {what} {directory}: {reason}; choose another") from None
    return directory


def check_writable_file(path: str | os.PathLike[str], *, what: str = "output file") -> Path:
    """Refuse a file path whose directory cannot take it, or that names a directory."""
    target = Path(path)
    if target.is_dir():
        raise UserError(f"the {what} {target} is a directory; give a file name")
    check_writable_dir(target.parent, what=f"directory of the {what}")
    return target


def _create_temp(target: Path) -> tuple[int, Path]:
    """Create an empty temporary file beside `target` that no other writer can have opened."""
    target.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = target.with_name(f".{os.getpid()}-{next(_counter)}.{target.name}")
        try:
            return os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600), tmp
        except FileExistsError:  # left by a killed process that had the same pid
            continue


def _publish(fd: int, tmp: Path, target: Path, *, fsync: bool, mode: int | None) -> None:
    """Give the finished temporary file its mode, flush it to disk if asked, rename it over."""
    os.fchmod(fd, _mode_for(target) if mode is None else mode)
    if fsync:
        os.fsync(fd)
    os.replace(tmp, target)


@contextlib.contextmanager
def atomic_open(
    path: str | os.PathLike[str], *, fsync: bool = True, mode: int | None = None
) -> Iterator[IO[bytes]]:
    """A binary handle (read/write, seekable) whose contents replace `path` when the block ends
    without an exception; after an exception or a kill `path` is as it was.

    `fsync=False` skips the flush to disk, for frequent or regenerable writes: readers still never
    see a torn file, but after a power loss the new file may be empty or missing. `mode` defaults
    to the replaced file's mode, else 0666 minus the umask.
    """
    target = Path(path)
    fd, tmp = _create_temp(target)
    try:
        with open(fd, "r+b") as handle:
            yield handle
            handle.flush()
            _publish(fd, tmp, target, fsync=fsync, mode=mode)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_path(
    path: str | os.PathLike[str], *, fsync: bool = True, mode: int | None = None
) -> Iterator[Path]:
    """Yield the name of an empty temporary file beside `path`, for a library that writes only to
    a file name (torch's trace export); when the block succeeds it replaces `path` in one rename.
    `fsync` and `mode` as in `atomic_open`."""
    target = Path(path)
    fd, tmp = _create_temp(target)
    os.close(fd)
    try:
        yield tmp
        # Reopened by name: the library may have replaced the file rather than written into it.
        fd = os.open(tmp, os.O_RDONLY)
        try:
            _publish(fd, tmp, target, fsync=fsync, mode=mode)
        finally:
            os.close(fd)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(
    path: str | os.PathLike[str], data: bytes, *, fsync: bool = True, mode: int | None = None
) -> None:
    """Replace `path` with `data` atomically (see `atomic_open` for `fsync` and `mode`)."""
    with atomic_open(path, fsync=fsync, mode=mode) as handle:
        handle.write(data)


def atomic_write_text(
    path: str | os.PathLike[str], text: str, *, fsync: bool = True, mode: int | None = None
) -> None:
    """Atomic UTF-8 text write (see atomic_write_bytes)."""
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync, mode=mode)


def atomic_write_json(path: str | os.PathLike[str], obj: Any, *, fsync: bool = True) -> None:
    """Atomic JSON write, indented, with a trailing newline.

    `obj` must already be plain JSON (pass it through `rocmkit.results.jsonable` first): a value
    JSON cannot hold is an error here, not silently turned into a string.
    """
    text = json.dumps(obj, indent=2, allow_nan=False) + "\n"
    atomic_write_text(path, text, fsync=fsync)
