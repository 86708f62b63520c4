"""An sdist's core metadata (PKG-INFO): its Requires-Dist fields as a requirement source.

The core metadata specification (packaging.python.org, "Core metadata specifications") defines the
header of PKG-INFO as `Field: value` lines up to the first blank line (the description may follow).
`Requires-Dist` holds one PEP 508 requirement, its environment marker included; a requirement of an
extra carries the marker `extra == "name"`, and `Provides-Extra` names each extra. pip installs a
package's Requires-Dist, so a requirement there is judged as one in a requirements file: what every
install pulls (no `extra` in the marker) at the package rule's severity, an extra's as the opt-in it
is (at most warn). The sdist's generated PKG-INFO repeats what a maintainer declares elsewhere; it is
read only for the packages that no other requirement source of the sdist names (egg_requires).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from rocmkit.port.findings import Hit
from rocmkit.port.requirements import group_hits, installed_on_rocm_machine
from rocmkit.port.rules import RuleSet

KIND = "pkg-info"
FILE_NAME = "PKG-INFO"
# Candidate extra names a marker compares `extra` with; packaging's evaluation decides which hold.
_EXTRA_NAME = re.compile(r"""\bextra\s*==\s*["']([^"']+)["']""")


def metadata_file(root: str) -> tuple[str, str, str] | None:
    """(path, rel, KIND) of the sdist's PKG-INFO: the top-level one, else the copy in an egg-info
    folder at the top or under src/ (one file: the copies hold the same fields)."""
    top = os.path.join(root, FILE_NAME)
    if os.path.isfile(top):
        return top, FILE_NAME, KIND
    for folder in ("", "src"):
        try:
            names = sorted(os.listdir(os.path.join(root, folder)))
        except OSError:
            continue
        for name in names:
            path = os.path.join(root, folder, name, FILE_NAME)
            if name.endswith(".egg-info") and os.path.isfile(path):
                rel = f"{folder}/{name}/{FILE_NAME}" if folder else f"{name}/{FILE_NAME}"
                return path, rel, KIND
    return None


def header_fields(text: str, field: str) -> Iterator[tuple[str, int]]:
    """(value, line) of each `field:` line of the metadata header (before the first blank line)."""
    prefix = field.lower() + ":"
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            return  # the description follows the header
        if line.lower().startswith(prefix):
            yield line[len(prefix) :].strip(), number


def requires_dist(text: str) -> dict[str | None, list[tuple[str, int]]]:
    """Requirements (text, line) per extra (None: what every install pulls). An extra's
    requirement loses its marker once packaging has evaluated it on a ROCm machine for that extra
    (without packaging installed, extras are not judged)."""
    extras = [value for value, _ in header_fields(text, "Provides-Extra")]
    out: dict[str | None, list[tuple[str, int]]] = {}
    for value, number in header_fields(text, "Requires-Dist"):
        requirement, _, marker = value.partition(";")
        if "extra" not in marker:
            out.setdefault(None, []).append((value, number))
            continue
        named = _EXTRA_NAME.findall(marker)
        # `extra == "x"` (what every build backend writes) can hold only for the extras it
        # names; any other test of `extra` (`!=`, `in`) is evaluated for every extra declared
        only_named = named and "!=" not in marker and " in " not in marker.replace("not in", "")
        candidates = dict.fromkeys(named if only_named else [*extras, *named])
        for extra in candidates:
            if installed_on_rocm_machine(value, extra):
                out.setdefault(extra, []).append((requirement.strip(), number))
    return out


def scan_pkg_info(text: str, rules: RuleSet) -> list[Hit]:
    """Findings of PKG-INFO's Requires-Dist, its extras judged as the opt-in extras they are."""
    hits: list[Hit] = []
    for group, requirements in requires_dist(text).items():
        hits.extend(group_hits(group, requirements, rules))
    return hits
