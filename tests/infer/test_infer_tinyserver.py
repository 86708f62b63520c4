"""The offline try-out of `rocmkit infer serve`: `python -m rocmkit.infer.tinyserver` serves the
random tiny model, and the real command measures it end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmkit.results import load_result

pytest.importorskip("transformers")

SRC = Path(__file__).resolve().parents[2] / "src"


def _pythonpath() -> str:
    """This checkout's src first, then the caller's PYTHONPATH (where extras may be installed)."""
    return os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)


def _start_server(model_dir: Path) -> tuple[subprocess.Popen[str], str]:
    """The server as a user starts it, on a free port; its URL is read from its log line."""
    env = {**os.environ, "PYTHONPATH": _pythonpath(), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "rocmkit.infer.tinyserver", "--port", "0",
           "--model-dir", str(model_dir)]  # fmt: skip
    server = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    assert server.stderr is not None
    deadline = time.monotonic() + 120
    for line in server.stderr:  # transformers' progress lines come first
        if line.startswith("serving "):
            return server, line.split(" at ")[1].split()[0]
        if time.monotonic() > deadline:
            break
    server.kill()
    pytest.fail(f"the tiny server did not start (exit {server.wait(10)})")


@pytest.fixture(scope="module")
def tiny_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server, url = _start_server(tmp_path_factory.mktemp("served") / "tiny-model")
    yield url
    server.terminate()
    server.wait(30)


def _rocmkit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": _pythonpath(), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "rocmkit", *args]
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("api", ["completions", "chat"])
def test_infer_serve_measures_the_tiny_server(tiny_server: str, tmp_path: Path, api: str) -> None:
    """The README's try-out: the server's model is discovered, every request streams tokens."""
    done = _rocmkit("infer", "serve", "--url", tiny_server, "--api", api, "--num-prompts", "4",
                    "--input-len", "8", "--output-len", "5", "--concurrency", "2",
                    "--out", str(tmp_path / "run"), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    values = {m.metric: m for m in load_result(tmp_path / "run").measurements}
    assert values["num_completed"].value == 4 and values["num_failed"].value == 0
    # the server's usage counts the tokens: 4 answers of exactly 5 tokens each
    assert values["num_completed"].extra["tokens_from_usage"]
    assert values["total_output_tokens"].value == 20
    # timed: a tiny model's tokens may share one read (ITL 0), so only TTFT is surely above 0
    ttft_ms, e2e_ms = values["ttft_ms_p50"].value, values["e2e_ms_p50"].value
    assert ttft_ms is not None and e2e_ms is not None and 0 < ttft_ms <= e2e_ms


@pytest.mark.slow
def test_tiny_server_answers_like_an_openai_server(tiny_server: str) -> None:
    """The routes a client relies on: the model list, a whole answer, and 404 for another model."""
    with urllib.request.urlopen(f"{tiny_server}/models", timeout=30) as answer:
        served = [model["id"] for model in json.load(answer)["data"]]
    assert served == ["rocmkit-tiny"]
    body = {"model": "rocmkit-tiny", "prompt": "hello there", "max_tokens": 3}
    request = urllib.request.Request(f"{tiny_server}/completions", json.dumps(body).encode())
    with urllib.request.urlopen(request, timeout=60) as answer:
        whole = json.load(answer)
    assert len(whole["choices"][0]["text"].split()) == 3
    assert whole["usage"] == {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    other = urllib.request.Request(
        f"{tiny_server}/completions", json.dumps({**body, "model": "gpt-5"}).encode()
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(other, timeout=30)
    assert refused.value.code == 404
