"""One config for `rocmkit infer serve`: the class the flags, TOML keys and presets come from is the
one the benchmark runs, with its endpoint, SLOs, ramp and sweep points derived in one place."""

from __future__ import annotations

import dataclasses

import pytest

from rocmkit import infer
from rocmkit.cli.main import build_parser
from rocmkit.errors import UserError
from rocmkit.infer import serve
from rocmkit.infer.command import build_serve
from rocmkit.infer.commands import run_serve
from rocmkit.infer.settings import ServeSettings, load_settings
from rocmkit.platform import Platform

URL = "http://127.0.0.1:9/v1"  # never contacted: the benchmark is replaced where it would be
FLAGS = ["--url", URL, "--model", "m", "--header", "X-Team: infer", "--extra-body", '{"seed": 3}',
         "--slo", "ttft=200ms,e2e=2s", "--rate", "2,4", "--concurrency", "1,8", "--no-stream",
         "--timeout", "30"]  # fmt: skip
TOML = f"""
url = "{URL}"
model = "m"
header = ["X-Team: infer"]
extra_body = {{ seed = 3 }}
slo = "ttft=200ms,e2e=2s"
rate = [2, 4]
concurrency = [1, 8]
stream = false
timeout = 30
"""


def _views(config: ServeSettings) -> tuple:
    return config.endpoint, config.slo_seconds, config.ramp, config.points()


def test_flags_toml_and_python_make_the_config_the_benchmark_runs(tmp_path, monkeypatch):
    plan = build_serve(build_parser().parse_args(["infer", "serve", *FLAGS]))
    (tmp_path / "serve.toml").write_text(TOML)
    from_toml = load_settings("serve", path=tmp_path / "serve.toml")
    from_python = infer.ServeConfig(
        url=URL, model="m", header=["X-Team: infer"], extra_body={"seed": 3},
        slo="ttft=200ms,e2e=2s", rate=(2.0, 4.0), concurrency=(1, 8), stream=False, timeout=30,
    )  # fmt: skip
    assert _views(plan.config) == _views(from_toml) == _views(from_python)
    endpoint = plan.config.endpoint
    assert endpoint.headers == {"X-Team": "infer"} and endpoint.extra_body == {"seed": 3}
    assert (endpoint.stream, endpoint.timeout_s) == (False, 30.0)
    assert plan.config.slo_seconds == {"ttft": 0.2, "e2e": 2.0}
    assert plan.config.points() == [(2.0, 1), (4.0, 1), (2.0, 8), (4.0, 8)]

    received = []

    def fake_benchmark(config, workload, count_tokens=None, on_point=None, **_):
        received.append(config)
        return serve.ServeResult(endpoint=config.endpoint)

    monkeypatch.setattr(serve, "benchmark_server", fake_benchmark)
    result = run_serve(plan, Platform(backend="cpu", torch_version="2.9.0"))
    assert received == [plan.config] and received[0] is plan.config  # no copy on the way
    assert result.config["rate"] == [2.0, 4.0] and result.config["header"] == ["X-Team:***"]


def test_the_derived_views_follow_the_fields():
    config = infer.ServeConfig(url=URL, ramp_up="linear", ramp_up_start_rate=1, ramp_up_end_rate=8)
    assert config.ramp is not None and config.ramp.label() == "linear 1-8"
    assert config.endpoint.model == ""  # the first model the server lists, found at the start
    renamed = dataclasses.replace(config, model="other")
    assert renamed.endpoint.model == "other" and renamed.ramp == config.ramp
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.model = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("given", "needle"),
    [
        ({}, "--url is required"),
        ({"url": "localhost:8000"}, "--url must start with http://"),
        ({"url": URL, "header": ["no-colon"]}, "--header takes NAME:VALUE"),
        ({"url": URL, "extra_body": "[1]"}, "--extra-body must be a JSON object"),
        ({"url": URL, "slo": "tpot=50ms", "stream": False}, "--slo tpot needs streamed"),
        ({"url": URL, "ramp_up": "linear"}, "--ramp-up linear needs --ramp-up-start-rate"),
        ({"url": URL, "rate": (4.0,), "ramp_up_time": -1.0}, "--ramp-up-time"),
        ({"url": URL, "percentiles": (50.0, 100.0)}, "--percentiles takes values"),
        ({"url": URL, "metadata": ["novalue"]}, "--metadata takes KEY=VALUE"),
        ({"url": URL, "run_timeout": 0.0}, "--run-timeout must be positive"),
    ],
)
def test_a_bad_python_config_fails_when_made_naming_the_flag(given, needle):
    with pytest.raises(UserError, match=needle.replace("+", r"\+")):
        infer.ServeConfig(**given)
