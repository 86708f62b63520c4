"""Issue 26, session fifteen: each change, with a case where the finding must appear and one where
it must not (or where it must stay put), on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

from port_helpers import scan_files as _scan

# -- Triton's CUDA libdevice: imported but never called ---------------------------------------------

# fp8-coat's header, copied into every kernel module: only some modules call libdevice.
_HEADER = """import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice
"""
_CALLS = """

@triton.jit
def silu(x_ptr, out_ptr):
    x = tl.load(x_ptr)
    tl.store(out_ptr, x / (1 + libdevice.exp(-x)))
"""
_NO_CALL = """

@triton.jit
def add(x_ptr, y_ptr, out_ptr):
    tl.store(out_ptr, tl.load(x_ptr) + tl.load(y_ptr))  # libdevice is not needed here
"""


def _libdevice(report: object) -> set[tuple[str, int, str]]:
    return {
        (f.path, f.line, f.severity)
        for f in report.findings  # type: ignore[attr-defined]
        if f.rule_id == "triton-cuda-libdevice"
    }


def test_a_cuda_libdevice_import_the_module_never_uses_is_info_and_a_used_one_an_error(
    tmp_path: Path,
) -> None:
    files = {
        "silu.py": _HEADER + _CALLS,
        "add.py": _HEADER + _NO_CALL,
        # an alias, and names imported from the wrapper itself, count where they are used
        "alias.py": _HEADER.replace("import libdevice", "import libdevice as ld")
        + _CALLS.replace("libdevice.exp", "ld.exp"),
        "names.py": _HEADER.replace("extra.cuda import libdevice", "extra.cuda.libdevice import exp")
        + _CALLS.replace("libdevice.exp", "exp"),
        "unused_names.py": _HEADER.replace(
            "extra.cuda import libdevice", "extra.cuda.libdevice import exp, tanh as th"
        )
        + _NO_CALL,
    }
    found = _libdevice(_scan(tmp_path, files))
    assert found == {
        ("silu.py", 4, "error"),
        ("alias.py", 4, "error"),
        ("names.py", 4, "error"),
        ("add.py", 4, "info"),  # the word in a comment is no use
        ("unused_names.py", 4, "info"),
    }
