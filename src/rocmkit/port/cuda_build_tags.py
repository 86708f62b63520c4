"""Requirements that install a CUDA build by definition, where no package rule names them: a
distribution whose name carries CUDA's build tag, an extra of another package that its own metadata
says pulls a CUDA-only package, and a framework whose PyPI build has CUDA-only GPU support, asked
for through an extra the project names for the GPU."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Protocol

from rocmkit.port.findings import Hit, hit
from rocmkit.port.rules import RuleSet, normalise_name

if TYPE_CHECKING:
    from collections.abc import Sequence


class _Requirement(Protocol):  # requirements.ParsedRequirement (imported there: no cycle)
    @property
    def name(self) -> str: ...

    @property
    def extras(self) -> frozenset[str]: ...


# The tag NVIDIA and the projects that ship per-CUDA wheels put in a distribution's name:
# nvidia-cublas-cu12, cuequivariance-ops-torch-cu12, faiss-gpu-cu12, jax-cuda12-plugin. A name
# token, never a substring (a `cuda` or `cu` alone says nothing of the build).
_CUDA_TAG_TOKEN = re.compile(r"^(?:cu1\d{1,2}|cuda1\d{1,2}x?)$")

# (package, extra) -> the CUDA-only package the extra pulls, from the package's own wheel metadata
# (Requires-Dist with `extra == ...`), read 2026-11-26: optimum 2.3.0 setup.py (`onnxruntime-gpu`
# -> optimum-onnx[onnxruntime-gpu], an extra of another package, which the generated
# cuda_extras.toml does not follow). silero-vad's and optimum-onnx's entries were dropped in
# session twenty-nine: cuda_extras.toml holds both, and its finding comes first.
EXTRA_PULLS: dict[tuple[str, str], str] = {
    ("optimum", "onnxruntime-gpu"): "onnxruntime-gpu",
}

# Frameworks whose PyPI distribution supports only CUDA GPUs, with the ROCm distribution to use
# instead (TensorFlow's pip install page: GPU support is for CUDA; AMD publishes tensorflow-rocm).
# tensorflow-gpu was TensorFlow's CUDA build by name until 2.11 (its PyPI page since: removed,
# install tensorflow): never the ROCm one.
CUDA_GPU_FRAMEWORKS: dict[str, str] = {
    "tensorflow": "tensorflow-rocm",
    "tensorflow-gpu": "tensorflow-rocm",
}

# Words of an extra's name that say the user picks it for the GPU (any vendor's GPU, or CUDA).
_GPU_EXTRA_WORDS = frozenset({"gpu", "gpus", "cuda"})


def cuda_tag(name: str) -> str:
    """The CUDA build tag a distribution's name carries (`cu12`), or ''."""
    return next((t for t in normalise_name(name).split("-") if _CUDA_TAG_TOKEN.match(t)), "")


def tagged_name_hit(name: str, text: str, line: int, rules: RuleSet) -> Hit | None:
    """`cuequivariance-ops-torch-cu12`: a CUDA build by its name, for a package no rule knows."""
    rule = rules.by_id.get("cuda-build-package")
    tag = cuda_tag(name)
    if rule is None or not tag:
        return None
    return hit(line, 0, rule, f"{text.strip()}  (its name carries the CUDA build tag {tag})")


def named_for_gpu(group: str) -> bool:
    """An extra the user picks for the GPU (`gpu`, `onnxruntime-gpu`, `cuda`)."""
    return any(w in _GPU_EXTRA_WORDS for w in re.split(r"[^a-z0-9]+", group.lower()))


def gpu_extra_hits(
    group: str,
    requirements: Sequence[tuple[_Requirement | None, str, int]],
    found: list[list[Hit]],
    rules: RuleSet,
) -> list[list[Hit]]:
    """`found` with a hit added for each requirement of a GPU-named extra that had none and that
    installs a CUDA-only build: through another package's extra (EXTRA_PULLS, or an extra named
    exactly as a package a rule knows), or a CUDA-only framework (CUDA_GPU_FRAMEWORKS)."""
    if not named_for_gpu(group):
        return found
    out = []
    for (req, text, line), hits in zip(requirements, found, strict=True):
        extra = _extra_hit(req, text, line, rules) if req is not None and not hits else None
        out.append([extra] if extra is not None else hits)
    return out


def _extra_hit(req: _Requirement, text: str, line: int, rules: RuleSet) -> Hit | None:
    name = normalise_name(req.name)
    for extra in sorted(normalise_name(e) for e in req.extras):
        pulled = EXTRA_PULLS.get((name, extra)) or (extra if rules.package_rule(extra) else None)
        rule = rules.package_rule(pulled) if pulled else None
        if rule is not None and rule.severity != "info":
            # info: the corpus's annotators judged the same construct both ways (a hazard in
            # optimum's and RealtimeSTT's setup.py, an opt-in CUDA build in sentence-transformers'
            # onnx-gpu extra); the fact is shown, the verdict left to the reader.
            why = (
                f"its extra [{extra}] pulls {pulled}, a CUDA build; a ROCm extra needs the ROCm one"
            )
            return hit(line, 0, rule, f"{text.strip()}  ({why})", "info")
    rocm_build = CUDA_GPU_FRAMEWORKS.get(name)
    rule = rules.by_id.get("cuda-gpu-framework")
    if rocm_build and rule is not None:
        why = f"PyPI's {name} supports only CUDA GPUs; ROCm needs {rocm_build}"
        return hit(line, 0, rule, f"{text.strip()}  ({why})")
    return None
