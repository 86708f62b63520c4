"""GPU requests in Kubernetes manifests (YAML), judged by which device plugin serves them.

A container asks Kubernetes for a GPU through an extended resource in `resources.limits` /
`resources.requests`. `nvidia.com/gpu` is the resource NVIDIA's device plugin advertises
(NVIDIA/k8s-device-plugin); AMD's device plugin (ROCm/k8s-device-plugin) advertises `amd.com/gpu`.
On a cluster of AMD nodes a pod that requests `nvidia.com/gpu` is never scheduled. A manifest that
also requests `amd.com/gpu` carries the AMD variant beside it: info. Only Kubernetes objects (a
document with a top-level `apiVersion`) are read.

Only files that hold the resource name are decoded (a byte test), so the many YAML configs of a
project cost one read each.
"""

from __future__ import annotations

import re

from rocmkit.port.container_gpus import AMD_RESOURCE, NVIDIA_RESOURCE
from rocmkit.port.findings import Hit, hit
from rocmkit.port.rules import RuleSet, Severity

NVIDIA_BYTES = NVIDIA_RESOURCE.encode()
_SUFFIXES = (".yaml", ".yml")
# `nvidia.com/gpu: 1` as a mapping key (quoted or not), the form a resources block takes.
_RESOURCE_KEY = re.compile(r"""^[ \t]*(?:-[ \t]+)?["']?nvidia\.com/gpu["']?[ \t]*:""", re.M)
_RULE = "container-nvidia-gpu"
# A Kubernetes object states its apiVersion at the top level of its document (the API conventions:
# every object has apiVersion and kind). A CI pipeline that hands a pod spec to a plugin
# (Buildkite's kubernetes plugin) has none: the maintainers' NVIDIA runners, not what a user deploys.
_K8S_OBJECT = re.compile(r"^apiVersion[ \t]*:[ \t]*\S", re.M)


def is_manifest_name(name: str) -> bool:
    """A YAML file: the only files this scanner reads (after the byte test)."""
    return name.endswith(_SUFFIXES)


def scan_manifest(text: str, rules: RuleSet) -> list[Hit]:
    """Each `nvidia.com/gpu:` resource key: warn, info where the file also requests amd.com/gpu."""
    rule = rules.by_id.get(_RULE)
    if rule is None or NVIDIA_RESOURCE not in text or not _K8S_OBJECT.search(text):
        return []
    also_amd = re.search(rf"""^[ \t]*["']?{re.escape(AMD_RESOURCE)}["']?[ \t]*:""", text, re.M)
    severity: Severity = "info" if also_amd else "warn"
    why = (
        "the manifest also requests amd.com/gpu: the NVIDIA variant"
        if also_amd
        else "the resource of NVIDIA's device plugin: on AMD nodes (amd.com/gpu) the pod is never"
        " scheduled"
    )
    found = []
    for match in _RESOURCE_KEY.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        found.append(hit(line, 0, rule, f"{match.group(0).strip()}  ({why})", severity))
    return found
