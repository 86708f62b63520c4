"""Versions of the ROCm userspace and GPU drivers, read from files (root path injectable)."""

from __future__ import annotations

import re
from pathlib import Path

_VERSION_FILES = ("opt/rocm/.info/version", "opt/rocm/.info/version-dev")


def read_rocm_version(root: str | Path = "/") -> str | None:
    """The ROCm userspace version (e.g. "6.2.4"), or None when ROCm is not installed."""
    for relative in _VERSION_FILES:
        try:
            text = (Path(root) / relative).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        match = re.search(r"\d+\.\d+(\.\d+)?", text)
        if match:
            return match.group(0)
    return None
