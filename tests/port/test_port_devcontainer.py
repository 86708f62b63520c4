"""Dev Container definitions (devcontainer.json, JSON with comments) read as the specification
defines them: an NVIDIA image or NVIDIA-only `docker run` arguments are found at their lines, at
warn (a developer's set-up, not the product); a file that also gives AMD's devices is left alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmkit.port import PortConfig, load_rules, scan_project
from rocmkit.port.devcontainer import scan_devcontainer, strip_jsonc

NVIDIA = """{
  // a comment with "quotes", and a comma,
  "name": "dev // not a comment, ]",
  "image": "nvcr.io/nvidia/pytorch:24.08-py3",
  /* block
     comment */
  "runArgs": [
    "--gpus=all",
    "--shm-size=1g",
  ],
  "postCreateCommand": "nvidia-smi && pip install -e .",
}
"""


def _found(text: str) -> list[tuple[int, str, str]]:
    return sorted((h.line, h.rule.id, h.severity) for h in scan_devcontainer(text, load_rules()))


def test_jsonc_comments_and_trailing_commas_go_and_strings_stay() -> None:
    document = json.loads(strip_jsonc(NVIDIA))
    assert document["name"] == "dev // not a comment, ]"
    assert document["runArgs"] == ["--gpus=all", "--shm-size=1g"]
    assert json.loads(strip_jsonc('{"a": "x\\\\", "b": [1, /* c */ ],}')) == {"a": "x\\", "b": [1]}


def test_nvidia_image_and_gpus_and_commands_are_found_at_their_lines() -> None:
    assert _found(NVIDIA) == [
        (4, "cuda-base-image", "warn"),
        (8, "docker-gpus", "warn"),
        (11, "nvidia-smi", "warn"),
    ]


@pytest.mark.parametrize(
    "run_args",
    [
        ["--runtime", "nvidia"],
        ["--runtime=nvidia"],
        ["--device=nvidia.com/gpu=all"],
        ["--gpus", "all"],
    ],
)
def test_every_nvidia_only_way_to_ask_docker_for_the_gpu(run_args: list[str]) -> None:
    text = json.dumps({"image": "python:3.12", "runArgs": run_args}, indent=1)
    assert [rule for _, rule, _ in _found(text)] == ["docker-gpus"]


def test_rocm_image_and_amd_devices_are_fine() -> None:
    rocm = {"image": "rocm/pytorch:latest", "runArgs": ["--device=/dev/kfd", "--device=/dev/dri"]}
    assert _found(json.dumps(rocm, indent=1)) == []
    both = {"image": "python:3.12", "runArgs": ["--gpus=all", "--device=/dev/kfd"]}
    assert _found(json.dumps(both, indent=1)) == []  # it serves both vendors


def test_a_project_scan_reads_the_file_and_reports_a_broken_one(tmp_path: Path) -> None:
    (tmp_path / ".devcontainer").mkdir()
    (tmp_path / ".devcontainer" / "devcontainer.json").write_text(NVIDIA)
    (tmp_path / ".devcontainer.json").write_text('{"image": "nvidia/cuda:12.4.0-devel", ')
    report = scan_project(PortConfig(path=tmp_path))
    assert {(f.path, f.rule_id) for f in report.findings} == {
        (".devcontainer/devcontainer.json", "cuda-base-image"),
        (".devcontainer/devcontainer.json", "docker-gpus"),
        (".devcontainer/devcontainer.json", "nvidia-smi"),
    }
    assert [i.path for i in report.issues] == [".devcontainer.json"]
    assert "does not parse" in report.issues[0].reason
