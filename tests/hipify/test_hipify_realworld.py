"""Real-world CUDA from PyPI, translated by rocmkit and compiled with the installed hipcc for gfx90a.

The packages (benchmarks/hipify_corpus.toml: version and sha256 pinned) are downloaded by
`scripts/install --test` (or scripts/fetch-hipify-corpus) into .cache/hipify-corpus/. Without them
or without hipcc the compile tests skip, except in CI (CI=true), where that is a failure: the
corpus is the check that translations of code nobody here wrote still compile.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import io
import os
import re
import sys
import tarfile
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


def _sdist(files: dict[str, str]) -> bytes:
    """A gzipped tar with one top folder, as an sdist is."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            member = tarfile.TarInfo(f"demo-1.0/{name}")
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


def test_fetched_sdist_is_unpacked_and_translated_folders_keep_every_file(monkeypatch, tmp_path):
    data = _sdist(
        {
            "src/kernel.cu": '#include "util.inc"\nvoid f() { cudaDeviceSynchronize(); }\n',
            "src/util.inc": "// an extension no tool translates\n",
            "docs/README": "not translated, still there\n",
        }
    )
    project = dataclasses.replace(
        PROJECTS[0], name="demo", version="1.0", file="demo-1.0.tar.gz",
        sha256=hashlib.sha256(data).hexdigest(), translate=("src",), compile=("src/kernel.cu",),
    )  # fmt: skip
    monkeypatch.setattr(corpus, "_download", lambda p: data)
    assert corpus.fetch([project], cache=tmp_path) == []
    assert corpus.is_fetched(project, cache=tmp_path)
    out = tmp_path / "out"
    tool = hipify_compile.rocmkit_tool("5.2")
    translated = corpus.translate_project(project, tool, out, cache=tmp_path)
    kernel = translated[project.root(tmp_path) / "src/kernel.cu"]
    assert "hipDeviceSynchronize()" in kernel.read_text()
    assert (out / "src/util.inc").is_file() and (out / "docs/README").is_file()


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
