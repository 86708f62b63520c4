"""ONNX Runtime execution providers registered from Rust (the `ort` crate), in a Python package
with a Rust core (maturin, setuptools-rust).

The `ort` crate's `execution_providers` module names one type per ONNX Runtime provider
(`CUDAExecutionProvider`, `TensorRTExecutionProvider`, `ROCmExecutionProvider`,
`MIGraphXExecutionProvider`, ...), and a session tries the list given to
`with_execution_providers([...])` in order, falling back to the CPU when none registers (the
crate's docs, "Execution providers"). A module that registers CUDA or TensorRT and names neither
AMD provider runs on the CPU on an AMD GPU: the same verdict as Python's `ort-nvidia-provider`.
A module that names an AMD provider too chooses between them: info.

Only `.rs` files whose first bytes name a CUDA/TensorRT provider are read (a byte test in
`iter_files`).
"""

from __future__ import annotations

import re

from rocmkit.port.findings import Hit, hit
from rocmkit.port.rules import Rule, RuleSet

KIND = "rust"
SUFFIX = ".rs"
NVIDIA_BYTES = (b"CUDAExecutionProvider", b"TensorRTExecutionProvider")
_RULE = "ort-nvidia-provider"
# A use of the provider's type in code (its constructor, a path), not the `use` line that imports
# it and not a string literal's text (an `eprintln!("CUDAExecutionProvider is not available")`).
_NVIDIA = re.compile(r"\b(?:CUDA|TensorRT)ExecutionProvider\b")
_AMD = re.compile(r"\b(?:ROCm|MIGraphX)ExecutionProvider\b")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def _code(line: str) -> str:
    """A Rust line without its `//` comment and with string literals blanked."""
    line = _STRING.sub('""', line)
    return line.split("//", 1)[0]


def scan_rust(text: str, rules: RuleSet) -> list[Hit]:
    """Each line of code that constructs or registers NVIDIA's ONNX Runtime providers: warn, info
    where the module names an AMD provider too."""
    rule = rules.by_id.get(_RULE)
    if rule is None or not _NVIDIA.search(text):
        return []
    amd = _AMD.search(text) is not None
    found = []
    in_use = False  # inside a `use` declaration, which may span lines up to its `;`
    for number, line in enumerate(text.splitlines(), 1):
        code = _code(line)
        starts_use = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?use\b", code) is not None
        if starts_use or in_use:
            in_use = ";" not in code
            continue
        if _NVIDIA.search(code):
            found.append(_provider_hit(rule, number, line, amd, "module registers"))
    return found


def _provider_hit(rule: Rule, number: int, line: str, amd: bool, names: str) -> Hit:
    """A line that registers NVIDIA's providers: info where the source (`names`: "module
    registers", "source appends") names an AMD provider too, warn where it does not."""
    if amd:
        why = f"the {names} ROCm/MIGraphX too: the NVIDIA side of its choice"
        return hit(number, 1, rule, f"{line.strip()}  ({why})", "info")
    where = names.split()[0]
    why = f"no AMD provider in the {where}: on an AMD GPU the session runs on the CPU"
    return hit(number, 1, rule, f"{line.strip()}  ({why})")


# ONNX Runtime's C and C++ API (onnxruntime_c_api.h, onnxruntime_cxx_api.h): a session's
# providers are appended to its options (`SessionOptionsAppendExecutionProvider_CUDA(_V2)`,
# `Ort::SessionOptions::AppendExecutionProvider_CUDA/_TensorRT(_V2)`, the older
# `OrtSessionOptionsAppendExecutionProvider_CUDA`), and a program asks which it was built with
# through `GetAvailableProviders()`, whose names are "CUDAExecutionProvider",
# "TensorrtExecutionProvider", "ROCMExecutionProvider", "MIGraphXExecutionProvider". A C++ core
# that appends or looks for CUDA's or TensorRT's provider and names neither AMD one runs its
# sessions on the CPU on an AMD GPU (session twenty-one). Only C/C++ sources whose first bytes
# name one are read (a byte test in `iter_files`).
CPP_KIND = "cpp-ort"
CPP_SUFFIXES = (".cc", ".cpp", ".cxx", ".c")
CPP_NVIDIA_BYTES = (
    b"AppendExecutionProvider_CUDA",
    b"AppendExecutionProvider_TensorRT",
    b"AppendExecutionProvider_Tensorrt",
    b'"CUDAExecutionProvider"',
    b'"TensorrtExecutionProvider"',
)
_CPP_NVIDIA = re.compile(
    r"AppendExecutionProvider_(?:CUDA|TensorRT|Tensorrt)\w*\s*\("
    r'|"(?:CUDA|Tensorrt)ExecutionProvider"'
)
_CPP_AMD = re.compile(
    r"AppendExecutionProvider_(?:ROCM|MIGraphX)\w*|\"(?:ROCM|MIGraphX)ExecutionProvider\""
)


def scan_cpp(text: str, rules: RuleSet) -> list[Hit]:
    """Each line of a C/C++ source that appends or looks for NVIDIA's ONNX Runtime providers:
    warn, info where the source names an AMD provider too."""
    rule = rules.by_id.get(_RULE)
    if rule is None or not _CPP_NVIDIA.search(text):
        return []
    amd = _CPP_AMD.search(text) is not None
    found = []
    in_comment = False
    for number, line in enumerate(text.splitlines(), 1):
        code = line
        if in_comment:
            if "*/" not in code:
                continue
            code, in_comment = code.split("*/", 1)[1], False
        if "/*" in code and "*/" not in code.split("/*", 1)[1]:
            code, in_comment = code.split("/*", 1)[0], True
        code = code.split("//", 1)[0]
        if _CPP_NVIDIA.search(code):
            found.append(_provider_hit(rule, number, line, amd, "source appends"))
    return found
