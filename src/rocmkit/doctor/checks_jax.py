"""The JAX backend of `rocmkit train --backend jax`: is JAX installed, which devices it sees, and
on AMD (NVIDIA) hardware whether the ROCm (CUDA) plugin that gives it the GPUs is there.

JAX is asked in a child process with a deadline (ctx.runner): importing it initialises its
backends, which a broken GPU stack can hang, and the doctor must never hang.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any

from rocmkit.doctor.context import DoctorContext
from rocmkit.doctor.findings import Finding
from rocmkit.doctor.registry import register

JAX_TIMEOUT_S = 60.0
INSTALL = "pip install 'rocmkit[jax]'"
# AMD publishes jax-rocm7-pjrt + jax-rocm7-plugin (jax-rocm60-* before ROCm 7), one version
# per jaxlib release; NVIDIA's come from PyPI as jax[cuda12] / jax[cuda13].
ROCM_FIX = (
    "install the jax-rocm7-pjrt and jax-rocm7-plugin wheels of your jaxlib version from "
    "repo.radeon.com (AMD's 'Install JAX for ROCm' page), then check with "
    "`python -c 'import jax; print(jax.devices())'`"
)
CUDA_FIX = "pip install -U 'jax[cuda12]' (or jax[cuda13] on a CUDA 13 driver)"

# Runs in the child: prints one JSON line whatever happens.
_PROBE = """
import json, importlib.metadata as md
out = {"plugins": sorted(
    f"{d.metadata['Name']}=={d.version}" for d in md.distributions()
    if (d.metadata['Name'] or '').lower().startswith(('jax-rocm', 'jax_rocm', 'jax-cuda', 'jax_cuda'))
)}
try:
    import jax, jaxlib
    out.update(jax=jax.__version__, jaxlib=jaxlib.__version__)
    devices = jax.devices()
    out.update(platform=devices[0].platform, devices=[d.device_kind for d in devices])
except ImportError as exc:
    out["missing"] = str(exc)
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


@dataclass(frozen=True, kw_only=True)
class JaxFacts:
    """What the child process found."""

    version: str | None = None
    jaxlib: str | None = None
    platform: str | None = None  # "cpu", "gpu", "rocm", "cuda"
    devices: tuple[str, ...] = ()
    plugins: tuple[str, ...] = field(default_factory=tuple)
    error: str | None = None  # JAX imported but failed to start a backend


def collect_jax_facts(ctx: DoctorContext) -> JaxFacts | str:
    """The facts, or a one-line reason the child could not tell (timeout, crash)."""
    result = ctx.runner([sys.executable, "-c", _PROBE], JAX_TIMEOUT_S)
    if not result.ran:
        return f"could not ask JAX: {result.error}"
    lines = result.stdout.strip().splitlines()
    try:
        data: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    except json.JSONDecodeError:
        data = {}
    if not data:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return f"importing JAX crashed (exit {result.returncode}): {tail[:200]}"
    return JaxFacts(
        version=data.get("jax"),
        jaxlib=data.get("jaxlib"),
        platform=data.get("platform"),
        devices=tuple(data.get("devices", ())),
        plugins=tuple(data.get("plugins", ())),
        error=data.get("error"),
    )


@register("jax", "JAX (for train --backend jax) is installed and sees the GPUs", order=12)
def check_jax(ctx: DoctorContext) -> Finding:
    facts = collect_jax_facts(ctx)
    if isinstance(facts, str):
        return Finding(id="jax", status="warn", summary=facts, fix=f"reinstall JAX: {INSTALL}")
    if facts.version is None:
        return Finding(
            id="jax",
            status="skip",
            summary="JAX is not installed (only `rocmkit train --backend jax` needs it)",
            fix=INSTALL,
        )
    vendor = "amd" if ctx.has_hardware("amd") else "nvidia" if ctx.has_hardware("nvidia") else None
    plugins = ", ".join(facts.plugins) or "no GPU plugin"
    label = f"JAX {facts.version} (jaxlib {facts.jaxlib}; {plugins})"
    if facts.error:
        return Finding(
            id="jax",
            status="fail",
            summary=f"{label} fails to start: {facts.error[:200]}",
            fix=_gpu_fix(vendor) or f"reinstall JAX: {INSTALL}",
        )
    devices = (
        f"{len(facts.devices)} {facts.platform} device(s) ({', '.join(sorted(set(facts.devices)))})"
    )
    if facts.platform == "cpu" and vendor is not None:
        return Finding(
            id="jax",
            status="warn",
            summary=f"{label} sees only the CPU although this machine has {vendor.upper()} GPUs",
            detail=_mismatch(facts),
            fix=_gpu_fix(vendor) or "",
        )
    return Finding(id="jax", status="ok", summary=f"{label} sees {devices}")


def _gpu_fix(vendor: str | None) -> str | None:
    return {"amd": ROCM_FIX, "nvidia": CUDA_FIX}.get(vendor or "")


def _mismatch(facts: JaxFacts) -> str:
    """A plugin whose version differs from jaxlib's is skipped by JAX at start-up."""
    odd = [p for p in facts.plugins if facts.jaxlib and not p.endswith(f"=={facts.jaxlib}")]
    if not odd:
        return ""
    return f"plugin version differs from jaxlib {facts.jaxlib}: {', '.join(odd)}"
