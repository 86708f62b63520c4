"""The KFD (amdgpu compute driver) topology in sysfs: one node per CPU socket and per AMD GPU.

/sys/class/kfd/kfd/topology/nodes/N/properties is "key value" lines. The parser is pure; the reader
takes the filesystem root so tests point it at a fake tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

TOPOLOGY_DIR = "sys/class/kfd/kfd/topology/nodes"
AMD_PCI_VENDOR_ID = 0x1002


def decode_gfx_target_version(value: int | str | None) -> str | None:
    """KFD's gfx_target_version -> gfx target: major*10000 + minor*100 + step, minor and step as
    single hex digits (90010 -> "gfx90a", 110501 -> "gfx1151"). 0 (a CPU node) or nonsense -> None.
    """
    try:
        number = int(value) if value is not None else 0
    except (TypeError, ValueError):
        return None
    if number <= 0:
        return None
    major, minor, step = number // 10000, (number // 100) % 100, number % 100
    if minor > 15 or step > 15:
        return None
    return f"gfx{major}{minor:x}{step:x}"


def parse_properties(text: str) -> dict[str, int]:
    """Parse a KFD `properties` file into {key: int}; lines that are not "key integer" are skipped."""
    props: dict[str, int] = {}
    for line in text.splitlines():
        match = re.fullmatch(r"\s*(\w+)\s+(-?\d+)\s*", line)
        if match:
            props[match.group(1)] = int(match.group(2))
    return props


@dataclass(frozen=True, kw_only=True)
class KfdNode:
    """One KFD topology node: a CPU socket or a GPU (an MI300X in SPX mode is one node)."""

    node_id: int
    properties: dict[str, int]
    memory_bytes: int | None = None  # sum of mem_banks sizes (GPU VRAM), when readable

    @property
    def is_gpu(self) -> bool:
        return self.properties.get("simd_count", 0) > 0

    @property
    def gfx_target(self) -> str | None:
        return decode_gfx_target_version(self.properties.get("gfx_target_version"))

    @property
    def num_compute_units(self) -> int | None:
        simds, per_cu = self.properties.get("simd_count", 0), self.properties.get("simd_per_cu", 0)
        return simds // per_cu if simds and per_cu else None

    @property
    def wavefront_size(self) -> int | None:
        return self.properties.get("wave_front_size") or None

    @property
    def pci_bus_id(self) -> str | None:
        """ "0000:47:00.0" from location_id (bus << 8 | device << 3 | function) and domain."""
        location = self.properties.get("location_id")
        if not location:
            return None
        domain = self.properties.get("domain", 0)
        return f"{domain:04x}:{location >> 8:02x}:{(location >> 3) & 0x1F:02x}.{location & 0x7:x}"

    @property
    def device_id(self) -> str | None:
        """The PCI device id, "0x744c"."""
        value = self.properties.get("device_id")
        return f"0x{value:04x}" if value else None

    @property
    def render_minor(self) -> int | None:
        """N in /dev/dri/renderDN for this GPU."""
        return self.properties.get("drm_render_minor") or None


def parse_node(node_id: int, text: str, memory_bytes: int | None = None) -> KfdNode:
    """Build a KfdNode from the text of its properties file."""
    return KfdNode(node_id=node_id, properties=parse_properties(text), memory_bytes=memory_bytes)


_PATH_PREFIX = re.compile(r"^\S*?/nodes/(\d+)/properties:")  # `grep . nodes/*/properties`
_HEAD_BANNER = re.compile(r"^==> \S*?/nodes/(\d+)/properties <==")  # `head nodes/*/properties`


def parse_pasted_nodes(text: str) -> list[KfdNode]:
    """The nodes in pasted `properties` files: one file, several concatenated (`cat`), `head`
    banners or `grep .` path prefixes. A new node starts where a key repeats. Node ids are read
    from paths when printed, else counted from 0 (so they are the paste's order, not KFD's)."""
    blocks: list[tuple[int | None, list[str]]] = []
    seen: set[str] = set()
    for raw in text.splitlines():
        line, node_id = raw.strip(), None
        for pattern in (_PATH_PREFIX, _HEAD_BANNER):
            match = pattern.match(line)
            if match:
                node_id, line = int(match.group(1)), line[match.end() :].strip()
        key = line.split(" ", 1)[0]
        new_path = node_id is not None and blocks and blocks[-1][0] != node_id
        if not blocks or key in seen or new_path:
            blocks.append((node_id, []))
            seen = set()
        if re.fullmatch(r"\w+\s+-?\d+", line):
            seen.add(key)
            blocks[-1][1].append(line)
    return [
        parse_node(i if node_id is None else node_id, "\n".join(lines))
        for i, (node_id, lines) in enumerate(b for b in blocks if b[1])
    ]


def read_kfd_nodes(root: str | Path = "/") -> list[KfdNode]:
    """Every readable node under `root`'s KFD topology, by node id; [] when there is no KFD."""
    nodes_dir = Path(root) / TOPOLOGY_DIR
    try:
        entries = [p for p in nodes_dir.iterdir() if p.name.isdigit()]
    except OSError:
        return []
    nodes = []
    for entry in sorted(entries, key=lambda p: int(p.name)):
        try:
            text = (entry / "properties").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        nodes.append(parse_node(int(entry.name), text, _memory_bytes(entry)))
    return nodes


def read_kfd_gpus(root: str | Path = "/") -> list[KfdNode]:
    """The GPU nodes only, in KFD order (the order HIP enumerates devices in)."""
    return [node for node in read_kfd_nodes(root) if node.is_gpu]


def _memory_bytes(node_dir: Path) -> int | None:
    total = 0
    try:
        banks = list((node_dir / "mem_banks").iterdir())
    except OSError:
        return None
    for bank in banks:
        try:
            props = parse_properties((bank / "properties").read_text(encoding="utf-8"))
        except OSError:
            continue
        total += props.get("size_in_bytes", 0)
    return total or None
