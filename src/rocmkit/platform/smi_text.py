"""Pure parsers of the plain-text outputs people paste: `nvidia-smi -q` and `-L`, `rocm-smi` (the
`GPU[N] : key: value` report of `--showproductname`, `--showallinfo`/`-a`, and its `--csv`),
`amd-smi static` / `list` / `metric`, and the table plain `amd-smi` prints since ROCm 7.

Each returns one `SmiGpu` per GPU it finds, or raises `SmiParseError` saying what was expected:
never an empty success.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rocmkit.platform.smi import SmiParseError, normalize_rocm_smi_gfx

MIB = 2**20
_UNITS = {"b": 1, "kib": 2**10, "kb": 2**10, "mib": MIB, "mb": MIB, "gib": 2**30, "gb": 2**30}
_MISSING = {"", "N/A", "[N/A]", "n/a", "None"}


@dataclass(frozen=True, kw_only=True)
class SmiGpu:
    """One GPU as a text report describes it; None where the report does not say."""

    index: int
    name: str | None = None
    arch: str | None = None  # "gfx942"; NVIDIA reports give the architecture name instead
    architecture_name: str | None = None  # "Hopper" (nvidia-smi -q)
    device_id: str | None = None  # "0x74a1"
    pci_bus_id: str | None = None
    uuid: str | None = None
    memory_total_bytes: int | None = None
    num_compute_units: int | None = None
    driver_version: str | None = None
    arch_source: str | None = None  # where `arch` came from when no tool printed it
    sources: tuple[str, ...] = ()  # the outputs joined into this row ("rocminfo", "amd-smi")


@dataclass(frozen=True, kw_only=True)
class SmiText:
    """What a pasted text report holds: its format, the GPUs, and any versions it names."""

    format: str  # "nvidia-smi -q", "rocm-smi", "amd-smi"
    gpus: tuple[SmiGpu, ...]
    versions: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what the reader should know: "1 of 4 attached GPUs shown"


def memory_bytes(text: str | None) -> int | None:
    """ "81559 MiB" / "196592 MB" / "16 GB" -> bytes. amd-smi's "MB" are MiB (192 GiB MI300X
    reads 196608 MB), so decimal-looking units are read as binary like the tools mean them."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]i?B|B)\s*", text or "", flags=re.I)
    if not match:
        return None
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


# ------------------------------------------------------------------ indented key : value trees


@dataclass
class Node:
    key: str
    value: str
    children: list[Node] = field(default_factory=list)

    def get(self, *path: str) -> Node | None:
        node = self
        for part in path:
            child = next((c for c in node.children if c.key.lower() == part.lower()), None)
            if child is None:
                return None
            node = child
        return node

    def text(self, *path: str) -> str | None:
        node = self.get(*path)
        return None if node is None or node.value in _MISSING else node.value


# "Key   : value" (nvidia-smi) and "KEY: value" (amd-smi); a colon inside the value is kept, and
# "GPU 00000000:18:00.0" (no space after the first colon) is a section title, not a key.
_ENTRY = re.compile(r"^(?P<key>[^:]*?)\s*:(?:\s+(?P<value>.*?))?\s*$")


def parse_indented(text: str) -> Node:
    """The tree of an indented `key: value` report (children are more indented)."""
    root = Node("", "")
    stack: list[tuple[int, Node]] = [(-1, root)]
    for raw in text.splitlines():
        if not raw.strip() or set(raw.strip()) <= set("=-"):
            continue
        indent = len(raw) - len(raw.lstrip())
        while stack[-1][0] >= indent:
            stack.pop()
        match = _ENTRY.match(raw.strip())
        node = (
            Node(match.group("key"), match.group("value") or "") if match else Node(raw.strip(), "")
        )
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    return root


# ------------------------------------------------------------------ nvidia-smi -q


def parse_nvidia_smi_q(text: str) -> SmiText:
    """`nvidia-smi -q`: one block per "GPU 00000000:18:00.0" section."""
    tree = parse_indented(text)
    blocks = [c for c in tree.children if re.fullmatch(r"GPU [0-9A-Fa-f:.]+", c.key)]
    attached = tree.text("Attached GPUs")
    if not blocks:
        raise SmiParseError(
            f"not `nvidia-smi -q` output: no 'GPU 0000:..' section ({_first_line(text)[:100]!r})"
        )
    notes: tuple[str, ...] = ()
    indices = list(range(len(blocks)))
    if attached and attached.isdigit() and int(attached) != len(blocks):
        notes = (f"{len(blocks)} of {attached} attached GPUs shown (an `-i` query or a cut paste)",)
        queried = _queried_indices(text)
        if len(queried) == len(blocks):
            indices = queried
        else:
            notes += ("GPU numbers are the order in this paste, not nvidia-smi's indices",)
    driver = tree.text("Driver Version")
    # nvidia-smi numbers GPUs in PCI bus order, the order of its "GPU 0000..." sections; the
    # "Minor Number" is /dev/nvidiaN, which need not follow it (a single L4 can be minor 8).
    gpus = tuple(
        SmiGpu(
            index=indices[i],
            name=block.text("Product Name"),
            architecture_name=block.text("Product Architecture"),
            pci_bus_id=block.key.split()[1],
            uuid=block.text("GPU UUID"),
            memory_total_bytes=memory_bytes(block.text("FB Memory Usage", "Total")),
            driver_version=driver,
        )
        for i, block in enumerate(blocks)
    )
    versions = {k: v for k in ("Driver Version", "CUDA Version") if (v := tree.text(k))}
    return SmiText(format="nvidia-smi -q", gpus=gpus, versions=versions, notes=notes)


def _queried_indices(text: str) -> list[int]:
    """The GPUs an echoed `nvidia-smi -q -i 0,2` / `--id=1` command line asked for."""
    # Only numbers: `-i 00000000:18:00.0` (a bus id) or `-i GPU-...` name no index.
    match = re.search(r"nvidia-smi(?:\.exe)?\b.*?\s(?:-i|--id)[ =]([\d,]+)(?=\s|$)", text)
    return [int(n) for n in match.group(1).split(",") if n] if match else []


# ------------------------------------------------------------------ nvidia-smi -L

_NVIDIA_LIST = re.compile(r"^GPU (\d+): (.+?) \(UUID: (GPU-[0-9a-fA-F-]+)\)\s*$")
_MIG_LIST = re.compile(r"^\s+MIG \S+\s+Device\s+\d+: \(UUID: MIG-")


def parse_nvidia_smi_list(text: str) -> SmiText:
    """`nvidia-smi -L`: "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-...)", MIG devices indented."""
    gpus, num_mig = [], 0
    for line in text.splitlines():
        match = _NVIDIA_LIST.match(line.strip())
        if match:
            gpus.append(SmiGpu(index=int(match.group(1)), name=match.group(2), uuid=match.group(3)))
        num_mig += bool(_MIG_LIST.match(line))
    if not gpus:
        raise SmiParseError(
            f"not `nvidia-smi -L` output: no 'GPU N: name (UUID: ...)' line "
            f"({_first_line(text)[:100]!r})"
        )
    notes = (f"{num_mig} MIG device(s) listed under the GPUs",) if num_mig else ()
    return SmiText(format="nvidia-smi -L", gpus=tuple(gpus), notes=notes)


# ------------------------------------------------------------------ amd-smi (ROCm 7 default table)

_BDF = r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
_TABLE_ROW = re.compile(rf"^\|\s*({_BDF})\s+(.*?)\s*\|")
_TABLE_ROW2 = re.compile(r"^\|\s*(\d+)\s+\S+\s+\S+\s+\S+\s*\|.*?(?:(\d+)/(\d+) MB)?\s*\|$")
_TABLE_HEAD = re.compile(
    r"AMD-SMI (\S+)\s+amdgpu version: (.*?)\s+ROCm version: (\S+)", flags=re.IGNORECASE
)


def parse_amd_smi_table(text: str) -> SmiText:
    """The table plain `amd-smi` prints (ROCm 7): per GPU a "| BDF  name | ..." row and a
    "| GPU HIP-ID OAM-ID Partition | ... used/total MB |" row. Names longer than 20 characters
    are cut to "...their last 20" by amd-smi; such a name is kept and a note says so."""
    lines = [line.strip() for line in text.splitlines()]
    gpus = []
    for first, second in zip(lines, [*lines[1:], ""], strict=True):
        row, row2 = _TABLE_ROW.match(first), _TABLE_ROW2.match(second)
        if not (row and row2):
            continue
        gpus.append(
            SmiGpu(
                index=int(row2.group(1)),
                name=row.group(2) or None,
                pci_bus_id=row.group(1).lower(),
                memory_total_bytes=int(row2.group(3)) * MIB if row2.group(3) else None,
            )
        )
    if not gpus:
        raise SmiParseError(
            f"not the `amd-smi` table: no '| BDF  GPU-Name |' rows ({_first_line(text)[:100]!r})"
        )
    head = _TABLE_HEAD.search(text)
    versions = (
        {"AMD-SMI": head.group(1), "amdgpu version": head.group(2), "ROCm version": head.group(3)}
        if head
        else {}
    )
    cut = [g.name for g in gpus if g.name and g.name.startswith("...")]
    notes = (
        (f"amd-smi cut the name to its last 20 characters ({cut[0]!r}): paste `amd-smi static`",)
        if cut
        else ()
    )
    return SmiText(format="amd-smi (table)", gpus=tuple(gpus), versions=versions, notes=notes)


# ------------------------------------------------------------------ amd-smi text


def parse_amd_smi_text(text: str) -> SmiText:
    """`amd-smi static`, `amd-smi list` or `amd-smi metric` text: one "GPU: N" block per GPU.

    Other blocks (`AI_NIC: N` in ROCm 7 `list`) are no GPUs. `list` names no product: the PCI
    device id is read from the UUID amd-smi builds around it, and a note says what to paste."""
    tree = parse_indented(text)
    blocks = [c for c in tree.children if c.key == "GPU" and c.value.isdigit()]
    if not blocks:
        raise SmiParseError(
            f"not amd-smi text output: no 'GPU: N' block ({_first_line(text)[:100]!r})"
        )
    gpus = tuple(_amd_smi_gpu(block) for block in blocks)
    return SmiText(format="amd-smi", gpus=gpus, notes=_amd_smi_notes(gpus))


def _amd_smi_gpu(block: Node) -> SmiGpu:
    asic = block.get("ASIC") or Node("", "")
    vram = block.text("VRAM", "SIZE") or block.text("MEM_USAGE", "TOTAL_VRAM")
    uuid = block.text("UUID")
    return SmiGpu(
        index=int(block.value),
        name=asic.text("MARKET_NAME") or block.text("BOARD", "PRODUCT_NAME"),
        arch=_gfx(asic.text("TARGET_GRAPHICS_VERSION")),
        device_id=asic.text("DEVICE_ID") or amd_smi_uuid_device_id(uuid),
        pci_bus_id=block.text("BDF") or block.text("BUS", "BDF"),
        uuid=uuid,
        memory_total_bytes=memory_bytes(vram),
        num_compute_units=_int(asic.text("NUM_COMPUTE_UNITS")),
        driver_version=block.text("DRIVER", "VERSION"),
    )


# amd-smi's UUID (amdsmi_uuid_gen in ROCm/amdsmi src/amd_smi/amd_smi_uuid.cc): the first group is
# serial byte 7, the function/partition index and the 16-bit PCI device id; the last groups are
# the rest of the ASIC serial. A serial it could not read leaves them zero ("...-8000-000000000000").
_AMD_SMI_UUID = re.compile(
    r"([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{4})-[0-9a-f]{4}-1[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}"
)
_NO_SERIAL = re.compile(r"00[0-9a-f]{6}-0000-1000-8000-000000000000")


def amd_smi_uuid_device_id(uuid: str | None) -> str | None:
    """ "67ff740f-0000-1000-80c6-3ac3c3c637f9" -> "0x740f" (the PCI device id amd-smi put in it)."""
    match = _AMD_SMI_UUID.fullmatch((uuid or "").lower())
    if not match or match.group(3) == "ffff":  # 0xffff: the WSL backend's "device id unknown"
        return None
    return f"0x{match.group(3)}"


def _amd_smi_notes(gpus: tuple[SmiGpu, ...]) -> tuple[str, ...]:
    notes = []
    if not any(g.name or g.arch for g in gpus):
        notes.append("this output names no product or gfx target: paste `amd-smi static` for them")
    uuids = [g.uuid for g in gpus if g.uuid]
    if len(uuids) > 1 and (
        len(set(uuids)) < len(uuids) or all(_NO_SERIAL.fullmatch(u) for u in uuids)
    ):
        notes.append(
            "the UUIDs carry no serial (amd-smi could not read it, e.g. run without sudo before "
            "ROCm 7.0): tell the GPUs apart by BDF"
        )
    return tuple(notes)


# ------------------------------------------------------------------ rocm-smi text

_ROCM_SMI_LINE = re.compile(r"^GPU\[(\d+)\]\s*:\s*(.*?)\s*:\s*(.*?)\s*$")
_NAME_KEYS = ("card series", "device name", "card model")
_HEX = re.compile(r"0x[0-9a-fA-F]+")


def parse_rocm_smi_text(text: str) -> SmiText:
    """`rocm-smi --showproductname`, `rocm-smi -a` / `--showallinfo` (plain text or `--csv`).

    The concise table (`rocm-smi` alone) names no product: it is refused with a hint."""
    if re.search(r"^device,", text, flags=re.M):
        return _rocm_smi_csv(text)
    fields: dict[int, dict[str, str]] = {}
    for line in text.splitlines():
        match = _ROCM_SMI_LINE.match(line.strip())
        if match:
            card = fields.setdefault(int(match.group(1)), {})
            card.setdefault(match.group(2).lower(), match.group(3))
    if not fields:
        hint = (
            "the concise table names no product: paste `rocm-smi --showproductname`"
            if "Concise Info" in text  # names are missing or cut to 20 characters there
            else f"no 'GPU[N] : key: value' line ({_first_line(text)[:100]!r})"
        )
        raise SmiParseError(f"not a rocm-smi text report: {hint}")
    driver = re.search(r"Driver version:\s*(\S+)", text)
    gpus = tuple(
        _rocm_smi_gpu(i, f, driver.group(1) if driver else None) for i, f in fields.items()
    )
    return SmiText(
        format="rocm-smi",
        gpus=gpus,
        versions={"Driver version": driver.group(1)} if driver else {},
    )


def _rocm_smi_gpu(index: int, fields: dict[str, str], driver: str | None) -> SmiGpu:
    def first(*keys: str) -> str | None:
        return next((fields[k] for k in keys if fields.get(k, "") not in _MISSING), None)

    # ROCm 4 put PCI ids in "Card series"/"Card model" ("0x738c"): those are no names.
    names = [fields.get(k, "") for k in _NAME_KEYS]
    name = next((n for n in names if n not in _MISSING and not _HEX.fullmatch(n)), None)
    vram = first("vram total memory (b)")
    return SmiGpu(
        index=index,
        name=name,
        arch=normalize_rocm_smi_gfx(first("gfx version")),
        device_id=first("device id", "gpu id")
        or next((n for n in names if _HEX.fullmatch(n)), None),
        pci_bus_id=first("pci bus"),
        uuid=first("unique id"),
        memory_total_bytes=int(vram) if vram and vram.isdigit() else None,
        driver_version=driver,
    )


def _rocm_smi_csv(text: str) -> SmiText:
    lines = [line for line in text.splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.startswith("device,"))
    header = [h.strip().lower() for h in lines[start].split(",")]
    gpus = []
    for line in lines[start + 1 :]:
        values = [v.strip() for v in line.split(",")]
        match = re.fullmatch(r"card(\d+)", values[0])
        if not match:
            continue
        if len(values) != len(header):
            raise SmiParseError(f"rocm-smi CSV row has {len(values)} fields, header {len(header)}")
        gpus.append(
            _rocm_smi_gpu(int(match.group(1)), dict(zip(header, values, strict=True)), None)
        )
    if not gpus:
        raise SmiParseError("rocm-smi CSV has a header but no 'cardN' rows")
    return SmiText(format="rocm-smi", gpus=tuple(gpus))


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _gfx(value: str | None) -> str | None:
    return value.lower() if value and re.fullmatch(r"gfx[0-9a-fA-F]{3,4}", value) else None


def _int(value: str | None) -> int | None:
    match = re.match(r"\s*(\d+)", value or "")
    return int(match.group(1)) if match else None
