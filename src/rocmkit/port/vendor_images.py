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
