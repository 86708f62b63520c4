"""uv's lock file (`uv.lock`): torch locked as NVIDIA's CUDA build for Linux.

`uv sync` and `uv run` install exactly what uv.lock records (uv's docs, "Locking and syncing"), so
a committed lock decides the torch a ROCm developer gets. Two records mean the CUDA build, by the
definitions of the indexes torch comes from:
- PyPI's torch for Linux declares NVIDIA's runtime wheels as its dependencies (torch's wheel
  metadata: `Requires-Dist: nvidia-cudnn-cu12 ... ; platform_system == "Linux"`, in later releases
  `cuda-toolkit[...]` and `cuda-bindings`), and uv copies each dependency with its marker into the
  lock. A locked torch with such a dependency that applies on Linux is that CUDA build;
- a torch from PyTorch's CUDA indexes (`https://download.pytorch.org/whl/cu126`, `.../nightly/cu128`)
  with a Linux wheel.
A lock that also holds a torch from a ROCm index (`/whl/rocm6.4`, a `+rocm` version) chooses by an
extra or a marker (uv's "Using PyTorch with uv" guide): info. Only the `[[package]]` blocks named
torch are parsed (with tomllib); the rest of a lock, often megabytes, is never decoded as TOML.
"""

from __future__ import annotations

import re

import tomllib

from rocmkit.port.findings import Hit, hit
from rocmkit.port.rules import Rule, RuleSet

FILE_NAMES = frozenset({"uv.lock"})
KIND = "uv-lock"
RULE = "uv-lock-cuda-torch"
# A package table (a comment may follow its header) whose name is torch.
_TORCH = re.compile(r'^\[\[package\]\][ \t]*(?:#[^\n]*)?\nname = "torch"\n', re.M)
_NEXT = re.compile(r"^\[\[package\]\]", re.M)
# NVIDIA's runtime wheels as PyPI's torch names them (nvidia-cudnn-cu12, cuda-toolkit, ...).
NVIDIA_DEPENDENCY = re.compile(r"^(?:nvidia-[\w-]+|cuda-toolkit|cuda-bindings)$")
_CUDA_INDEX = re.compile(r"download\.pytorch\.org/whl/(?:nightly/|test/)?cu\d+")
ROCM = re.compile(r"/whl/(?:nightly/|test/)?rocm|\+rocm")
# A marker that keeps a dependency off Linux: only another platform named, Linux nowhere.
_OTHER_PLATFORM = re.compile(
    r"(?:sys_platform|platform_system)\s*==\s*'(?:win32|darwin|Windows|Darwin)'"
)


def scan_uv_lock(text: str, rules: RuleSet) -> list[Hit]:
    """Each torch the lock records as a CUDA build for Linux: warn, info beside a ROCm one."""
    rule = rules.by_id.get(RULE)
    if rule is None or '\nname = "torch"\n' not in text:
        return []
    cuda: list[tuple[int, str]] = []
    rocm = False
    for match in _TORCH.finditer(text):
        following = _NEXT.search(text, match.end())
        block = text[match.start() : following.start() if following else len(text)]
        try:
            package = tomllib.loads(block)["package"][0]
        except (tomllib.TOMLDecodeError, KeyError, IndexError, TypeError):
            continue
        version = str(package.get("version", ""))
        source = package.get("source", {})
        registry = str(source.get("registry", "")) if isinstance(source, dict) else ""
        if ROCM.search(registry) or ROCM.search(version):
            rocm = True
            continue
        why = _cuda_record(package, registry)
        if why:
            line = text.count("\n", 0, match.start()) + 2  # the `name = "torch"` line
            cuda.append((line, f"torch {version}  ({why})"))
    return lock_hits(
        rule,
        cuda,
        "the lock also holds a ROCm torch, chosen by an extra or a marker" if rocm else "",
    )


def lock_hits(rule: Rule, cuda: list[tuple[int, str]], rocm_choice: str) -> list[Hit]:
    """A lock's CUDA torch records as findings: warn, or info with `rocm_choice` (why the lock's
    ROCm torch makes them one side of a choice) when the lock also records a ROCm torch."""
    if rocm_choice:
        return [
            hit(line, 1, rule, f"{evidence}  ({rocm_choice})", "info") for line, evidence in cuda
        ]
    return [hit(line, 1, rule, evidence) for line, evidence in cuda]


def _cuda_record(package: dict[str, object], registry: str) -> str:
    """Why this locked torch is NVIDIA's CUDA build on Linux, or '' when it is not."""
    if _CUDA_INDEX.search(registry):
        wheels = package.get("wheels", [])
        if isinstance(wheels, list) and any(
            "linux" in str(w.get("url", "")) for w in wheels if isinstance(w, dict)
        ):
            return f"from {registry} with Linux wheels"
        return ""
    dependencies = package.get("dependencies", [])
    if not isinstance(dependencies, list):
        return ""
    for dependency in dependencies:
        if not isinstance(dependency, dict):
            continue
        name = str(dependency.get("name", ""))
        marker = str(dependency.get("marker", ""))
        if NVIDIA_DEPENDENCY.match(name) and applies_on_linux(marker):
            where = registry or "its source"
            return f"from {where}, locked with {name} for Linux: the CUDA build"
    return ""


def applies_on_linux(marker: str) -> bool:
    """Whether a dependency's marker can hold on Linux (an absent marker always does)."""
    if "linux" in marker.lower():
        return "!= 'linux'" not in marker
    return _OTHER_PLATFORM.search(marker) is None
