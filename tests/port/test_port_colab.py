"""A notebook for Colab only (saved by Colab, `metadata.colab`, and importing Colab's own
`google.colab` unguarded) runs on Colab's runtimes, whose GPUs are NVIDIA only: what it installs or
runs for the GPU is info, saying so. A Colab notebook without that import (it may be run locally),
or with it guarded, and a plain Jupyter notebook are reported as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmkit.port import PortConfig, scan_project
from rocmkit.port.notebook import COLAB_NOTE

CELLS = [
    ["!nvidia-smi\n"],
    ["!pip install torch --index-url https://download.pytorch.org/whl/cu121\n"],
]


COLAB = {"colab": {"provenance": [], "gpuType": "T4"}, "accelerator": "GPU"}


def _notebook(metadata: dict[str, object], first: list[str] | None = None) -> str:
    cells = [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": c}
        for c in ([first] if first else []) + CELLS
    ]
    document = {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, indent=1) + "\n"


def _found(
    tmp_path: Path, metadata: dict[str, object], first: list[str] | None = None
) -> list[tuple[str, str, str]]:
    (tmp_path / "demo.ipynb").write_text(_notebook(metadata, first))
    report = scan_project(PortConfig(path=tmp_path, show_info=True))
    return sorted((f.rule_id, f.severity, f.evidence) for f in report.findings)


def test_a_colab_only_notebooks_gpu_cells_are_info_with_the_reason(tmp_path: Path) -> None:
    found = _found(
        tmp_path, COLAB, ["from google.colab import drive\n", "drive.mount('/content')\n"]
    )
    assert {rule for rule, _, _ in found} == {"nvidia-smi", "torch-cuda-index"}
    assert all(severity == "info" and COLAB_NOTE in why for _, severity, why in found)


@pytest.mark.parametrize(
    ("metadata", "first"),
    [
        ({"kernelspec": {"name": "python3"}}, None),  # plain Jupyter
        (COLAB, None),  # saved by Colab, but nothing stops it elsewhere
        (
            COLAB,
            [
                "try:\n",
                "    from google.colab import drive\n",
                "except ImportError:\n",
                "    drive = None\n",
            ],
        ),
        ({"kernelspec": {}}, ["from google.colab import drive\n"]),  # not saved by Colab
    ],
)
def test_notebooks_that_may_run_elsewhere_are_reported(
    tmp_path: Path, metadata: dict[str, object], first: list[str] | None
) -> None:
    found = _found(tmp_path, metadata, first)
    assert {(rule, severity) for rule, severity, _ in found} == {
        ("nvidia-smi", "warn"),
        ("torch-cuda-index", "error"),
    }
