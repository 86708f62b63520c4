"""rocminfo / rocm-smi / amd-smi / nvidia-smi: a runner with a timeout, and pure parsers.

The runner never raises: a missing tool, a timeout or an OS error comes back as a CommandResult
with `error` set. Parsers take text and raise SmiParseError on output they cannot read, so callers
decide what garbage means. Exit codes are recorded but not trusted: rocm-smi exits 0 with empty
stdout when the amdgpu driver is missing.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_TIMEOUT_S = 10.0
_REAP_TIMEOUT_S = 5.0
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class SmiParseError(ValueError):
    """A tool's output is not in any format we know (empty, truncated, garbage)."""


@dataclass(frozen=True, kw_only=True)
class CommandResult:
    """What running a tool gave: exit code and output, or why it could not run."""

    argv: tuple[str, ...]
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    error: str | None = None  # "not found", "timed out after 10s", an OSError message

    @property
    def ran(self) -> bool:
        return self.error is None


Runner = Callable[[Sequence[str], float], CommandResult]


def run_command(
    argv: Sequence[str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
) -> CommandResult:
    """Run a tool with a timeout; never raises, and never waits on a process it could not kill."""
    args = tuple(argv)
    if shutil.which(args[0]) is None:
        return CommandResult(argv=args, error="not found")
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
        )
    except OSError as exc:
        return CommandResult(argv=args, error=exc.strerror or str(exc))
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        # A process stuck in the kernel on a hung GPU ignores SIGKILL: do not wait forever.
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=_REAP_TIMEOUT_S)
        return CommandResult(argv=args, error=f"timed out after {timeout_s:g}s")
    return CommandResult(
        argv=args,
        returncode=proc.returncode,
        stdout=stdout.decode("utf-8", errors="replace"),
        stderr=stderr.decode("utf-8", errors="replace"),
    )


def _first_error_line(text: str) -> str:
    lines = [line.strip() for line in _ANSI.sub("", text).splitlines() if line.strip()]
    return lines[-1] if lines else ""


# ---------------------------------------------------------------------------- rocminfo


@dataclass(frozen=True, kw_only=True)
class RocminfoAgent:
    """One HSA agent (a CPU or a GPU) from rocminfo."""

    name: str  # "gfx942" for GPUs, the CPU model for CPUs
    marketing_name: str = ""
    device_type: str = ""  # "CPU" | "GPU"
    uuid: str | None = None
    node: int | None = None
    compute_units: int | None = None
    wavefront_size: int | None = None
    isa: str | None = None  # "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"
    chip_id: int | None = None  # the PCI device id ("Chip ID: 29772(0x744c)"); 0 for CPUs
    bdf_id: int | None = None  # "BDFID: 11520": bus << 8 | device << 3 | function
    memory_bytes: int | None = None  # the "GLOBAL; FLAGS: COARSE GRAINED" pool (device memory)

    @property
    def device_id(self) -> str | None:
        return f"0x{self.chip_id:04x}" if self.chip_id else None

    @property
    def pci_bus_id(self) -> str | None:
        """ "0000:2d:00.0" from BDFID; rocminfo prints no PCI domain, so 0000 is assumed."""
        if not self.bdf_id:
            return None
        bdf = self.bdf_id
        return f"0000:{bdf >> 8 & 0xFF:02x}:{bdf >> 3 & 0x1F:02x}.{bdf & 0x7:x}"

    @property
    def gfx_target(self) -> str | None:
        if self.isa:
            return self.isa.rsplit("--", 1)[-1].split(":")[0]
        return self.name if self.name.startswith("gfx") else None


@dataclass(frozen=True, kw_only=True)
class RocminfoReport:
    kfd_module_loaded: bool
    runtime_version: str | None = None
    agents: tuple[RocminfoAgent, ...] = ()

    @property
    def gpus(self) -> tuple[RocminfoAgent, ...]:
        return tuple(a for a in self.agents if a.device_type == "GPU")


def parse_rocminfo(text: str) -> RocminfoReport:
    """Parse rocminfo's output (stdout, or stdout+stderr)."""
    text = _ANSI.sub("", text)
    if "ROCk module is NOT loaded" in text or "module is NOT loaded" in text:
        return RocminfoReport(kfd_module_loaded=False)
    if "HSA Agents" not in text:
        raise SmiParseError(f"not rocminfo output: {_first_error_line(text)[:120]!r}")
    runtime = re.search(r"Runtime Version:\s*([\d.]+)", text)
    # "Agent N" headers, with or without their rows of asterisks (pastes lose them).
    blocks = re.split(r"^[\s*]*Agent \d+[\s*]*$", text, flags=re.M)[1:]
    described = len(re.findall(r"^\s*Device Type:", text, flags=re.M))
    if described > len(blocks):
        raise SmiParseError(
            f"rocminfo output describes {described} agents ('Device Type:' lines) but has "
            f"{len(blocks)} 'Agent N' headers: paste rocminfo's output unedited"
        )
    return RocminfoReport(
        kfd_module_loaded=True,
        runtime_version=runtime.group(1) if runtime else None,
        agents=tuple(_parse_agent(block) for block in blocks),
    )


def _parse_agent(block: str) -> RocminfoAgent:
    fields: dict[str, str] = {}
    isa = None
    segment, coarse_kb = "", None
    for line in block.splitlines():
        key, sep, value = line.strip().partition(":")
        if not sep:
            continue
        value = value.strip()
        if key == "Name" and value.startswith("amdgcn-"):
            isa = isa or value
        elif key == "Segment":
            segment = value
        elif key == "Size" and segment == "GLOBAL; FLAGS: COARSE GRAINED" and coarse_kb is None:
            # The device-memory pool (VRAM; on an APU the memory the driver lets the GPU use).
            # "KERNARG, COARSE GRAINED" and the fine-grained pools are host memory.
            coarse_kb = _leading_int(value) if value.endswith("KB") else None
        else:
            fields.setdefault(key.strip(), value)
    return RocminfoAgent(
        name=fields.get("Name", ""),
        marketing_name=fields.get("Marketing Name", ""),
        device_type=fields.get("Device Type", ""),
        uuid=fields.get("Uuid") or None,
        node=_leading_int(fields.get("Node")),
        compute_units=_leading_int(fields.get("Compute Unit")),
        wavefront_size=_leading_int(fields.get("Wavefront Size")),
        isa=isa,
        chip_id=_leading_int(fields.get("Chip ID")),
        bdf_id=_leading_int(fields.get("BDFID")),
        memory_bytes=coarse_kb * 1024 if coarse_kb else None,
    )


def _leading_int(value: str | None) -> int | None:
    match = re.match(r"\s*(\d+)", value or "")
    return int(match.group(1)) if match else None


# ---------------------------------------------------------------------------- rocm-smi


@dataclass(frozen=True, kw_only=True)
class RocmSmiCard:
    index: int
    name: str | None = None
    gfx_target: str | None = None
    device_id: str | None = None  # "0x740c"
    pci_bus_id: str | None = None
    unique_id: str | None = None
    vram_total_bytes: int | None = None
    raw: dict[str, str] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class RocmSmiReport:
    cards: tuple[RocmSmiCard, ...] = ()
    driver_version: str | None = None


def parse_rocm_smi_json(text: str) -> RocmSmiReport:
    """Parse `rocm-smi ... --json`. Keys change spelling between releases, so they are matched
    case-insensitively ("Card series" / "Card Series"). Empty output is an error: rocm-smi
    prints nothing on stdout (and exits 0) when the driver is not loaded."""
    data = _load_json(text, "rocm-smi")
    if not isinstance(data, dict):
        raise SmiParseError("rocm-smi JSON is not an object")
    cards = []
    for key, value in data.items():
        match = re.fullmatch(r"card(\d+)", key)
        if match and isinstance(value, dict):
            cards.append(_rocm_smi_card(int(match.group(1)), value))
    if not cards:
        raise SmiParseError(
            "rocm-smi JSON names no cardN entry (no GPU, or the driver is not loaded)"
        )
    system = {k.lower(): v for k, v in (data.get("system") or {}).items()}
    return RocmSmiReport(
        cards=tuple(sorted(cards, key=lambda c: c.index)),
        driver_version=system.get("driver version"),
    )


def _rocm_smi_card(index: int, raw: dict[str, Any]) -> RocmSmiCard:
    fields = {str(k).lower().rstrip(":").strip(): str(v) for k, v in raw.items()}

    def first(*keys: str) -> str | None:
        return next((fields[k] for k in keys if fields.get(k) not in (None, "", "N/A")), None)

    vram = first("vram total memory (b)")
    return RocmSmiCard(
        index=index,
        name=first("card series", "device name", "card model"),
        gfx_target=normalize_rocm_smi_gfx(first("gfx version")),
        device_id=first("device id", "gpu id", "card model"),
        pci_bus_id=first("pci bus"),
        unique_id=first("unique id"),
        vram_total_bytes=int(vram) if vram and vram.isdigit() else None,
        raw=fields,
    )


def normalize_rocm_smi_gfx(value: str | None) -> str | None:
    """rocm-smi writes the KFD version digits in decimal: "gfx9010" is gfx90a (9, 0, 10)."""
    if not value:
        return None
    value = value.strip().lower()
    if not value.startswith("gfx"):
        return None
    digits = value[3:]
    if not digits.isdigit():
        return value if re.fullmatch(r"gfx[0-9a-f]{3,4}", value) else None  # e.g. "gfx90a"
    if len(digits) < 3:
        return None
    major_len = 2 if digits.startswith("1") and len(digits) >= 4 else 1
    major, rest = digits[:major_len], digits[major_len:]
    if not rest or int(rest[1:] or 0) > 15:
        return None
    return f"gfx{major}{int(rest[0]):x}{int(rest[1:] or 0):x}"


# ---------------------------------------------------------------------------- amd-smi


def parse_amd_smi_json(text: str) -> list[dict[str, Any]]:
    """Per-GPU records from any `amd-smi <cmd> --json`: ROCm 6 prints a list, ROCm 7 wraps it
    in {"gpu_data": [...]}."""
    data = _load_json(text, "amd-smi")
    if isinstance(data, dict) and isinstance(data.get("gpu_data"), list):
        data = data["gpu_data"]
    elif isinstance(data, dict) and "gpu" in data:
        data = [data]
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise SmiParseError("amd-smi JSON is neither a list of GPUs nor {'gpu_data': [...]}")
    if not data:
        raise SmiParseError("amd-smi JSON lists no GPU")
    return data


@dataclass(frozen=True, kw_only=True)
class AmdSmiGpu:
    index: int
    name: str | None = None
    gfx_target: str | None = None
    device_id: str | None = None
    num_compute_units: int | None = None


def parse_amd_smi_static(text: str) -> list[AmdSmiGpu]:
    """`amd-smi static --asic --json`: market name, gfx target, device id per GPU."""
    gpus: list[AmdSmiGpu] = []
    for record in parse_amd_smi_json(text):
        asic = {str(k).lower(): v for k, v in (record.get("asic") or {}).items()}
        cus = str(asic.get("num_compute_units"))
        gpu = str(record.get("gpu", len(gpus)))
        gpus.append(
            AmdSmiGpu(
                index=int(gpu) if gpu.isdigit() else len(gpus),
                name=asic.get("market_name"),
                gfx_target=asic.get("target_graphics_version"),
                device_id=asic.get("device_id"),
                num_compute_units=int(cus) if cus.isdigit() else None,
            )
        )
    return gpus


def parse_amd_smi_version(text: str) -> dict[str, str]:
    """`amd-smi version`: "AMDSMI Tool: X | AMDSMI Library version: Y | ROCm version: Z"."""
    found = dict(re.findall(r"([A-Za-z][\w ]*?)\s*:\s*([^|\n]+?)\s*(?:\||$)", text, flags=re.M))
    if not found:
        raise SmiParseError("not amd-smi version output")
    return {k.strip(): v.strip() for k, v in found.items()}


# ---------------------------------------------------------------------------- nvidia-smi

NVIDIA_QUERY_FIELDS = ("index", "name", "uuid", "pci.bus_id", "memory.total", "driver_version")


def parse_nvidia_smi_csv(text: str) -> list[dict[str, str | None]]:
    """`nvidia-smi --query-gpu=... --format=csv` (with header): one dict per GPU, keys without
    units ("memory.total [MiB]" -> "memory.total"), "[N/A]"/"N/A" -> None."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        raise SmiParseError("empty nvidia-smi CSV output")
    header = [re.sub(r"\s*\[.*?\]\s*$", "", h.strip()) for h in lines[0].split(",")]
    units = [
        m.group(1) if (m := re.search(r"\[(.*?)\]\s*$", h)) else None for h in lines[0].split(",")
    ]
    if not {"name", "index", "uuid", "gpu_name"} & set(header):
        raise SmiParseError("nvidia-smi CSV has no header row (query with --format=csv)")
    rows = []
    for line in lines[1:]:
        values = [v.strip() for v in line.split(",")]
        if len(values) != len(header):
            raise SmiParseError(
                f"nvidia-smi CSV row has {len(values)} fields, header {len(header)}"
            )
        rows.append(
            {
                h: (None if v in ("[N/A]", "N/A", "") else _without_unit(v, unit))
                for h, v, unit in zip(header, values, units, strict=True)
            }
        )
    if not rows:
        raise SmiParseError("nvidia-smi CSV has a header but no GPU rows")
    return rows


def _without_unit(value: str, unit: str | None) -> str:
    """ "16311 MiB" -> "16311" under a "memory.total [MiB]" header (`--format=csv` without
    `nounits` repeats the unit in every value)."""
    if unit and value.endswith(" " + unit):
        return value[: -len(unit) - 1].strip()
    return value


@dataclass(frozen=True, kw_only=True)
class NvidiaSmiGpu:
    name: str
    uuid: str | None = None
    pci_bus_id: str | None = None
    architecture: str | None = None  # "Ampere", "Hopper"
    memory_total_mib: int | None = None
    mig_enabled: bool = False


@dataclass(frozen=True, kw_only=True)
class NvidiaSmiReport:
    driver_version: str | None = None
    cuda_version: str | None = None
    gpus: tuple[NvidiaSmiGpu, ...] = ()


def parse_nvidia_smi_xml(text: str) -> NvidiaSmiReport:
    """`nvidia-smi -q -x`."""
    try:
        root = ET.fromstring(text.strip())
    except ET.ParseError as exc:
        raise SmiParseError(f"nvidia-smi XML does not parse: {exc}") from None
    if root.tag != "nvidia_smi_log":
        raise SmiParseError(f"unexpected XML root <{root.tag}>")
    gpus = []
    for gpu in root.findall("gpu"):
        memory = re.match(r"\s*(\d+)", gpu.findtext("fb_memory_usage/total") or "")
        gpus.append(
            NvidiaSmiGpu(
                name=(gpu.findtext("product_name") or "").strip(),
                uuid=gpu.findtext("uuid"),
                pci_bus_id=gpu.findtext("pci/pci_bus_id") or gpu.get("id"),
                architecture=gpu.findtext("product_architecture"),
                memory_total_mib=int(memory.group(1)) if memory else None,
                mig_enabled=(gpu.findtext("mig_mode/current_mig") or "").strip() == "Enabled",
            )
        )
    if not gpus:
        raise SmiParseError("nvidia-smi XML lists no <gpu>")
    return NvidiaSmiReport(
        driver_version=root.findtext("driver_version"),
        cuda_version=root.findtext("cuda_version"),
        gpus=tuple(gpus),
    )


def _load_json(text: str, tool: str) -> Any:
    stripped = text.strip()
    if not stripped:
        raise SmiParseError(f"{tool} printed nothing (is the amdgpu driver loaded?)")
    # Some releases print warnings before the JSON document.
    start = min((i for i in (stripped.find("{"), stripped.find("[")) if i >= 0), default=-1)
    try:
        return json.loads(stripped[start:] if start >= 0 else stripped)
    except json.JSONDecodeError as exc:
        raise SmiParseError(f"{tool} output is not JSON ({exc.msg} at char {exc.pos})") from None
