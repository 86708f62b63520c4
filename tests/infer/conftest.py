"""Shared fixtures of the infer tests (the tiny Qwen3 model, `tiny_model`, is in tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture
def cpu_platform(monkeypatch):
    """Pin `rocmkit infer local` to the CPU, so a test of CPU behaviour means the same on a GPU
    machine (the CLI calls rocmkit.platform.detect when it runs)."""
    import torch

    import rocmkit.platform
    from rocmkit.platform import Platform

    cpu = Platform(backend="cpu", torch_version=torch.__version__)
    monkeypatch.setattr(rocmkit.platform, "detect", lambda: cpu)
    return cpu


@pytest.fixture(autouse=True)
def _run_in_tmp(tmp_path, monkeypatch):
    """Run every infer test in its own directory, so a command run without --out writes its
    default `runs/infer-<mode>-<stamp>` there and never into the checkout. A wide console keeps
    each table row on one line for the tests that read the printed tables."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "400")
