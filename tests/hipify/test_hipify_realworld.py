"""Real-world CUDA from PyPI, translated by rocmkit and compiled with the installed hipcc for gfx90a.

The packages (benchmarks/hipify_corpus.toml: version and sha256 pinned) are downloaded by
`scripts/install --test` (or scripts/fetch-hipify-corpus) into .cache/hipify-corpus/. Without them
or without hipcc the compile tests skip, except in CI (CI=true), where that is a failure: the
corpus is the check that translations of code nobody here wrote still compile.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path

import pytest

from rocmkit.hipify.check import find_hipcc
from rocmkit.hipify.versions import LATEST, hip_names, installed_version, resolve_version

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
corpus = importlib.import_module("hipify_corpus")
hipify_compile = importlib.import_module("hipify_compile")

PROJECTS = corpus.load_manifest()


def _require(present: bool, why: str) -> None:
    if present:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why}; CI installs it with `bash scripts/install --test`")
    pytest.skip(why)


def test_manifest_pins_at_least_five_projects_of_different_kinds():
    assert len(PROJECTS) >= 5
    assert len({p.kind for p in PROJECTS}) == len(PROJECTS)
    for project in PROJECTS:
        assert re.fullmatch(r"[0-9a-f]{64}", project.sha256), project.name
        assert re.fullmatch(r"[0-9a-f]{40}", project.commit), project.name
        assert project.version in project.file, project.name
        assert 0 <= project.min_compile <= len(project.compile), project.name
        assert "cuda-samples" not in project.repository  # kept as the independent check


def test_fetch_refuses_a_file_whose_sha256_differs(monkeypatch, tmp_path):
    project = PROJECTS[0]
    monkeypatch.setattr(corpus, "_download", lambda p: b"not the published file")
    problems = corpus.fetch([project], cache=tmp_path)
    assert len(problems) == 1 and "sha256" in problems[0]
    assert not corpus.is_fetched(project, cache=tmp_path)


@pytest.mark.hipcc
@pytest.mark.slow
@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_translated_project_compiles_and_names_only_what_hip_declares(project, tmp_path):
    hipcc = find_hipcc()
    _require(hipcc is not None, "hipcc is not installed")
    _require(corpus.is_fetched(project), f"{project.name} is not in .cache/hipify-corpus")
    version = installed_version(hipcc) or LATEST
    out = tmp_path / project.name
    translated = corpus.translate_project(project, hipify_compile.rocmkit_tool(version), out)
    lacking = hipify_compile.names_lacking(
        list(translated.values()), hip_names(resolve_version(version))
    )
    assert dict(lacking) == {}, f"names HIP {version} does not declare"
    errors = corpus.compile_project(project, out, translated, str(hipcc))
    failures = {file: error for file, error in errors.items() if error is not None}
    num_compiled = len(errors) - len(failures)
    assert num_compiled >= project.min_compile, failures
