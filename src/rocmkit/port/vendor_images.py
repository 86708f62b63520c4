"""Serving images whose tag says the vendor: a `FROM image:${VERSION}` is judged by the tag the
global `ARG VERSION=...` default gives it.

SGLang publishes one repository, lmsysorg/sglang, and marks its ROCm builds in the tag
(`v0.5.3-rocm630-mi30x`); the cuda-base-image pattern matches the repository unless the tag
names ROCm. A tag written through a build argument is the ARG's default unless `--build-arg`
overrides it (docs.docker.com/reference/dockerfile/#understand-how-arg-and-from-interact), so
where that default names ROCm the image is the ROCm build, not a finding.
"""

from __future__ import annotations

import re

from rocmkit.port.findings import Hit

_ARG_DEFAULT = re.compile(r"""(?m)^[ \t]*ARG[ \t]+(\w+)[ \t]*=[ \t]*["']?([^\s"']+)""")
_TAG_ARG = re.compile(r"""^[ \t]*FROM[ \t]+(?:--platform=\S+[ \t]+)?\S+:\S*\$\{?(\w+)\}?""")


def drop_rocm_tags(text: str, hits: list[Hit]) -> list[Hit]:
    """`hits` without the cuda-base-image findings whose image tag is a build argument whose
    global default names ROCm."""
    if "ARG" not in text or not any(h.rule.id == "cuda-base-image" for h in hits):
        return hits
    lines = text.splitlines()
    out = []
    for h in hits:
        line = lines[h.line - 1] if h.rule.id == "cuda-base-image" and h.line <= len(lines) else ""
        tag = _TAG_ARG.match(line)
        if tag is not None and _default_before(text, tag.group(1), h.line).lower().count("rocm"):
            continue
        out.append(h)
    return out


def _default_before(text: str, name: str, line: int) -> str:
    """The default of the last `ARG name=...` above `line` (the global scope before a FROM)."""
    value = ""
    for match in _ARG_DEFAULT.finditer(text):
        if match.group(1) == name and text.count("\n", 0, match.start()) + 1 < line:
            value = match.group(2)
    return value


# Image repositories whose every build (or every build whose tag does not name another vendor)
# runs CUDA, by their publishers' own tag schemes: (repository, the tag words that mark a
# non-CUDA build, or None when the tag must name CUDA/GPU to be the CUDA build).
# - nvidia/cuda and nvcr.io/nvidia/*: NVIDIA's CUDA and NGC images.
# - pytorch/pytorch: PyTorch's Docker Hub images are X-cudaY-cudnnZ-runtime|devel (ROCm's are
#   rocm/pytorch).
# - vllm/vllm-openai: vLLM's CUDA image; its other builds are separate repositories
#   (vllm/vllm-openai-rocm, -cpu, -xpu), which this exact name does not match.
# - lmsysorg/sglang: one repository, ROCm/NPU/CPU builds marked in the tag (v0.5.3-rocm630-mi30x).
# - huggingface/text-generation-inference: TGI tags its ROCm, Intel and Gaudi builds (3.0.1-rocm).
# - tensorflow/tensorflow: the -gpu tags are CUDA (ROCm's are rocm/tensorflow).
# - runpod/pytorch, runpod/base: RunPod tags its CUDA builds -cudaX.Y (2.4.0-py3.11-cuda12.4.1-devel).
_ANY_TAG_BUT = ("rocm", "cpu", "xeon", "npu", "xpu", "intel", "gaudi", "neuron", "ascend", "mi3")
_CUDA_REPOSITORIES: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "nvidia/cuda": ("NVIDIA's CUDA image", ()),
    "pytorch/pytorch": ("PyTorch's CUDA image (ROCm's is rocm/pytorch)", ()),
    "vllm/vllm-openai": ("vLLM's CUDA image (ROCm's is vllm/vllm-openai-rocm)", ()),
    "lmsysorg/sglang": ("SGLang's CUDA build (its ROCm tags name rocm)", _ANY_TAG_BUT),
    "huggingface/text-generation-inference": (
        "TGI's CUDA build (its ROCm tags end in -rocm)",
        _ANY_TAG_BUT,
    ),
    "tensorflow/tensorflow": ("TensorFlow's -gpu image is CUDA (ROCm's is rocm/tensorflow)", None),
    "runpod/pytorch": ("RunPod's PyTorch image, a CUDA build by its tag", None),
    "runpod/base": ("RunPod's base image, a CUDA build by its tag", None),
}
# A registry host (with a port) or mirror path before the repository: a mirror keeps the path.
_IMAGE_REF = re.compile(r"^(?:[\w.-]+(?::\d+)?/)*?((?:[\w.-]+/)?[\w.-]+)(?::([\w.-]+))?(?:@\S+)?$")


def cuda_image(ref: str) -> str | None:
    """What makes image reference `ref` a CUDA-only image (`nvcr.io/nvidia/pytorch:24.05-py3`,
    `mirror.local/bp/lmsysorg/sglang:v0.5.3-cu126`), or None (a ROCm build, an unknown or a
    templated image)."""
    ref = ref.strip().strip("\"'")
    if ref.lower().startswith("docker://"):
        ref = ref[len("docker://") :]
    if "{" in ref or "$" in ref.split(":", 1)[0] or "rocm" in ref.lower():
        return None  # a template's variable names no image; a ROCm build is not a finding
    if ref.startswith("nvcr.io/nvidia/"):
        # NGC's base/ubuntu is NVIDIA's plain Ubuntu image: no CUDA in it.
        base = ref.startswith("nvcr.io/nvidia/base/")
        return None if base else "an NVIDIA NGC image (nvcr.io/nvidia)"
    match = _IMAGE_REF.match(ref)
    if match is None:
        return None
    repository, tag = match.group(1), (match.group(2) or "").lower()
    known = _CUDA_REPOSITORIES.get(repository)
    if known is None:
        return None
    why, other_vendors = known
    if other_vendors is None:  # the CUDA build is the one whose tag says so
        return why if "gpu" in tag or "cuda" in tag else None
    return None if any(word in tag for word in other_vendors) else why
