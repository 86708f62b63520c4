"""pixi's lock file (`pixi.lock`): torch locked as NVIDIA's CUDA build for Linux.

`pixi install` and `pixi run` install exactly what pixi.lock records (pixi's docs, "Lock file"),
so a committed lock decides the torch a ROCm developer gets. The lock (YAML, format versions 5 to
7) lists each environment's packages per platform by URL and then, in its top-level `packages:`,
one record per URL: `- pypi: <wheel URL>` with `name`, `version` and `requires_dist`, or
`- conda: <package URL>` with `depends`. Three records mean NVIDIA's CUDA build, by the
definitions of what they name:
- PyPI's torch wheel for Linux declares NVIDIA's runtime wheels as dependencies for Linux (torch's
  wheel metadata: `nvidia-cudnn-cu12 ... ; platform_system == "Linux"`, later `cuda-toolkit[...]`),
  and pixi copies them, markers and all, into the record's `requires_dist`;
- a torch wheel from PyTorch's CUDA indexes (`download.pytorch.org/whl/cu126/torch-...+cu126-...`)
  for Linux;
- a conda pytorch package for linux-64 whose build string names CUDA (conda-forge's
  `pytorch-2.5.1-cuda126_py312h...`, the pytorch channel's `py3.11_cuda12.1_cudnn8.9.2_0`).
A lock that also records a ROCm torch (`whl/rocm6.4`, `+rocm`) chooses by environment: info.
Only the records of torch are read (a lock is often megabytes); nothing is decoded as YAML.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from rocmkit.port.findings import Hit
from rocmkit.port.rules import RuleSet
from rocmkit.port.uv_lock import NVIDIA_DEPENDENCY, ROCM, applies_on_linux, lock_hits

FILE_NAMES = frozenset({"pixi.lock"})
KIND = "pixi-lock"
RULE = "pixi-lock-cuda-torch"
# A top-level record (`- pypi: URL` / `- conda: URL` at the start of a line) of a torch wheel
# or a pytorch conda package; the URL's last part is the file's name.
_RECORD = re.compile(r"^- (pypi|conda): (\S+)$", re.M)
_TORCH_WHEEL = re.compile(r"^torch-(\d[^-]*)-[^-]+-[^-]+-(\w+)\.whl$")
_PYTORCH_CONDA = re.compile(r"^pytorch-(\d[^-]*)-([^-]+)\.(?:conda|tar\.bz2)$")
_CUDA_INDEX = re.compile(r"download(?:-r2)?\.pytorch\.org/whl/(?:nightly/|test/)?cu\d+/")


def scan_pixi_lock(text: str, rules: RuleSet) -> list[Hit]:
    """Each torch the lock records as a CUDA build for Linux: warn, info beside a ROCm one."""
    rule = rules.by_id.get(RULE)
    if rule is None or "torch" not in text:
        return []
    cuda: list[tuple[int, str]] = []
    rocm = False
    records = list(_RECORD.finditer(text))
    for index, match in enumerate(records):
        url = unquote(match.group(2))
        file_name = url.rsplit("/", 1)[-1]
        why = ""
        if match.group(1) == "pypi" and (wheel := _TORCH_WHEEL.match(file_name)) is not None:
            version, platform = wheel.groups()
            if ROCM.search(url):
                rocm = True
                continue
            if "linux" not in platform:
                continue
            end = records[index + 1].start() if index + 1 < len(records) else len(text)
            why = _wheel_record(url, text[match.end() : end])
        elif match.group(1) == "conda" and (package := _PYTORCH_CONDA.match(file_name)):
            version, build = package.groups()
            if "/linux-64/" in url and "cuda" in build:
                why = f"the conda build {build}, made for CUDA"
        if why:
            line = text.count("\n", 0, match.start()) + 1
            cuda.append((line, f"torch {version}  ({why})"))
    return lock_hits(
        rule, cuda, "the lock also holds a ROCm torch, chosen by an environment" if rocm else ""
    )


def _wheel_record(url: str, record: str) -> str:
    """Why this locked Linux torch wheel is NVIDIA's CUDA build, or '' when it is not."""
    if _CUDA_INDEX.search(url):
        return f"a wheel from {url.split('/torch-')[0]}"
    for line in record.splitlines():
        item = line.strip()
        if not item.startswith("- "):
            continue
        requirement, _, marker = item[2:].partition(";")
        name = re.split(r"[\s=<>!~\[(]", requirement.strip(), maxsplit=1)[0]
        if NVIDIA_DEPENDENCY.match(name) and applies_on_linux(marker):
            return f"locked with {name} for Linux: the CUDA build"
    return ""
