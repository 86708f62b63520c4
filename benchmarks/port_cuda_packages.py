"""Generate src/rocmkit/port/cuda_packages.toml: PyPI packages that are CUDA-only by their OWN
published metadata (issue 26, round fifteen (b)).

A package is classified from the latest release's metadata on PyPI (JSON API,
https://pypi.org/pypi/<name>/json: `info.requires_dist`, the release's file names, summary and
description):
  cuda-runtime  a Requires-Dist that pip installs on Linux x86-64 with no extra asked for names one
                of NVIDIA's CUDA wheels (nvidia-*-cu11/12/13, nvidia-cuda-*, nvidia-cublas*,
                nvidia-cudnn*, ..., cupy-cuda*, nvidia-cutlass-dsl): every install pulls a CUDA
                build. NCCL (nvidia-nccl*) and CUDA's Python bindings (cuda-python,
                cuda-bindings) count so only for a package named for CUDA or NVIDIA: they
                install anywhere and fail only when called (xgboost requires NCCL and trains on
                the CPU as well).
  pulls-cuda-only  a requirement of the same kind on a package a hand rule of rules.toml judges
                an error (vllm, tensorrt, ...): installing it installs that package.
  nvml          no such requirement, but one on NVIDIA's NVML bindings (nvidia-ml-py, pynvml)
                and none on a GPU framework (torch, tensorflow, jax): a monitoring package that
                installs on ROCm and finds no GPU there.
  gpu-build     a name `<base>-gpu` / `<base>-cuXX` whose ROCm build is published under another
                name (`<base>-rocm` is in the names list: that is how it is known).
  nvidia-gpu-env  none of the above, but the release declares the trove classifier
                `Environment :: GPU :: NVIDIA CUDA` (or one of its versions) and ships compiled
                wheels or requires no GPU framework: its authors name NVIDIA's CUDA as the GPU
                its own code runs on (the classifier list has no AMD or ROCm entry, so the
                missing ROCm mention below is what says it has no ROCm support). Pure Python on
                torch/TensorFlow/JAX is left out: its GPU is the framework's. Whether it fails or
                falls back to the CPU on ROCm the metadata does not say: a warning.
Packages whose metadata mentions ROCm anywhere (a file name, a requirement, the summary or the
description) are left out, and so are torch, torchvision and torchaudio (port has torch rules) and
TensorFlow's builds (tensorflow-*, tf-nightly*: port judges TensorFlow by the extra that installs it).

The classes cuda-runtime and pulls-cuda-only are given only to vendor-named packages (below): a
CUDA wheel installs on any Linux machine, so for a package whose name says nothing of CUDA it marks
one CUDA path of it, not a CUDA-only package; for those only their own classifier (nvidia-gpu-env)
and NVML (nvml) count.

The universe never comes from the corpus: the names whose tokens name a vendor or a GPU (cuda,
cu11/cu12/cu13, nvidia, cutlass, cudnn, nccl, tensorrt, nvml, gpu, ...) of a names file
(--names FILE: one name a line, or a TSV whose first column is the name and whose fourth is a
download rank, kept up to --top), or with --every-name all its names up to --top (a CUDA-only
package need not say so in its name: cpm-kernels, warp-lang), plus every exact package name of
rules.toml (--with-hand-rules).
Names a hand rule of rules.toml already matches are not looked up (hand rules win). Requests are
capped (--max-requests), run on a few threads with a timeout, and cached in --cache: a few dozen
look-ups of named packages, never a scan of the registry (no download of its list of names).

    PYTHONPATH=src python benchmarks/port_cuda_packages.py --names NAMES.tsv --top 15000
    PYTHONPATH=src python benchmarks/port_cuda_packages.py --names NAMES.tsv --top 15000 \
        --every-name --max-requests 16000 --threads 8       # the shipped table (session nine)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import re
import sys
import urllib.request
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from rocmkit.atomic import atomic_write_text  # noqa: E402
from rocmkit.port.requirements import installed_on_rocm_machine  # noqa: E402
from rocmkit.port.rules import load_rules, normalise_name  # noqa: E402

TABLE = REPO / "src" / "rocmkit" / "port" / "cuda_packages.toml"
CACHE = REPO / ".cache" / "port-cuda-packages.json"
JSON_API = "https://pypi.org/pypi/{name}/json"

# Tokens of a distribution name that name NVIDIA, CUDA or a GPU (a token, never a substring).
_VENDOR_TOKEN = re.compile(
    r"^(?:cuda\d*x?|cu1[1-3]\d?|nvidia|nv|cutlass|cudnn|nccl|tensorrt|nvml|gpu|gpus|cupy)$"
)
# NVIDIA's CUDA wheels (normalised names) and the bindings that load only CUDA.
_CUDA_RUNTIME = re.compile(
    r"^(?:nvidia-[a-z0-9-]*-cu1[1-3]|nvidia-cuda-[a-z0-9-]+|nvidia-cu(?:blas|dnn|fft|rand|solver"
    r"|sparse|file|sparselt|tensor)[a-z0-9-]*|nvidia-nvjitlink[a-z0-9-]*"
    r"|nvidia-nvshmem[a-z0-9-]*|cupy-cuda[a-z0-9-]*|nvidia-cutlass-dsl)$"
)
# NVIDIA's libraries that install on any Linux machine and fail only when called: NCCL (multi-GPU
# collectives) and CUDA's Python bindings (tested before _CUDA_RUNTIME, which nvidia-nccl-cu12
# would also match).
_CUDA_LIBRARIES = re.compile(r"^(?:nvidia-nccl[a-z0-9-]*|cuda-python|cuda-bindings)$")
_NVML = frozenset({"nvidia-ml-py", "nvidia-ml-py3", "pynvml"})
# Frameworks with a ROCm build that pure-Python packages run their GPU work through.
_GPU_FRAMEWORKS = frozenset({"torch", "tensorflow", "jax", "jaxlib"})
# TensorFlow's other builds (tensorflow-cpu, -intel, -macos, tf-nightly...): judged as TensorFlow is,
# by the extra that installs it (cuda_build_tags.CUDA_GPU_FRAMEWORKS), never from this table.
_FRAMEWORK_BUILD = re.compile(r"^(?:tensorflow|tf-nightly)(?:-[a-z0-9-]+)?$")
_TORCH = frozenset({"torch", "torchvision", "torchaudio"})
_GPU_SUFFIX = re.compile(r"^(.+?)-(?:gpu|cu1[1-3]\d?|cuda1[1-3]x?)$")
# The trove classifier (https://pypi.org/classifiers/) by which a release names NVIDIA's CUDA as its
# GPU; its versioned forms (`... :: NVIDIA CUDA :: 12`, `:: 12 :: 12.4`) begin with it.
NVIDIA_CUDA_CLASSIFIER = "Environment :: GPU :: NVIDIA CUDA"


# ... or a token that begins or ends with such a word (gpustat, py3nvml, nvgpu, cudatoolkit).
_VENDOR_AFFIX = re.compile(r"^(?:cuda|nvidia|nvml|gpu|cudnn|tensorrt|cutlass)|(?:nvml|gpu|cuda)$")


def vendor_named(name: str) -> bool:
    """Whether a distribution name has a token that names NVIDIA, CUDA or a GPU."""
    return any(
        _VENDOR_TOKEN.match(t) or _VENDOR_AFFIX.search(t) for t in normalise_name(name).split("-")
    )


def classify(meta: dict[str, Any], rocm_names: frozenset[str]) -> dict[str, str] | None:
    """{name, class, version, evidence} for a CUDA-only package's JSON metadata, or None."""
    rules = load_rules()
    info = meta.get("info") or {}
    name = normalise_name(str(info.get("name", "")))
    version = str(info.get("version", ""))
    files = [str(f.get("filename", "")) for f in meta.get("urls") or []]
    requires = [str(r) for r in info.get("requires_dist") or []]
    words = " ".join([*files, *requires, str(info.get("summary")), str(info.get("description"))])
    if not name or name in _TORCH or _FRAMEWORK_BUILD.match(name) or "rocm" in words.lower():
        return None
    runtime = libraries = pulls = nvml = ""
    frameworks = False
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if not installed_on_rocm_machine(text, ""):
            continue  # an extra's, or not on Linux x86-64
        dependency = normalise_name(req.name)
        frameworks = frameworks or dependency in _GPU_FRAMEWORKS
        if _CUDA_LIBRARIES.match(dependency):
            libraries = libraries or f"{version} requires {text}"
        elif _CUDA_RUNTIME.match(dependency):
            runtime = runtime or f"{version} requires {text}"
        pulled = rules.package_rule(dependency)
        if pulled is not None and pulled.severity == "error" and not pulled.requirement_note:
            pulls = pulls or f"{version} requires {text} (port's rule {pulled.id})"
        if dependency in _NVML:
            nvml = nvml or f"{version} requires {text}"
    # Every CUDA wheel installs on any Linux machine; what it says is that the package's GPU
    # code is CUDA's. For a package named for CUDA or a GPU that is the package; for any other
    # (sglang's quack-kernels, fairchem's nvalchemi-toolkit-ops) it is one path of it, and only
    # the authors' own classifier below speaks for the whole package.
    named = vendor_named(name)
    if runtime and named:
        return _row(name, "cuda-runtime", version, runtime)
    if pulls and named:
        return _row(name, "pulls-cuda-only", version, pulls)
    if libraries and named:
        # NCCL and CUDA's Python bindings install anywhere and fail only when called: CUDA-only
        # when the package is named for CUDA; xgboost requires NCCL and trains on the CPU too.
        return _row(name, "cuda-runtime", version, libraries)
    if nvml and not frameworks:
        # (beside torch/TensorFlow/JAX, which it pulls itself, NVML is a helper, not its GPU)
        return _row(name, "nvml", version, nvml)
    base = _GPU_SUFFIX.match(name)
    if base is not None and f"{base.group(1)}-rocm" in rocm_names:
        why = f"{version}: the ROCm build is published as {base.group(1)}-rocm"
        return _row(name, "gpu-build", version, why)
    declared = [c for c in info.get("classifiers") or [] if c.startswith(NVIDIA_CUDA_CLASSIFIER)]
    compiled = any(f.endswith(".whl") and not f.endswith("-none-any.whl") for f in files)
    # Pure Python on top of torch or TensorFlow runs on that framework's GPU, which has a ROCm
    # build: the classifier describes the framework (lycoris-lora, gpflow). Compiled code, or
    # pure Python with no framework under it (cpm-kernels loads its own CUDA binaries), is the
    # package's own CUDA.
    if declared and (compiled or not frameworks):
        # The shortest is the plain classifier or its major version: the evidence to show.
        why = f"{version} declares the classifier '{min(declared, key=len)}'"
        return _row(name, "nvidia-gpu-env", version, why)
    return None


def _row(name: str, kind: str, version: str, evidence: str) -> dict[str, str]:
    return {"name": name, "class": kind, "version": version, "evidence": evidence[:160]}


def universe_from_names(
    path: Path, top: int, every_name: bool = False
) -> tuple[list[str], frozenset[str]]:
    """(vendor-named names, or every name with `every_name`, and every `*-rocm` name) of a names
    file (a TSV row: name, ..., rank)."""
    names, rocm = [], set()
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            cells = line.rstrip("\n").split("\t")
            name = normalise_name(cells[0])
            if name.endswith("-rocm"):
                rocm.add(name)
            rank = cells[3] if len(cells) > 3 else ""
            if top and len(cells) > 3 and not (rank.isdigit() and int(rank) <= top):
                continue
            if every_name or vendor_named(name):
                names.append(name)
    return names, frozenset(rocm)


def hand_rule_names() -> list[str]:
    """The exact package names of rules.toml (patterns with `*` are not names)."""
    return [p for r in load_rules().rules for p in r.packages if "*" not in p]


def fetch(names: list[str], cache: dict[str, Any], threads: int, timeout_s: float) -> None:
    """Fill `cache` with each name's JSON metadata (None where PyPI has none)."""

    def one(name: str) -> tuple[str, Any]:
        try:
            with urllib.request.urlopen(JSON_API.format(name=name), timeout=timeout_s) as r:
                data = json.load(r)
        except Exception as exc:  # a 404, a time-out: recorded, not fatal
            return name, {"error": str(exc)[:120]}
        keep = {k: data["info"].get(k) for k in ("name", "version", "summary", "requires_dist")}
        keep["classifiers"] = [
            c for c in data["info"].get("classifiers") or [] if c.startswith("Environment :: GPU")
        ]
        keep["description"] = (
            "rocm" if "rocm" in str(data["info"].get("description")).lower() else ""
        )
        return name, {"info": keep, "urls": [{"filename": u["filename"]} for u in data["urls"]]}

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for name, meta in pool.map(one, [n for n in names if n not in cache]):
            cache[name] = meta


_COMMENT = (
    "# CUDA-only PyPI packages by their own published metadata: generated by",
    "# benchmarks/port_cuda_packages.py (see its docstring and docs/port.md, round fifteen (b)).",
    "# Do not edit by hand: regenerate, and review the diff.",
)


def render(
    rows: list[dict[str, str]],
    header: dict[str, Any],
    comment: tuple[str, ...] = _COMMENT,
    table: str = "package",
) -> str:
    """A generated TOML table: the comment, the header's keys, then one [[table]] per row."""
    lines = [*comment, *(f"{key} = {json.dumps(value)}" for key, value in header.items())]
    for row in rows:
        lines += ["", f"[[{table}]]"] + [f"{k} = {json.dumps(v)}" for k, v in row.items()]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--names", type=Path, help="a names file (one a line, or a ranked TSV)")
    parser.add_argument("--top", type=int, default=0, help="keep TSV rows ranked <= this")
    parser.add_argument("--with-hand-rules", action="store_true", help="also rules.toml's names")
    parser.add_argument(
        "--every-name", action="store_true", help="every name up to --top, not only vendor-named"
    )
    parser.add_argument("--max-requests", type=int, default=60)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--out", type=Path, default=TABLE)
    args = parser.parse_args()
    if args.names:
        names, rocm = universe_from_names(args.names, args.top, args.every_name)
        source = f"names file {args.names.name}" + (f", top {args.top}" if args.top else "")
        source += ", every name" if args.every_name else ", vendor-named names"
    else:
        parser.error("give --names FILE (one package name a line, or a ranked TSV)")
    rules = load_rules()
    vendor = sorted(set(names))
    hand = sorted(set(hand_rule_names())) if args.with_hand_rules else []
    # Hand rules win: a name one already matches needs no look-up (unless asked to check them).
    asked = [n for n in vendor if rules.package_rule(n) is None] + hand
    asked = sorted(set(asked))
    if len(asked) > args.max_requests:
        parser.error(f"{len(asked)} names to look up, over --max-requests {args.max_requests}")
    cache = json.loads(args.cache.read_text()) if args.cache.is_file() else {}
    fetch(asked, cache, args.threads, args.timeout)
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.cache, json.dumps(cache, indent=1, sort_keys=True))
    rows = [r for n in asked if (r := classify(cache[n], rocm)) is not None]
    header = {
        "generated": datetime.date.today().isoformat(),
        "universe": source,
        "num_names": len(vendor),
        "num_looked_up": len(asked),
        "num_not_found": sum(1 for n in asked if "error" in cache[n]),
        "num_cuda_only": len(rows),
    }
    atomic_write_text(args.out, render(rows, header))
    print(json.dumps(header))
    for row in rows:
        print(f"  {row['name']:32} {row['class']:13} {row['evidence']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
