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


# -- llama.cpp configured with its CUDA back end ----------------------------------------------

_BUILD_PY = """import subprocess


def build(src):
    subprocess.run(["cmake", "-S", src, "-B", "build", "-DGGML_CUDA=ON"], check=True)


def build_cpu(src):
    subprocess.run(["cmake", "-S", src, "-B", "build", "-DGGML_CUDA=OFF"], check=True)
"""

_ADVICE_PY = """try:
    import llama_cpp
except ImportError:
    print("- NVIDIA GPU: CMAKE_ARGS=\\"-DGGML_CUDA=on\\" pip install llama-cpp-python")
"""

_BOTH_SH = """#!/bin/bash
if [ -e /dev/kfd ]; then
  CMAKE_ARGS="-DGGML_HIP=on" pip install llama-cpp-python
else
  CMAKE_ARGS="-DGGML_CUDA=on" pip install llama-cpp-python
fi
"""


def test_llama_cpp_built_for_cuda_only_is_an_error(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "app/engines.py": _BUILD_PY,
            "app/setup_llama.py": _ADVICE_PY,
            "scripts/install.sh": 'CMAKE_ARGS="-DLLAMA_CUBLAS=on" pip install llama-cpp-python\n',
            "scripts/both.sh": _BOTH_SH,
        },
    )
    found = _found(report, "llama-cpp-cuda-build")
    assert found[("app/engines.py", 5)] == "error"
    assert ("app/engines.py", 9) not in found  # -DGGML_CUDA=OFF builds no CUDA back end
    assert found[("scripts/install.sh", 1)] == "error"  # the switch's older name
    assert found[("app/setup_llama.py", 4)] == "info"  # advice addressed to NVIDIA users
    assert found[("scripts/both.sh", 5)] == "info"  # the script builds the HIP back end too


# -- container GPU requests in a file that also gives AMD GPUs a container ---------------------

_COMPOSE_BOTH = """services:
  app-cuda:
    image: example/app:cuda
    environment:
      - NVIDIA_VISIBLE_DEVICES=all
    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              capabilities: [gpu]
  app-rocm:
    image: example/app:rocm
    devices:
      - /dev/kfd
      - /dev/dri
"""

_COMPOSE_CUDA = _COMPOSE_BOTH.split("  app-rocm:")[0]


def test_nvidia_container_requests_beside_amd_devices_are_one_side(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {"both/docker-compose.yml": _COMPOSE_BOTH, "cuda/docker-compose.yml": _COMPOSE_CUDA},
    )
    both = [f for f in report.findings if f.path == "both/docker-compose.yml"]
    cuda = [f for f in report.findings if f.path == "cuda/docker-compose.yml"]
    assert {f.rule_id for f in cuda} >= {"compose-nvidia", "nvidia-container-env"}
    assert all(f.severity in ("warn", "error") for f in cuda if f.rule_id == "compose-nvidia")
    assert both and {f.severity for f in both} == {"info"}
    assert all("passes AMD's GPU devices" in f.evidence for f in both)


# -- a build requirement is placed in [build-system] ------------------------------------------

_PYPROJECT = """[project]
name = "lattice"
dependencies = [
    "numpy>=2",
    "torch==2.11.0+cu128",
]

[build-system]
requires = [
    "scikit-build-core>=0.11",
    "torch==2.11.0+cu128",
]
build-backend = "scikit_build_core.build"
"""


def test_the_same_cuda_pin_in_build_requirements_is_its_own_place(tmp_path: Path) -> None:
    # pip's isolated build installs [build-system] requires itself: a second place to fix.
    report = _scan(tmp_path, {"pyproject.toml": _PYPROJECT})
    pins = [f for f in report.findings if f.rule_id == "cuda-local-version"]
    assert len(pins) == 1 and set(pins[0].lines) == {5, 11}


# -- ONNX Runtime providers registered from Rust (the ort crate) --------------------------------

_ORT_RS = """use ort::{
    execution_providers::{CUDAExecutionProvider, CoreMLExecutionProvider},
    session::Session,
};

pub fn session(path: &str) -> Session {
    let cuda = CUDAExecutionProvider::default();
    if !cuda.is_available().unwrap_or(false) {
        eprintln!("CUDAExecutionProvider is not available"); // a message, not a use
    }
    Session::builder()
        .unwrap()
        .with_execution_providers([
            CUDAExecutionProvider::default().build(),
            CoreMLExecutionProvider::default().build(),
        ])
        .unwrap()
        .commit_from_file(path)
        .unwrap()
}
"""

_ORT_BOTH_RS = _ORT_RS.replace(
    "CoreMLExecutionProvider::default().build(),",
    "CoreMLExecutionProvider::default().build(),\n            ROCmExecutionProvider::default().build(),",
)


def test_rust_ort_sessions_that_register_only_nvidia_providers(tmp_path: Path) -> None:
    report = _scan(
        tmp_path,
        {
            "rust/src/cuda_only.rs": _ORT_RS,
            "rust/src/both.rs": _ORT_BOTH_RS,
            "rust/src/plain.rs": 'fn main() { println!("no providers here"); }\n',
        },
    )
    only = [f for f in report.findings if f.path == "rust/src/cuda_only.rs"]
    assert [f.rule_id for f in only] == ["ort-nvidia-provider"]
    assert only[0].severity == "warn"
    assert set(only[0].lines) == {7, 14}  # not the `use` lines, not the message on line 9
    both = [f for f in report.findings if f.path == "rust/src/both.rs"]
    assert both and {f.severity for f in both} == {"info"}
    assert not [f for f in report.findings if f.path == "rust/src/plain.rs"]


def test_a_compose_service_on_a_cuda_serving_image_is_reported(tmp_path: Path) -> None:
    compose = """services:
  vllm:
    image: vllm/vllm-openai:v0.11.0
  base:
    image: nvidia/cuda:12.4.1-base-ubuntu22.04
  rocm:
    image: rocm/vllm:latest
"""
    found = _found(_scan(tmp_path, {"docker-compose.yml": compose}), "cuda-image")
    # the file names a ROCm image too: the NVIDIA services are one side of its choice
    assert found[("docker-compose.yml", 3)] == "info"
    assert all(
        f.severity == "info" for f in _scan(tmp_path, {}).findings if f.rule_id == "cuda-image"
    )
    only_cuda = compose.split("  rocm:")[0]
    found = _found(_scan(tmp_path / "b", {"docker-compose.yml": only_cuda}), "cuda-image")
    assert found[("docker-compose.yml", 3)] == "error"
