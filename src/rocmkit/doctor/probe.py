"""Tiny torch ops on each device, in a subprocess with a timeout so a hung GPU cannot hang the
doctor: a matmul and an elementwise kernel compared with the CPU, fp16/bf16 matmuls, and each
scaled-dot-product-attention backend. `python -m rocmkit.doctor.probe` prints the JSON report."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocmkit.platform.smi import run_command

SDPA_BACKENDS = ("flash", "efficient", "cudnn", "math")


@dataclass(frozen=True, kw_only=True)
class Outcome:
    status: str  # "ok" | "wrong" (ran, wrong numbers) | "error" | "unsupported"
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class DeviceProbe:
    device: str  # "cuda:0" or "cpu"
    name: str
    outcomes: dict[str, Outcome] = field(default_factory=dict)  # "smoke.matmul", "sdpa.flash"...


@dataclass(frozen=True, kw_only=True)
class ProbeReport:
    devices: tuple[DeviceProbe, ...] = ()
    gpu: bool = False  # False: only the CPU was probed (torch has no usable GPU)
    error: str | None = None  # the probe itself failed or timed out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeReport:
        devices = tuple(
            DeviceProbe(
                device=d["device"],
                name=d["name"],
                outcomes={k: Outcome(**v) for k, v in d["outcomes"].items()},
            )
            for d in data["devices"]
        )
        return cls(devices=devices, gpu=bool(data["gpu"]), error=data.get("error"))


def run_probe(env: Mapping[str, str], timeout_s: float) -> ProbeReport:
    """Run this module in a fresh interpreter with `env`; never raises."""
    src_dir = str(Path(__file__).resolve().parents[2])
    child_env = dict(env)
    child_env["PYTHONPATH"] = src_dir + (
        ":" + child_env["PYTHONPATH"] if child_env.get("PYTHONPATH") else ""
    )
    child_env.setdefault("OMP_NUM_THREADS", "1")
    result = run_command(
        [sys.executable, "-m", "rocmkit.doctor.probe"], timeout_s=timeout_s, env=child_env
    )
    if result.error and "timed out" in result.error:
        return ProbeReport(error=f"{result.error} (a GPU kernel or driver call hung)")
    if result.error:
        return ProbeReport(error=f"could not start the probe: {result.error}")
    lines = result.stdout.strip().splitlines()
    try:
        return ProbeReport.from_dict(json.loads(lines[-1]))
    except (IndexError, ValueError, KeyError, TypeError):
        stderr = result.stderr.strip().splitlines()
        why = stderr[-1] if stderr else f"exit code {result.returncode}"
        return ProbeReport(error=f"the probe process died: {why}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:200]


def _compare(torch: Any, got: Any, want: Any, tolerance: float) -> Outcome:
    error = float((got.float().cpu() - want).abs().max())
    scale = float(want.abs().max()) or 1.0
    if error <= tolerance * scale and bool(torch.isfinite(got).all()):
        return Outcome(status="ok", detail=f"max abs error {error:.2e}")
    return Outcome(
        status="wrong", detail=f"max abs error {error:.2e} (tolerance {tolerance * scale:.2e})"
    )


def _attempt(fn: Any) -> Outcome:
    try:
        result: Outcome = fn()
        return result
    except Exception as exc:  # each probe reports its own failure; the others still run
        message = _first_line(exc)
        unsupported = any(
            s in message
            for s in (
                "No available kernel",
                "No viable backend",
                "not supported",
                "not implemented",
            )
        )
        return Outcome(status="unsupported" if unsupported else "error", detail=message)


def probe_device(torch: Any, device: str) -> dict[str, Outcome]:
    """Every probe on one device; pure torch, small enough to finish in milliseconds on a GPU."""
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 64, generator=gen), torch.randn(64, 64, generator=gen)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def matmul(dtype: Any, tolerance: float) -> Outcome:
        got = a.to(device, dtype) @ b.to(device, dtype)
        sync()
        return _compare(torch, got, a @ b, tolerance)

    def elementwise() -> Outcome:
        got = torch.sin(a.to(device)) * 2 + b.to(device)
        sync()
        return _compare(torch, got, torch.sin(a) * 2 + b, 1e-5)

    outcomes = {
        # TF32 may be on for fp32 matmuls on GPUs, hence the loose fp32 tolerance.
        "smoke.matmul": _attempt(lambda: matmul(torch.float32, 5e-3)),
        "smoke.elementwise": _attempt(elementwise),
        "dtype.fp16": _attempt(lambda: matmul(torch.float16, 2e-2)),
        "dtype.bf16": _attempt(lambda: matmul(torch.bfloat16, 5e-2)),
    }
    outcomes.update(_probe_sdpa(torch, device, sync))
    return outcomes


def _probe_sdpa(torch: Any, device: str, sync: Any) -> dict[str, Outcome]:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention

    kinds = {
        "flash": SDPBackend.FLASH_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
        "math": SDPBackend.MATH,
    }
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 2, 16, 64, generator=gen) for _ in range(3))
    want = torch.softmax(q @ k.transpose(-1, -2) / 8.0, dim=-1) @ v  # 8 = sqrt(head dim 64)
    dtype = torch.float16 if device.startswith("cuda") else torch.float32

    def run(kind: Any) -> Outcome:
        with sdpa_kernel([kind]):
            got = scaled_dot_product_attention(*(t.to(device, dtype) for t in (q, k, v)))
        sync()
        return _compare(torch, got, want, 2e-2)

    return {f"sdpa.{name}": _attempt(lambda kind=kind: run(kind)) for name, kind in kinds.items()}


def main() -> None:
    warnings.simplefilter("ignore")  # torch warns for each unavailable SDPA backend
    import torch

    gpu = bool(torch.cuda.is_available()) and torch.cuda.device_count() > 0
    targets = [f"cuda:{i}" for i in range(torch.cuda.device_count())] if gpu else ["cpu"]
    devices = []
    for device in targets:
        name = torch.cuda.get_device_name(device) if gpu else "CPU"
        outcomes = probe_device(torch, device)
        devices.append(
            {"device": device, "name": name, "outcomes": {k: vars(v) for k, v in outcomes.items()}}
        )
    print(json.dumps({"devices": devices, "gpu": gpu}))


def start_probe(env: Mapping[str, str], timeout_s: float) -> Future[ProbeReport]:
    """Start `run_probe` in a background thread, so torch imports in the child while the parent
    detects the platform; `.result()` collects it."""
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rocmkit-probe")
    future = executor.submit(run_probe, dict(env), timeout_s)
    executor.shutdown(wait=False)
    return future


if __name__ == "__main__":
    main()
