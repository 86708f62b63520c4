"""Atomic file writes: a crash or kill mid-write never leaves a truncated file behind.

Files get the mode a plain `open()` would give them (0666 minus the umask, or the mode of the file
they replace), not mkstemp's 0600. `check_writable_dir` / `check_writable_file` let a command refuse
an output location before it runs anything.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from rocmkit.errors import UserError


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


def atomic_write_bytes(
    path: str | os.PathLike[str], data: bytes, *, mode: int | None = None
) -> None:
    """Write `data` to a temporary file beside `path`, fsync it, then rename over `path`."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, _mode_for(target) if mode is None else mode)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str, *, mode: int | None = None) -> None:
    """Atomic UTF-8 text write (see atomic_write_bytes)."""
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Atomic JSON write, indented, with a trailing newline."""
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")
