"""The few facts at the top of every report: what ran where, said the way a person would say it.

A CPU run names the CPU, not the torch build's accelerator (`cuda`) or GPU libraries it never used;
ROCm and CUDA versions appear only for a GPU run of that backend (an NVIDIA box with a stray
libamdhip64 package is not a ROCm machine). Facts a run did not record are left out, never `?`.
"""

from __future__ import annotations

from typing import Any

from rocmkit.report.tables import run_label
from rocmkit.results import RunResult

# Commands whose record is a document about files, not a measurement on a device.
DOCUMENT_KINDS = frozenset({"hipify", "port"})


def environment_summary(run: RunResult) -> list[tuple[str, str]]:
    """Key facts of where a run happened, for the top of every report."""
    env: dict[str, Any] = run.environment
    if run.kind in DOCUMENT_KINDS and "devices" not in env:
        # hipify and port read source files: no device ran anything, so say nothing about one.
        return [("label", run_label(run)), ("created", _created(run))]
    on_gpu = bool(env.get("gpu_available")) and env.get("torch_device", "cuda") != "cpu"
    rows = [("label", run_label(run)), ("ran on", _device_line(env, on_gpu))]
    rows.append(("software", _software_line(env, on_gpu)))
    cpu = _cpu_line(env)
    if cpu:
        rows.append(("cpu", cpu))
    if on_gpu or env.get("power_reader"):
        rows.append(("power sensor", str(env.get("power_reader") or "none found")))
    if env.get("load"):
        rows.append(("machine load", load_summary(env["load"])))
    rows.append(("created", _created(run)))
    return rows


def _created(run: RunResult) -> str:
    return f"{run.created_at}, rocmkit {run.rocmkit_version}"


def _device_line(env: dict[str, Any], on_gpu: bool) -> str:
    devices = [d for d in env.get("devices") or [] if isinstance(d, dict)]
    names = ", ".join(str(d.get("name")) for d in devices)
    if on_gpu:
        return names or f"a {env.get('backend', 'GPU')} GPU"
    model = (env.get("cpu") or {}).get("model")
    text = f"CPU ({model})" if model else "CPU"
    return text + (f"; GPU present but not used: {names}" if names else "; no GPU used")


def _software_line(env: dict[str, Any], on_gpu: bool) -> str:
    parts = [f"torch {env.get('torch_version')}"] if env.get("torch_version") else []
    backend = env.get("backend")
    if on_gpu and backend == "rocm":
        parts += [f"HIP {env['hip_version']}"] if env.get("hip_version") else []
        parts += [f"ROCm {env['rocm_version']}"] if env.get("rocm_version") else []
    elif on_gpu and backend == "cuda" and env.get("cuda_version"):
        parts.append(f"CUDA {env['cuda_version']}")
    elif not on_gpu and backend in ("cuda", "rocm") and parts:
        parts[0] += f" ({'ROCm' if backend == 'rocm' else 'CUDA'} build, run on the CPU)"
    if env.get("driver_version") and on_gpu:
        parts.append(f"driver {env['driver_version']}")
    return ", ".join(parts) or "not recorded"


def _cpu_line(env: dict[str, Any]) -> str:
    cpu = env.get("cpu") or {}
    parts = [str(cpu["model"])] if cpu.get("model") else []
    threads = env.get("torch_num_threads")
    if isinstance(threads, int):
        parts.append(f"{threads} torch thread{'s' if threads != 1 else ''}")
    return ", ".join(parts)


def load_summary(load: dict[str, Any]) -> str:
    """What other processes did before each suite, and the threads bench chose for it."""
    parts = []
    for suite, facts in load.items():
        if not isinstance(facts, dict):
            continue
        text = f"{suite}: other processes used {facts.get('other_cores_before', '?')} cores"
        if facts.get("threads"):
            text += f", {facts['threads']} torch thread(s) ({facts.get('threads_reason')})"
        parts.append(text)
    return "; ".join(parts)
