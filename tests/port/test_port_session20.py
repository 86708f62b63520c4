"""Issue 26, session twenty: each change, with a case where the finding must appear and one where
it must not, on small synthetic trees."""

from __future__ import annotations

from pathlib import Path

import pytest
from port_helpers import scan_files as _scan
from port_helpers import severities as _found

from rocmkit.port.vendor_images import cuda_image

# -- CUDA-only images named by a YAML `image:` key ----------------------------------------------


@pytest.mark.parametrize(
    "ref",
    [
        "nvidia/cuda:12.4.1-devel-ubuntu22.04",
        "nvcr.io/nvidia/pytorch:24.05-py3",
        "docker.io/vllm/vllm-openai:v0.11.0",
        "harbor.local.clusters/bp/lmsysorg/sglang:v0.5.3rc1-cu126-patch9",  # a mirror keeps the path
        "localhost:5000/pytorch/pytorch",
        "ghcr.io/huggingface/text-generation-inference:3.0.1",
        "tensorflow/tensorflow:2.13.0-gpu",
    ],
)
def test_cuda_images_by_their_publishers_tag_schemes(ref: str) -> None:
    assert cuda_image(ref)


@pytest.mark.parametrize(
    "ref",
    [
        "lmsysorg/sglang:v0.5.3-rocm630-mi30x",  # SGLang marks ROCm builds in the tag
        "vllm/vllm-openai-rocm:nightly",  # vLLM's other builds are other repositories
        "vllm/vllm-openai-cpu:latest-x86_64",
        "ghcr.io/huggingface/text-generation-inference:3.0.1-rocm",
        "tensorflow/tensorflow:2.13.0",  # TensorFlow's CPU image
        "rocm/pytorch:latest",
        "{{IMAGE}}",  # a template's variable names no image
        "myorg/cuda-tools:1",
        "ollama/ollama:latest",
    ],
)
def test_images_that_are_not_cuda_only(ref: str) -> None:
    assert cuda_image(ref) is None


_SERVING_CONFIG = """image: "harbor.local/bp/lmsysorg/sglang:v0.5.3rc1-cu126"
cmd:
  - python -m sglang.launch_server
"""

_TOOLKIT = """# image: vllm/vllm-openai:latest  (a comment is not a setting)
build:
  image: "vllm/vllm-openai:latest"
"""

_BOTH = """variants:
  nvidia:
    image: vllm/vllm-openai:v0.11.0
  amd:
    image: vllm/vllm-openai-rocm:v0.11.0
"""

_CI = """jobs:
  test:
    container:
      image: nvidia/cuda:12.4.1-devel-ubuntu22.04
"""


def test_a_cuda_image_in_a_yaml_config_is_reported(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "configs/sglang.yaml": _SERVING_CONFIG,
            "templates/vllm/config.yaml": _TOOLKIT,
            "deploy/serve.yml": _BOTH,
            ".github/workflows/ci.yml": _CI,
            ".gitlab-ci.yml": _CI,
        },
    )
    found = _found(report, "cuda-image")
    assert found[("configs/sglang.yaml", 1)] == "error"
    assert found[("templates/vllm/config.yaml", 3)] == "error"  # the comment on line 1 is not
    assert ("templates/vllm/config.yaml", 1) not in found
    # the ROCm image beside it: the NVIDIA variant, info
    assert found[("deploy/serve.yml", 3)] == "info"
    # a CI service's runners are the maintainers' machines
    assert not [path for path, _ in found if "ci" in path]
    notes = [f.evidence for f in report.findings if f.path == "configs/sglang.yaml"]
    assert any("SGLang's CUDA build" in n for n in notes)


# -- Kubernetes GPU resources written through a template's variable or as a MIG profile ---------

_TEMPLATE = """apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      containers:
        - name: server
          image: {{IMAGE}}
          resources:
            limits:
              nvidia.com/{{GPU_TYPE}}: "{{GPUS_PER_POD}}"
"""

_MIG = """apiVersion: v1
kind: Pod
spec:
  containers:
    - name: worker
      resources:
        limits:
          nvidia.com/mig-1g.5gb: 1
"""

_LABELS = """apiVersion: v1
kind: Pod
metadata:
  labels:
    nvidia.com/gpu.product: A100
"""


def test_nvidia_resources_through_template_variables_and_mig_profiles(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "yaml_templates/deployment.yaml.jinja": _TEMPLATE,
            "yaml_templates/multi_node.j2": _TEMPLATE,
            "k8s/mig.yaml": _MIG,
            "k8s/labels.yaml": _LABELS,
            "k8s/amd.yaml.j2": _TEMPLATE + "              amd.com/gpu: 1\n",
        },
    )
    found = _found(report, "container-nvidia-gpu")
    assert found[("yaml_templates/deployment.yaml.jinja", 11)] == "warn"
    assert found[("yaml_templates/multi_node.j2", 11)] == "warn"
    assert found[("k8s/mig.yaml", 8)] == "warn"
    assert found[("k8s/amd.yaml.j2", 11)] == "info"  # the AMD request beside it
    assert ("k8s/labels.yaml", 5) not in found  # a node label, not a resource request
    # a template's image is a variable: nothing to judge
    assert not _found(report, "cuda-image")


def test_a_template_that_is_not_a_kubernetes_object_is_not_read(tmp_path: Path) -> None:
    page = "<p>Request nvidia.com/{{ kind }}: see the docs</p>\n"
    report = _scan(tmp_path, {"web/page.html.j2": page, "web/page.jinja": page})
    assert not report.findings
