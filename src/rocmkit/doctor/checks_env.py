"""Checks on environment variables: HSA_OVERRIDE_GFX_VERSION, device visibility, allocator
settings and collective-communication variables known to cause hangs."""

from __future__ import annotations

import re

from rocmkit.doctor.context import DoctorContext
from rocmkit.doctor.findings import Finding
from rocmkit.doctor.registry import register
from rocmkit.platform.specs import arch_facts, normalize_arch


def override_target(value: str | None) -> str | None:
    """HSA_OVERRIDE_GFX_VERSION "10.3.0" -> "gfx1030" ("9.0.10" -> "gfx90a"); None if malformed."""
    match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", value or "")
    if not match:
        return None
    major, minor, step = (int(g) for g in match.groups())
    if minor > 15 or step > 15:
        return None
    return f"gfx{major}{minor:x}{step:x}"


@register("hsa-override", "HSA_OVERRIDE_GFX_VERSION well-formed and what it maps to", order=3)
def check_hsa_override(ctx: DoctorContext) -> Finding:
    value = ctx.env.get("HSA_OVERRIDE_GFX_VERSION")
    if value is None:
        return Finding(
            id="hsa-override",
            status="ok",
            summary="HSA_OVERRIDE_GFX_VERSION not set: each GPU runs as its own target",
        )
    target = override_target(value)
    if target is None:
        cleaned = override_target(value.strip().strip("\"'"))
        fix = (
            f"export HSA_OVERRIDE_GFX_VERSION={value.strip().strip(chr(34) + chr(39))}"
            if cleaned
            else "export HSA_OVERRIDE_GFX_VERSION=10.3.0  (major.minor.step, e.g. 11.0.0 for gfx1100), or unset it"
        )
        return Finding(
            id="hsa-override",
            status="fail",
            summary=f"HSA_OVERRIDE_GFX_VERSION={value!r} is malformed: the runtime ignores it or fails",
            detail="It must be three numbers N.N.N with no quotes or 'gfx' prefix.",
            fix=fix,
        )
    amd = ctx.gpus("amd")
    if not amd:
        return Finding(
            id="hsa-override",
            status="warn",
            summary=f"HSA_OVERRIDE_GFX_VERSION={value} (-> {target}) has no effect: no AMD GPU",
            fix="unset HSA_OVERRIDE_GFX_VERSION",
        )
    wanted = arch_facts(target)
    for device in amd:
        own = arch_facts(device.arch)
        if own and wanted and own.family != wanted.family:
            return Finding(
                id="hsa-override",
                status="fail",
                summary=f"HSA_OVERRIDE_GFX_VERSION={value} runs GPU {device.index} "
                f"({normalize_arch(device.arch)}, {own.family}) as {target} ({wanted.family})",
                detail="Kernels of another family crash or compute garbage "
                "('Memory access fault', invalid ISA).",
                fix="unset HSA_OVERRIDE_GFX_VERSION",
            )
    own_targets = sorted({normalize_arch(d.arch) or "?" for d in amd})
    return Finding(
        id="hsa-override",
        status="ok",
        summary=f"HSA_OVERRIDE_GFX_VERSION={value}: GPUs {', '.join(own_targets)} run as {target}",
    )


VISIBILITY_VARS = (
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
)


def _parse_visible(value: str) -> list[str] | None:
    """Entries of a *_VISIBLE_DEVICES list (indices or GPU-uuids); None when malformed."""
    entries = [e.strip() for e in value.split(",")]
    if value.strip() == "":
        return []
    if all(re.fullmatch(r"\d+|GPU-[0-9A-Fa-f-]+|MIG-[\w/-]+", e) for e in entries):
        return entries
    return None


@register(
    "visible-devices", "HIP/ROCR/CUDA_VISIBLE_DEVICES consistent; no iGPU as device 0", order=4
)
def check_visible_devices(ctx: DoctorContext) -> Finding:
    set_vars = {name: ctx.env[name] for name in VISIBILITY_VARS if name in ctx.env}
    # torch already applies these variables, so count the hardware (KFD, smi, PCI) too.
    amd, num_gpus = ctx.gpus("amd"), max(len(ctx.gpus()), len(ctx.pci_gpus()))
    shown = ", ".join(f"{k}={v!r}" for k, v in set_vars.items())
    for name, value in set_vars.items():
        entries = _parse_visible(value)
        if entries is None:
            return Finding(
                id="visible-devices",
                status="fail",
                summary=f"{name}={value!r} is malformed",
                detail="Use comma-separated indices (0,1) or GPU UUIDs, no spaces or quotes.",
                fix=f"export {name}=0",
            )
        if entries == [] and num_gpus:
            return Finding(
                id="visible-devices",
                status="fail",
                summary=f"{name} is set but empty: it hides every GPU",
                fix=f"unset {name}",
            )
        too_big = [e for e in entries if e.isdigit() and int(e) >= max(num_gpus, 1)]
        if too_big and num_gpus:
            return Finding(
                id="visible-devices",
                status="fail",
                summary=f"{name}={value} names device {too_big[0]}, but only {num_gpus} GPU(s) exist",
                fix=f"export {name}={','.join(str(i) for i in range(num_gpus))}",
            )
    indices = {k: v for k, v in set_vars.items() if k != "ROCR_VISIBLE_DEVICES"}
    if amd and len(set(indices.values())) > 1:
        return Finding(
            id="visible-devices",
            status="warn",
            summary=f"conflicting device lists: {shown}",
            detail="On ROCm, ROCR_VISIBLE_DEVICES filters first, then HIP_VISIBLE_DEVICES "
            "(CUDA_VISIBLE_DEVICES is an alias) indexes into what is left.",
            fix="keep one: export HIP_VISIBLE_DEVICES=... and unset the others",
        )
    integrated = [d for d in amd if d.is_integrated]
    discrete = [d for d in amd if d.is_integrated is False]
    if integrated and discrete and not set_vars:
        keep = ",".join(str(d.index) for d in discrete)
        return Finding(
            id="visible-devices",
            status="warn",
            summary=f"an integrated GPU ({integrated[0].name}) sits next to a discrete one: "
            "it may be device 0",
            detail="Work meant for the discrete GPU lands on the iGPU or fails with "
            "'invalid kernel image' / hipErrorNoBinaryForGpu.",
            fix=f"export HIP_VISIBLE_DEVICES={keep}",
        )
    if not set_vars:
        seen = f"all {num_gpus} GPU(s) visible" if num_gpus else "no GPU to select"
        return Finding(
            id="visible-devices", status="ok", summary=f"no visibility variable set; {seen}"
        )
    return Finding(id="visible-devices", status="ok", summary=shown)


ALLOC_KEYS = {
    "max_split_size_mb": r"\d+",
    "roundup_power2_divisions": r"\d+|\[.*\]",
    "garbage_collection_threshold": r"0?\.\d+",
    "expandable_segments": r"True|False",
    "pinned_use_cuda_host_register": r"True|False",
    "pinned_use_hip_host_register": r"True|False",
    "pinned_num_register_threads": r"\d+",
    "release_lock_on_cudamalloc": r"True|False",
    "release_lock_on_hipmalloc": r"True|False",
    "backend": r"native|cudaMallocAsync",
    "pinned_use_background_threads": r"True|False",
}
ALLOC_VARS = ("PYTORCH_HIP_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


def parse_alloc_conf(value: str) -> list[str]:
    """Problems in an allocator setting ("key:value,key:value"); [] when it parses."""
    problems = []
    # roundup_power2_divisions may hold a bracketed list with commas: split outside brackets.
    for item in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", value):
        key, sep, setting = item.strip().partition(":")
        if not item.strip():
            continue
        if not sep:
            problems.append(f"{item.strip()!r} is not key:value")
        elif key not in ALLOC_KEYS:
            problems.append(f"unknown option {key!r}")
        elif not re.fullmatch(ALLOC_KEYS[key], setting.strip()):
            problems.append(f"{key}:{setting} has a bad value")
    return problems


# Communication variables: (condition on the value, status, why). Reported, never guessed at.
COMM_RULES = (
    (
        "NCCL_P2P_DISABLE",
        "1",
        "warn",
        "disables GPU peer-to-peer: all-reduce goes through host memory (slow)",
    ),
    (
        "NCCL_SHM_DISABLE",
        "1",
        "warn",
        "disables shared-memory transport between local ranks (slow)",
    ),
    (
        "TORCH_NCCL_ASYNC_ERROR_HANDLING",
        "0",
        "warn",
        "a failed collective hangs instead of raising",
    ),
    ("NCCL_ASYNC_ERROR_HANDLING", "0", "warn", "a failed collective hangs instead of raising"),
    ("NCCL_IB_DISABLE", "1", "ok", "InfiniBand off: multi-node traffic uses TCP sockets"),
    (
        "HSA_ENABLE_SDMA",
        "0",
        "ok",
        "SDMA copies off (a known workaround for hangs on some systems)",
    ),
)


@register(
    "allocator-comm", "allocator settings parse; RCCL/NCCL variables that cause hangs", order=11
)
def check_allocator_comm(ctx: DoctorContext) -> Finding:
    notes: list[str] = []
    for name in ALLOC_VARS:
        if name in ctx.env:
            problems = parse_alloc_conf(ctx.env[name])
            if problems:
                return Finding(
                    id="allocator-comm",
                    status="fail",
                    summary=f"{name}={ctx.env[name]!r}: {problems[0]}",
                    detail="torch raises at the first GPU allocation. Known options: "
                    + ", ".join(ALLOC_KEYS),
                    fix=f"export {name}=expandable_segments:True  (or unset it)",
                )
            notes.append(f"{name}={ctx.env[name]}")
    for name in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
        missing = _missing_interfaces(ctx, ctx.env.get(name))
        if missing:
            return Finding(
                id="allocator-comm",
                status="fail",
                summary=f"{name}={ctx.env[name]} names no interface here ({', '.join(missing)})",
                detail="Process-group initialisation hangs waiting for peers.",
                fix=f"unset {name}, or set it to one of: {', '.join(_interfaces(ctx))}",
            )
    status = "ok"
    for name, bad_value, rule_status, why in COMM_RULES:
        if ctx.env.get(name, "").strip() == bad_value:
            notes.append(f"{name}={bad_value}: {why}")
            if rule_status == "warn":
                status = "warn"
    if status == "warn":
        return Finding(
            id="allocator-comm",
            status="warn",
            summary=notes[-1],
            detail="; ".join(notes),
            fix="unset the variables above unless you set them on purpose",
        )
    summary = "; ".join(notes) if notes else "no allocator or RCCL/NCCL variables set: defaults"
    return Finding(id="allocator-comm", status="ok", summary=summary)


def _interfaces(ctx: DoctorContext) -> list[str]:
    try:
        return sorted(p.name for p in ctx.path("/sys/class/net").iterdir())
    except OSError:
        return []


def _missing_interfaces(ctx: DoctorContext, value: str | None) -> list[str]:
    if not value or value.startswith("^"):  # "^lo,docker" excludes: nothing to look up
        return []
    present = _interfaces(ctx)
    if not present:
        return []  # cannot tell: report nothing rather than guess
    # A prefix ("eth") matches eth0, eth1...; "=eth0" asks for an exact name.
    wanted = [w.strip() for w in value.split(",") if w.strip()]
    return [
        w
        for w in wanted
        if not any(p == w.lstrip("=") if w.startswith("=") else p.startswith(w) for p in present)
    ]
