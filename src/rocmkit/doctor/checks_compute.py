"""Checks that run tiny torch ops (in the probe subprocess): dtype truth, SDPA backends, and a
smoke test of each device against the CPU."""

from __future__ import annotations

import functools
from collections.abc import Callable

from rocmkit.doctor.context import DoctorContext
from rocmkit.doctor.findings import Finding, Status
from rocmkit.doctor.probe import SDPA_BACKENDS, DeviceProbe
from rocmkit.doctor.registry import CheckFn, register
from rocmkit.platform.specs import arch_facts

PROBE_FIX = "run `rocmkit doctor --check smoke` again; if it hangs, check `dmesg` for GPU resets"


def _probe_failed(ctx: DoctorContext, check_id: str) -> Finding | None:
    report = ctx.probe()
    if report.error:
        return Finding(
            id=check_id,
            status="fail",
            summary=f"device probe failed: {report.error}",
            fix=PROBE_FIX,
        )
    if not report.devices:
        return Finding(
            id=check_id, status="fail", summary="device probe returned no devices", fix=PROBE_FIX
        )
    return None


def _probe_check(check_id: str, title: str, *, order: int) -> Callable[[CheckFn], CheckFn]:
    """Register a check that reads the device probe; when the probe failed, that failure is the
    check's finding and the check itself does not run."""

    def decorate(fn: CheckFn) -> CheckFn:
        @functools.wraps(fn)
        def guarded(ctx: DoctorContext) -> Finding:
            return _probe_failed(ctx, check_id) or fn(ctx)

        return register(check_id, title, order=order, uses_probe=True)(guarded)

    return decorate


def _no_gpu_note(ctx: DoctorContext) -> str:
    return "" if ctx.probe().gpu else " (no GPU: ran on the CPU only)"


def _arch_of(ctx: DoctorContext, probe: DeviceProbe) -> str | None:
    if not probe.device.startswith("cuda:"):
        return None
    index = int(probe.device.split(":")[1])
    visible = [d for d in ctx.gpus() if d.visible_to_torch]
    return visible[index].arch if index < len(visible) else None


@_probe_check(
    "smoke",
    "a matmul and an elementwise kernel on each device match the CPU",
    order=10,
)
def check_smoke(ctx: DoctorContext) -> Finding:
    bad, lines = [], []
    for probe in ctx.probe().devices:
        for key in ("smoke.matmul", "smoke.elementwise"):
            outcome = probe.outcomes.get(key)
            lines.append(
                f"{probe.device} {key}: {outcome.status if outcome else 'missing'} {outcome.detail if outcome else ''}"
            )
            if outcome is None or outcome.status != "ok":
                bad.append(
                    f"{probe.device} ({probe.name}) {key.split('.')[1]}: "
                    f"{outcome.detail if outcome else 'not run'}"
                )
    if bad:
        return Finding(
            id="smoke",
            status="fail",
            summary=f"wrong or failed kernel: {bad[0]}",
            detail="\n".join(lines),
            fix="see gfx-arch-list and hsa-override; then `rocmkit doctor --explain` on the error",
        )
    names = ", ".join(
        p.device if p.device == "cpu" else f"{p.device} ({p.name})" for p in ctx.probe().devices
    )
    if ctx.gpus() and not ctx.probe().gpu:
        return Finding(
            id="smoke",
            status="warn",
            summary=f"{len(ctx.gpus())} GPU(s) here, but torch cannot use them: tested the CPU only",
            detail="\n".join(lines),
            fix="fix the failing torch-build / kernel-driver findings first",
        )
    return Finding(
        id="smoke",
        status="ok",
        summary=f"matmul and elementwise correct on {names}{_no_gpu_note(ctx)}",
        detail="\n".join(lines),
        evidence=("gpu-kernels-ran",) if ctx.probe().gpu else (),
    )


@_probe_check(
    "sdpa",
    "which scaled-dot-product-attention backends work on each device",
    order=9,
)
def check_sdpa(ctx: DoctorContext) -> Finding:
    parts, detail = [], []
    status: Status = "ok"
    for probe in ctx.probe().devices:
        states = {b: _status(probe, f"sdpa.{b}") for b in SDPA_BACKENDS}
        working = [b for b, state in states.items() if state == "ok"]
        parts.append(f"{probe.device}: {', '.join(working) or 'none'} work")
        for b in SDPA_BACKENDS:
            outcome = probe.outcomes.get(f"sdpa.{b}")
            if outcome:
                detail.append(f"{probe.device} sdpa.{b}: {outcome.status} {outcome.detail}")
        # math is the reference path: if it fails, or any backend computes wrong numbers, fail.
        if "math" not in working or "wrong" in states.values():
            status = "fail"
        elif probe.device != "cpu" and not {"flash", "efficient"} & set(working) and status == "ok":
            status = "warn"  # works, but only through the slow, memory-hungry math path
    fix = {
        "fail": "a backend fails or computes wrong results: avoid it with "
        "torch.nn.attention.sdpa_kernel and report it",
        "warn": "no fused attention kernel on this GPU: install a newer torch wheel for it",
        "ok": "",
        "skip": "",
    }[status]
    return Finding(
        id="sdpa",
        status=status,
        summary="; ".join(parts) + _no_gpu_note(ctx),
        detail="\n".join(detail),
        fix=fix,
    )


def _status(probe: DeviceProbe, key: str) -> str:
    outcome = probe.outcomes.get(key)
    return outcome.status if outcome else "missing"


@_probe_check(
    "dtypes",
    "bf16 truly supported, fp16 works, which fp8 flavour the GPU uses",
    order=8,
)
def check_dtypes(ctx: DoctorContext) -> Finding:
    facts = ctx.torch_facts()
    status: Status = "ok"
    parts: list[str] = []
    fix = ""
    for probe in ctx.probe().devices:
        arch = _arch_of(ctx, probe)
        info = arch_facts(arch)
        for dtype in ("fp16", "bf16"):
            if _status(probe, f"dtype.{dtype}") != "ok":
                status, fix = (
                    "fail",
                    f"avoid {dtype} on {probe.device}: use {'fp16' if dtype == 'bf16' else 'fp32'}",
                )
                parts.append(
                    f"{probe.device} {dtype} matmul {probe.outcomes[f'dtype.{dtype}'].detail or 'failed'}"
                )
        if probe.device == "cpu":
            fast = [
                f
                for f in (ctx.platform.cpu.flags if ctx.platform.cpu else ())
                if "bf16" in f or "amx" in f
            ]
            parts.append(
                f"CPU: fp16/bf16 work; bf16 fast path {'via ' + ', '.join(fast) if fast else 'absent (emulated)'}"
            )
            continue
        if info is None:
            parts.append(f"{probe.device}: unknown arch {arch}: bf16/fp8 support not known")
            status = "warn" if status == "ok" else status
            continue
        if not info.bf16_hardware:
            status = "warn" if status == "ok" else status
            fix = fix or "use fp16 (with a GradScaler) instead of bf16 on this GPU"
            parts.append(
                f"{probe.device} {arch} ({info.family}): no bf16 hardware; torch says "
                f"{'supported' if facts.bf16_supported else 'unsupported'} but real bf16 kernels may crash"
            )
        flavour = info.fp8_flavour
        if flavour and f"float8_{flavour}" not in facts.dtypes:
            status = "warn" if status == "ok" else status
            parts.append(
                f"{probe.device}: fp8 needs torch.float8_{flavour}, which this torch lacks"
            )
        else:
            parts.append(
                f"{probe.device} {arch}: bf16 {'ok' if info.bf16_hardware else 'emulated'}, "
                f"fp8 {'torch.float8_' + flavour if flavour else 'none'}"
            )
    summary = parts[0] if len(parts) == 1 else "; ".join(parts)
    return Finding(id="dtypes", status=status, summary=summary + _no_gpu_note(ctx), fix=fix)
