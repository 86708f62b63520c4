"""CUDA-only container images named in a project's TOML configuration files.

A tool that starts containers keeps its images in its own configuration: a serving launcher's
`[deployment] vllm = "vllm/vllm-openai:latest"`, an evaluation runner's `image = "nvcr.io/..."`.
Such a value is an image reference by the OCI distribution grammar (a repository path, then a
`:tag` or `@digest`); when vendor_images.cuda_image knows it as a CUDA-only build, the container
it starts has no ROCm runtime on an AMD node: the rule `cuda-image`, as for a YAML config's
`image:` key (k8s_resources). A bare repository path (`registry = "nvcr.io/nvidia/x"`, no tag)
is a prefix the tool completes, not an image it runs, and is not read. A file that also names a
ROCm image carries the AMD variant beside the NVIDIA one: info.

Only TOML files no other scanner reads (pyproject.toml, pixi.toml, Cargo.toml and uv.lock have
their own) and whose bytes name a CUDA image repository are decoded.
"""

from __future__ import annotations

import re

from rocmkit.port.findings import Hit
from rocmkit.port.k8s_resources import IMAGE_BYTES, image_hits
from rocmkit.port.rules import RuleSet

KIND = "toml-config"
SUFFIX = ".toml"
_RULE = "cuda-image"
# `key = "value"` or `key = 'value'` on one line (a bare, quoted or dotted key), a comment after.
_STRING_VALUE = re.compile(
    r"""^[ \t]*((?:[\w-]+|"[^"\n]*")(?:[ \t]*\.[ \t]*(?:[\w-]+|"[^"\n]*"))*)[ \t]*=[ \t]*"""
    r"""(?:"([^"\\\n]*)"|'([^'\n]*)')[ \t]*(?:#.*)?$""",
    re.M,
)


def names_an_image(head: bytes) -> bool:
    """Whether a TOML file's first bytes name a repository cuda_image knows (a byte test)."""
    return any(name in head for name in IMAGE_BYTES)


def _is_reference(value: str) -> bool:
    """A repository path with a tag or a digest: `repo/name:tag`, `repo/name@sha256:...`."""
    last = value.rsplit("/", 1)[-1]
    return "/" in value and (":" in last or "@" in value) and not any(c.isspace() for c in value)


def scan_toml_images(text: str, rules: RuleSet) -> list[Hit]:
    """Each string value of a TOML file that is a CUDA-only image reference."""
    rule = rules.by_id.get(_RULE)
    if rule is None:
        return []
    values = []
    for match in _STRING_VALUE.finditer(text):
        value = match.group(2) if match.group(2) is not None else match.group(3)
        if _is_reference(value):
            values.append((match, value))
    rocm_beside = any("rocm" in value.lower() for _, value in values)
    places = [(m.start(), f"{m.group(1).strip()} = {value!r}", value) for m, value in values]
    return image_hits(text, rule, places, rocm_beside)
