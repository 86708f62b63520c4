"""CUDA-only crates and CUDA features in a Rust core's Cargo.toml (a Python package built with
maturin or setuptools-rust).

Cargo's manifest format: a crate's dependencies are the keys of `[dependencies]`,
`[build-dependencies]` and `[target.<cfg>.dependencies]` (or a `[dependencies.<name>]` table);
`[dev-dependencies]` build only tests and examples, and `[workspace.dependencies]` only declares
versions that members inherit. A feature (`[features]`) lists what it turns on: another crate's
feature as `"<crate>/<feature>"` (`"<crate>?/<feature>"` for an optional one).

Two verdicts, from the crates' own definitions:
- `cargo-cuda-crate`: a dependency on a crate that binds CUDA alone (cudarc and the other
  CUDA driver/runtime/library bindings, candle's flash-attention kernels): no HIP path, so the
  build or the first call fails on a ROCm machine (optional ones fail when their feature is on);
- `cargo-cuda-feature`: a feature that turns on another crate's `cuda` feature (candle's
  `candle-core/cuda`, the `ort` crate's `ort/cuda`): the GPU build of the extension is CUDA's
  alone. Info where the manifest also turns on a ROCm/HIP/MIGraphX feature (a vendor choice); a
  feature forwarded to a crate of the project's own tree (a `path` dependency) is judged in that
  crate's manifest.

Only Cargo.toml files holding "cuda" or "flash-attn" are read (a byte test in `iter_files`).
"""

from __future__ import annotations

import re

from rocmkit.port.findings import Hit, hit
from rocmkit.port.rules import RuleSet

KIND = "cargo"
FILE_NAME = "Cargo.toml"
BYTES = (b"cuda", b"flash-attn")
# crates.io crates that bind CUDA (or kernels built with nvcc) and nothing else
CUDA_CRATES = frozenset(
    {
        "cudarc",
        "cust",
        "cust_core",
        "cust_raw",
        "rustacuda",
        "rustacuda_core",
        "cuda-sys",
        "cuda-runtime-sys",
        "cuda-driver-sys",
        "cublas-sys",
        "cudnn-sys",
        "candle-flash-attn",
        "candle-flash-attn-v3",
    }
)
_CRATE_RULE = "cargo-cuda-crate"
_FEATURE_RULE = "cargo-cuda-feature"
_TABLE = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]\s*(?:#.*)?$")
_KEY = re.compile(r"""^\s*["']?([A-Za-z0-9_.-]+)["']?\s*=""")
_CUDA_FEATURE = re.compile(r"""["']([A-Za-z0-9_-]+)\??/cuda["']""")
# a dependency built from the project's own tree: `name = { path = "../core" ... }`
_PATH_DEPENDENCY = re.compile(r"""^\s*["']?([A-Za-z0-9_.-]+)["']?\s*=\s*\{[^}#]*\bpath\s*=""", re.M)
_AMD_FEATURE = re.compile(r"""["'][A-Za-z0-9_-]+\??/(?:rocm|hip|migraphx)["']""")


def _dependency_table(table: str) -> tuple[bool, str | None]:
    """(whether `table` lists dependencies, the crate a `[dependencies.<name>]` table names)."""
    parts = [
        p.strip("'\" ") for p in re.split(r"\.(?=(?:[^'\"]*['\"][^'\"]*['\"])*[^'\"]*$)", table)
    ]
    for index, part in enumerate(parts):
        if part in ("dependencies", "build-dependencies"):
            if parts[0] == "workspace":
                return False, None
            rest = parts[index + 1 :]
            return True, rest[0] if rest else None
    return False, None


def scan_cargo(text: str, rules: RuleSet) -> list[Hit]:
    crate_rule = rules.by_id.get(_CRATE_RULE)
    feature_rule = rules.by_id.get(_FEATURE_RULE)
    found: list[Hit] = []
    amd = _AMD_FEATURE.search(text) is not None
    # a feature forwarded to a crate of the project's own tree is judged in that crate's manifest
    own = {m.group(1) for m in _PATH_DEPENDENCY.finditer(text)}
    table = ""
    in_dependencies, named = False, None
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        header = _TABLE.match(code)
        if header:
            table = header.group(1)
            in_dependencies, named = _dependency_table(table)
            if named in CUDA_CRATES and crate_rule is not None:
                found.append(
                    hit(number, 1, crate_rule, f"[{table}] (a crate that binds CUDA alone)")
                )
            continue
        if in_dependencies and named is None and crate_rule is not None:
            key = _KEY.match(code)
            # a dotted key names the crate by its first part (`cudarc.workspace = true`, TOML's
            # dotted keys: a member inheriting the workspace's cudarc)
            if key and key.group(1).split(".", 1)[0] in CUDA_CRATES:
                why = f"{line.strip()[:120]}  (a crate that binds CUDA alone)"
                found.append(hit(number, 1, crate_rule, why))
        elif table == "features" and feature_rule is not None:
            match = next((m for m in _CUDA_FEATURE.finditer(code) if m.group(1) not in own), None)
            if match:
                evidence = f"{line.strip()[:120]}  ({match.group(1)}'s CUDA build)"
                if amd:
                    why = "the manifest also turns on a ROCm/HIP/MIGraphX feature"
                    found.append(hit(number, 1, feature_rule, f"{evidence}  ({why})", "info"))
                else:
                    found.append(hit(number, 1, feature_rule, evidence))
    return found
