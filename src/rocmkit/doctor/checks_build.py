"""Checks on the torch build and the ROCm userspace: the wheel fits the hardware, the GPU's
gfx target is compiled in, ROCm userspace and tools agree with torch."""

from __future__ import annotations

from rocmkit.doctor.context import DoctorContext
from rocmkit.doctor.findings import Finding
from rocmkit.doctor.registry import register
from rocmkit.platform.smi import (
    SmiParseError,
    parse_amd_smi_version,
    parse_rocm_smi_json,
    parse_rocminfo,
)
from rocmkit.platform.specs import arch_facts, normalize_arch
from rocmkit.platform.versions import rocm_version_with_source

# Index URLs of the official wheels; pytorch.org/get-started lists which ROCm/CUDA versions
# each torch release is built for.
DEFAULT_ROCM_WHEEL = "rocm6.4"
DEFAULT_CUDA_WHEEL = "cu128"


def rocm_install_command(ctx: DoctorContext) -> str:
    version = ctx.platform.rocm_version or ""
    parts = version.split(".")
    tag = (
        f"rocm{parts[0]}.{parts[1]}"
        if len(parts) >= 2 and int(parts[0]) >= 6
        else DEFAULT_ROCM_WHEEL
    )
    return (
        f"pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/{tag}"
        "  (use the ROCm version pytorch.org lists for your torch release)"
    )


def cuda_install_command() -> str:
    return f"pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/{DEFAULT_CUDA_WHEEL}"


def _build_label(ctx: DoctorContext) -> str:
    p = ctx.platform
    if p.backend == "rocm":
        return f"torch {p.torch_version} (ROCm build, HIP {p.hip_version})"
    if p.backend == "cuda":
        return f"torch {p.torch_version} (CUDA {p.cuda_version} build)"
    return f"torch {p.torch_version} (CPU-only build)"


@register("torch-build", "torch importable, and its build matches the GPUs here", order=1)
def check_torch_build(ctx: DoctorContext) -> Finding:
    facts = ctx.torch_facts()
    amd, nvidia = ctx.has_hardware("amd"), ctx.has_hardware("nvidia")
    if not facts.importable or ctx.platform.torch_version is None:
        fix = (
            rocm_install_command(ctx)
            if amd
            else cuda_install_command()
            if nvidia
            else ("pip install torch --index-url https://download.pytorch.org/whl/cpu")
        )
        return Finding(
            id="torch-build",
            status="fail",
            summary="torch cannot be imported",
            detail=facts.import_error or "",
            fix=fix,
        )
    label, backend = _build_label(ctx), ctx.platform.backend
    if amd and not nvidia and backend != "rocm":
        return Finding(
            id="torch-build",
            status="fail",
            summary=f"{label} on a machine with AMD GPUs: it cannot use them",
            detail="A CUDA or CPU wheel never sees AMD GPUs ('Found no NVIDIA driver').",
            fix=rocm_install_command(ctx),
        )
    if nvidia and not amd and backend != "cuda":
        return Finding(
            id="torch-build",
            status="fail",
            summary=f"{label} on a machine with NVIDIA GPUs: it cannot use them",
            fix=cuda_install_command(),
        )
    if not (amd or nvidia):
        return Finding(
            id="torch-build", status="ok", summary=f"{label}; no GPU found, work runs on the CPU"
        )
    if not ctx.platform.gpu_available:
        return Finding(
            id="torch-build",
            status="warn",
            summary=f"{label} fits the hardware, but torch.cuda.is_available() is False",
            detail="See the kernel-driver, visible-devices and rocm-userspace findings.",
        )
    count = sum(d.visible_to_torch for d in ctx.gpus())
    return Finding(id="torch-build", status="ok", summary=f"{label}; torch uses {count} GPU(s)")


def _effective_targets(ctx: DoctorContext) -> dict[str, str]:
    """device label -> the gfx target HIP will load kernels for (after HSA_OVERRIDE_GFX_VERSION)."""
    from rocmkit.doctor.checks_env import override_target

    override = override_target(ctx.env.get("HSA_OVERRIDE_GFX_VERSION"))
    return {
        f"{d.index} {d.name}": override or normalize_arch(d.arch) or "unknown"
        for d in ctx.gpus("amd")
    }


@register("gfx-arch-list", "each AMD GPU's gfx target is compiled into torch", order=2)
def check_gfx_arch_list(ctx: DoctorContext) -> Finding:
    if not ctx.gpus("amd"):
        return Finding(id="gfx-arch-list", status="skip", summary="no AMD GPU found")
    if ctx.platform.backend != "rocm":
        return Finding(
            id="gfx-arch-list", status="skip", summary="torch is not a ROCm build (see torch-build)"
        )
    compiled = {normalize_arch(a) for a in ctx.torch_facts().arch_list}
    targets = _effective_targets(ctx)
    listed = ", ".join(sorted(a for a in compiled if a)) or "nothing"
    unknown = [dev for dev, gfx in targets.items() if gfx == "unknown"]
    if unknown:
        return Finding(
            id="gfx-arch-list",
            status="warn",
            summary=f"GPU {unknown[0]}: its gfx target is unknown, cannot compare with torch's list",
            detail=f"torch's arch list: {listed}",
            fix="run `rocminfo | grep gfx` and compare with torch.cuda.get_arch_list()",
        )
    missing = {dev: gfx for dev, gfx in targets.items() if gfx not in compiled}
    if not missing:
        return Finding(
            id="gfx-arch-list",
            status="ok",
            summary=f"every AMD GPU's target is in torch's arch list ({listed})",
        )
    device, gfx = next(iter(missing.items()))
    sibling = _compiled_sibling(gfx, compiled)
    if sibling:
        fix = f"export HSA_OVERRIDE_GFX_VERSION={_override_for(sibling)}  (runs {gfx} as {sibling}, same family)"
    else:
        fix = f"install a torch wheel built for {gfx}: {rocm_install_command(ctx)}"
    return Finding(
        id="gfx-arch-list",
        status="fail",
        summary=f"GPU {device} is {gfx}, which torch was not compiled for",
        detail=f"torch's arch list: {listed}. Kernels fail with 'HIP error: invalid "
        "device function' / hipErrorNoBinaryForGpu.",
        fix=fix,
    )


def _compiled_sibling(gfx: str, compiled: set[str | None]) -> str | None:
    """A compiled target of the same family that an override could borrow (gfx1031 -> gfx1030)."""
    facts = arch_facts(gfx)
    if facts is None or facts.family.startswith("CDNA"):
        return None  # CDNA chips differ in matrix units; borrowing another's kernels is unsafe
    same = sorted(a for a in compiled if a and (f := arch_facts(a)) and f.family == facts.family)
    return same[0] if same else None


def _override_for(gfx: str) -> str:
    """ "gfx1030" -> "10.3.0", "gfx90a" -> "9.0.10"."""
    digits = gfx[3:]
    major = digits[:-2]
    return f"{int(major)}.{int(digits[-2], 16)}.{int(digits[-1], 16)}"


@register(
    "rocm-userspace", "ROCm userspace present, matching torch's HIP, tools answering", order=6
)
def check_rocm_userspace(ctx: DoctorContext) -> Finding:
    version, source = rocm_version_with_source(ctx.root)
    amd = ctx.has_hardware("amd")
    where = f"ROCm userspace {version} ({source})" if version else "no ROCm userspace installed"
    rocminfo = _rocminfo_state(ctx)
    smi = _rocm_smi_state(ctx)
    detail = f"rocminfo: {rocminfo}. rocm-smi: {smi}. amd-smi: {_amd_smi_state(ctx)}."
    if not amd and ctx.platform.backend != "rocm":
        return Finding(
            id="rocm-userspace",
            status="skip",
            summary=f"no AMD GPU; {where}; rocminfo: {rocminfo}",
            detail=detail,
        )
    if "hung" in rocminfo or "hung" in smi:
        return Finding(
            id="rocm-userspace",
            status="fail",
            summary=f"{where}; a ROCm tool hung",
            detail=detail,
            fix="check `dmesg | grep -i amdgpu` for GPU resets; reboot if the GPU is wedged",
        )
    if amd and "module is NOT loaded" in rocminfo:
        return Finding(
            id="rocm-userspace",
            status="fail",
            summary=f"{where}; rocminfo says the amdgpu/KFD driver is not loaded",
            detail=detail,
            fix="sudo modprobe amdgpu  (install amdgpu-dkms if it is missing)",
        )
    hip_major = (ctx.platform.hip_version or "").split(".")[0]
    if version and hip_major and version.split(".")[0] != hip_major:
        return Finding(
            id="rocm-userspace",
            status="warn",
            summary=f"{where}, but torch was built against HIP {ctx.platform.hip_version}",
            detail=detail + " torch wheels bundle their own ROCm libraries, but tools, "
            "extensions and hipcc builds use the system ones.",
            fix=f"install ROCm {hip_major}.x userspace, or {rocm_install_command(ctx)}",
        )
    if not version:
        return Finding(
            id="rocm-userspace",
            status="warn",
            summary=where,
            detail=detail,
            fix="install ROCm (amdgpu-install --usecase=rocm) for rocminfo, rocm-smi and hipcc",
        )
    return Finding(id="rocm-userspace", status="ok", summary=where, detail=detail)


def _rocminfo_state(ctx: DoctorContext) -> str:
    result = ctx.tool("rocminfo")
    if not result.ran:
        return _not_run(result.error)
    try:
        report = parse_rocminfo(result.stdout + result.stderr)
    except SmiParseError as exc:
        return f"unreadable output (exit {result.returncode}: {exc})"
    if not report.kfd_module_loaded:
        return f"ROCk module is NOT loaded (exit {result.returncode})"
    names = sorted({g.gfx_target or g.name for g in report.gpus})
    return f"{len(report.gpus)} GPU agent(s) {', '.join(names)}"


def _rocm_smi_state(ctx: DoctorContext) -> str:
    # Its exit code means nothing: 0 with empty stdout when the driver is missing.
    result = ctx.tool("rocm-smi", "--showproductname", "--json")
    if not result.ran:
        return _not_run(result.error)
    if not result.stdout.strip():
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        return f"printed nothing (exit {result.returncode}){': ' + lines[-1] if lines else ''}"
    try:
        report = parse_rocm_smi_json(result.stdout)
    except SmiParseError as exc:
        return f"unreadable output (exit {result.returncode}: {exc})"
    names = sorted({c.name or "?" for c in report.cards})
    return f"{len(report.cards)} card(s) {', '.join(names)}"


def _amd_smi_state(ctx: DoctorContext) -> str:
    """amd-smi (ROCm >= 6) reports the ROCm version its library belongs to."""
    result = ctx.tool("amd-smi", "version")
    if not result.ran:
        return _not_run(result.error)
    try:
        fields = parse_amd_smi_version(result.stdout)
    except SmiParseError:
        return f"unreadable output (exit {result.returncode})"
    return f"ROCm {fields.get('ROCm version', '?')}, library {fields.get('AMDSMI Library version', '?')}"


def _not_run(error: str | None) -> str:
    return f"hung ({error})" if "timed out" in str(error) else str(error)
