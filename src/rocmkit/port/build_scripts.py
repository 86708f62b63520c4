"""Rust build scripts (`build.rs`) that compile the project's CUDA kernels with nvcc.

Cargo runs a package's `build.rs` before compiling it (the Cargo book, "Build Scripts"); a Python
package with a Rust core (maturin, setuptools-rust) runs it on `pip install`. The `cc` crate's
definition says what compiles CUDA there: `Build::cuda(true)` makes it invoke nvcc (its docs:
"Set CUDA C++ support ... the nvcc compiler"), and a script may look nvcc up itself
(`which("nvcc")`, `Command::new("nvcc")`). A ROCm machine has no nvcc, so such a script with no
HIP path (hipcc, ROCm, --offload-arch named nowhere) fails the build: the same verdict as a Python
build with no ROCm side (`cuda-extension`, error). nvcc's architecture flags in it (`-gencode`,
`arch=compute_XX`, `-arch=sm_XX`, listed in nvcc_only_flags.toml as flags clang rejects) are
`nvcc-flags`, at that rule's own severity.
"""

from __future__ import annotations

import re

from rocmkit.port.findings import Hit, hit
from rocmkit.port.rules import RuleSet

FILE_NAMES = frozenset({"build.rs"})
# cc::Build::cuda(true); an nvcc lookup or launch by name.
_NVCC_BUILD = re.compile(
    r"\.cuda\s*\(\s*true\s*\)"
    r"|\bwhich(?:::which)?\s*\(\s*\"nvcc\"|Command::new\s*\(\s*\"nvcc\"|\.compiler\s*\(\s*\"nvcc\""
)
# An nvcc architecture flag inside a string literal: "-gencode", "arch=compute_{}", "-arch=sm_80".
_ARCH_FLAG = re.compile(r"\"[^\"\n]*(?:-gencode|--generate-code|arch=compute_|-arch=sm_)[^\"\n]*\"")
_HIP = re.compile(r"hipcc|--offload-arch|\bhip\b|rocm|amdgpu|\bHIP_", re.IGNORECASE)


def _code(text: str) -> str:
    """The script with `//` line comments blanked (line numbers kept)."""
    return "\n".join(re.sub(r"^\s*//.*|\s//.*$", "", line) for line in text.splitlines())


def scan_rust_build(text: str, rules: RuleSet) -> list[Hit]:
    """A build.rs that compiles CUDA with nvcc and has no HIP path, and the nvcc flags it passes."""
    if "nvcc" not in text and ".cuda(" not in text.replace(" ", ""):
        return []
    code = _code(text)
    if _HIP.search(code):
        return []
    lines = text.splitlines()
    hits: list[Hit] = []
    extension = rules.by_check.get("cuda-extension")
    first = _NVCC_BUILD.search(code)
    if extension is not None and first is not None:
        number = code.count("\n", 0, first.start()) + 1
        why = "a Rust build script compiling CUDA with nvcc, with no HIP path"
        hits.append(hit(number, 1, extension, f"{lines[number - 1].strip()}  ({why})", "error"))
    flags = rules.by_check.get("nvcc-flags")
    if flags is not None and first is not None:
        for match in _ARCH_FLAG.finditer(code):
            number = code.count("\n", 0, match.start()) + 1
            hits.append(hit(number, 1, flags, lines[number - 1].strip()))
    return hits
