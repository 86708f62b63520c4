"""GPU requests in Kubernetes manifests (YAML), judged by which device plugin serves them.

A container asks Kubernetes for a GPU through an extended resource in `resources.limits` /
`resources.requests`. `nvidia.com/gpu` is the resource NVIDIA's device plugin advertises
(NVIDIA/k8s-device-plugin); AMD's device plugin (ROCm/k8s-device-plugin) advertises `amd.com/gpu`.
On a cluster of AMD nodes a pod that requests `nvidia.com/gpu` is never scheduled. A manifest that
also requests `amd.com/gpu` carries the AMD variant beside it: info. Only Kubernetes objects (a
document with a top-level `apiVersion`) are read.

Every resource of the nvidia.com domain is advertised by NVIDIA's plugins (the device plugin's
`nvidia.com/gpu` and its MIG strategies' `nvidia.com/mig-<profile>`), so a template that fills the
name in (`nvidia.com/{{GPU_TYPE}}` in a Jinja manifest) asks NVIDIA's plugin too.

The same YAML files name container images: an `image:` key whose value is a CUDA-only image
(vendor_images.cuda_image: nvidia/cuda, nvcr.io/nvidia, vLLM's and SGLang's CUDA builds...) starts
a container with no ROCm runtime, in a Kubernetes object or in a tool's own config (a serving
deployer's `image:` setting). A CI pipeline's files (.github/, .buildkite/, .gitlab-ci.yml...)
describe the maintainers' runners, not what a user deploys: their images are not read.

Only files that hold the resource domain or an image name are decoded (a byte test), so the many
YAML configs of a project cost one read each.
"""

from __future__ import annotations

import re

from rocmkit.port.container_gpus import AMD_RESOURCE
from rocmkit.port.findings import Hit, hit
from rocmkit.port.rules import Rule, RuleSet, Severity
from rocmkit.port.vendor_images import cuda_image

NVIDIA_BYTES = b"nvidia.com/"
# The repository names cuda_image knows, as bytes: a file naming none of them has no image finding.
IMAGE_BYTES: tuple[bytes, ...] = (
    b"nvidia/cuda",
    b"nvcr.io/nvidia",
    b"pytorch/pytorch",
    b"vllm/vllm-openai",
)
IMAGE_BYTES += (b"lmsysorg/sglang", b"text-generation-inference", b"tensorflow/tensorflow")
IMAGE_BYTES += (b"runpod/pytorch", b"runpod/base")
_SUFFIXES = (".yaml", ".yml")
# Jinja and plain templates of a manifest (deployment.yaml.j2, deployment.jinja): the rendered
# file is the manifest; only their resource keys are read (an image there is a variable's value).
_TEMPLATE_SUFFIXES = (".j2", ".jinja", ".jinja2", ".tpl", ".tmpl")
# A resource key (quoted or not), the form a resources block takes: `nvidia.com/gpu: 1`, a MIG
# profile `nvidia.com/mig-1g.5gb: 1`, or a template's variable `nvidia.com/{{GPU_TYPE}}: ...`.
_RESOURCE_KEY = re.compile(
    r"""^[ \t]*(?:-[ \t]+)?["']?nvidia\.com/(?:gpu|mig-[\w.-]+|\{\{[^}\n]*\}\}|\$\{\w+\})["']?[ \t]*:""",
    re.M,
)
# `image: <ref>` (a list item, an anchor and quotes allowed), not a comment.
_IMAGE_KEY = re.compile(
    r"""^[ \t]*(?:-[ \t]+)?image[ \t]*:[ \t]*(?:&\S+[ \t]+)?["']?([^\s"'#]+)""", re.M
)
_RULE = "container-nvidia-gpu"
_IMAGE_RULE = "cuda-image"
KIND = "k8s"
CI_KIND = "k8s-ci"  # a CI pipeline's YAML: resource keys only
TEMPLATE_KIND = "k8s-template"  # a manifest template: resource keys only
# CI services' folders and files (GitHub Actions, Buildkite, GitLab, CircleCI, Azure Pipelines,
# Lightning, Travis, Bitbucket, Drone, Woodpecker, Google Cloud Build).
_CI_FOLDERS = frozenset({".github", ".buildkite", ".gitlab", ".circleci", ".azure-pipelines"})
_CI_FOLDERS |= frozenset({".lightning", ".woodpecker", ".gitea", ".forgejo", ".ci"})
_CI_FILES = frozenset({".gitlab-ci.yml", ".travis.yml", "azure-pipelines.yml"})
_CI_FILES |= frozenset({"bitbucket-pipelines.yml", ".drone.yml", "cloudbuild.yaml"})
# A Kubernetes object states its apiVersion at the top level of its document (the API conventions:
# every object has apiVersion and kind). A CI pipeline that hands a pod spec to a plugin
# (Buildkite's kubernetes plugin) has none: the maintainers' NVIDIA runners, not what a user deploys.
_K8S_OBJECT = re.compile(r"^apiVersion[ \t]*:[ \t]*\S", re.M)


def is_manifest_name(name: str) -> bool:
    """A YAML file or a template of one: the only files this scanner reads (after the byte test)."""
    return name.endswith(_SUFFIXES) or name.endswith(_TEMPLATE_SUFFIXES)


def manifest_kind(rel: str, head: bytes) -> str | None:
    """The scanner kind of YAML file `rel` (relative to the project) whose first bytes are `head`:
    None when it names neither NVIDIA's resource domain nor a CUDA image repository."""
    name = rel.rsplit("/", 1)[-1]
    if not name.endswith(_SUFFIXES):
        return TEMPLATE_KIND if NVIDIA_BYTES in head else None
    if is_ci(rel):
        return CI_KIND if NVIDIA_BYTES in head else None
    if NVIDIA_BYTES in head or any(name in head for name in IMAGE_BYTES):
        return KIND
    return None


def is_ci(rel: str) -> bool:
    """Whether a file (relative to the project) belongs to a CI service's pipeline."""
    return rel.rsplit("/", 1)[-1] in _CI_FILES or rel.split("/", 1)[0] in _CI_FOLDERS


def scan_manifest(text: str, rules: RuleSet) -> list[Hit]:
    """A YAML file's GPU resource requests (resource_requests) and CUDA-only images."""
    return resource_requests(text, rules) + cuda_images(text, rules)


def cuda_images(text: str, rules: RuleSet) -> list[Hit]:
    """Each `image:` key naming a CUDA-only image: the rule's severity, info where the same file
    also names a ROCm image (the NVIDIA variant beside the AMD one)."""
    rule = rules.by_id.get(_IMAGE_RULE)
    if rule is None or "image" not in text:
        return []
    rocm_beside = "rocm" in text.lower() and any(
        "rocm" in m.group(1).lower() for m in _IMAGE_KEY.finditer(text)
    )
    places = [(m.start(), m.group(0).strip(), m.group(1)) for m in _IMAGE_KEY.finditer(text)]
    return image_hits(text, rule, places, rocm_beside)


def image_hits(
    text: str, rule: Rule, places: list[tuple[int, str, str]], rocm_beside: bool
) -> list[Hit]:
    """A finding for each (offset in text, evidence, image reference) whose reference is a
    CUDA-only image (vendor_images.cuda_image): the rule's severity, info where the file also
    names a ROCm image (the NVIDIA variant beside the AMD one). Shared by the YAML and the
    TOML readers (toml_images)."""
    found = []
    for offset, evidence, ref in places:
        why = cuda_image(ref)
        if why is None:
            continue
        line = text.count("\n", 0, offset) + 1
        if rocm_beside:
            note = f"{evidence}  ({why}; the file also names a ROCm image)"
            found.append(hit(line, 0, rule, note, "info"))
        else:
            found.append(hit(line, 0, rule, f"{evidence}  ({why})"))
    return found


def resource_requests(text: str, rules: RuleSet) -> list[Hit]:
    """Each NVIDIA resource key (`nvidia.com/gpu:`, a MIG profile, a template's
    `nvidia.com/{{...}}:`) of a Kubernetes object: warn, info where the file also requests
    amd.com/gpu."""
    rule = rules.by_id.get(_RULE)
    if rule is None or "nvidia.com/" not in text or not _K8S_OBJECT.search(text):
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
