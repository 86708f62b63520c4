"""translate(text, options=...) -> Translation: the pure CUDA -> HIP source translation.

One pass of the lexer's master regex visits comments, literals, `#include` directives and the
identifiers whose first two characters could start a CUDA name; only those reach Python code.
Identifiers are replaced as whole tokens, include paths inside directives, and nothing inside a
comment or a literal changes (string literals may be opted in).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Literal, NamedTuple

from rocmkit.errors import UserError
from rocmkit.hipify import (
    amd_branches,
    arch,
    declarations,
    guards,
    hazards,
    launch,
    overloads,
    props,
    redefinitions,
    signatures,
    toolkit,
    warp,
    warpsize,
)
from rocmkit.hipify.lexer import PROTECTED_SCANNER, build_scanner, line_columns
from rocmkit.hipify.mappings import (
    CUDA_LOOKING,
    MappingSource,
    MappingTable,
    category_of,
    load_table,
    table_for_version,
)
from rocmkit.hipify.versions import (
    LATEST,
    device_prop_fields,
    hip_definitions,
    hip_names,
    resolve_version,
)

HIP_RUNTIME_INCLUDE = "#include <hip/hip_runtime.h>\n"
_RUNTIME_CATEGORIES = frozenset({"runtime", "driver"})
_RUNTIME_HEADERS = frozenset({"hip/hip_runtime.h", "hip/hip_runtime_api.h"})
# Kernels need hip_runtime.h itself: hip_runtime_api.h declares no threadIdx or __syncthreads.
_DEVICE_CODE = ("__global__", "__device__", "<<<")
# Leading comments, blank lines and `#pragma once` stay above the added include.
_PREAMBLE = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/|\#[ \t]*pragma[ \t]+once[^\n]*)*", re.DOTALL)


@dataclass(frozen=True, kw_only=True, slots=True)
class TranslateOptions:
    """How to translate; the defaults match hipify-clang's output for hip-clang."""

    launch: Literal["keep", "hip"] = "keep"
    translate_strings: bool = False
    add_runtime_include: bool = True
    report_hazards: bool = True
    mappings: MappingSource = "auto"
    # Emit only names this HIP release declares (see versions.py); None: no check.
    hip_version: str | None = None
    # Headers the project has itself (`cuda.h` beside the sources), as an `#include "..."` spells
    # them: such an include names the project's file and is never remapped (project.py fills it).
    project_headers: frozenset[str] = frozenset()
    # Library header folders the target lacks (`versions.absent_libraries` next to hipcc finds
    # them: `rccl`, `thrust` on Debian 12): an include of one is reported at its line.
    absent_libraries: frozenset[str] = frozenset()
    # The project's macros no AMD compile defines, each with why (`ASYNC_COPY_AVAILABLE`, defined
    # only under `#if __CUDA_ARCH__ >= 800` in another header): project_macros.py finds them in a
    # tree run; code under `#ifdef` of one is dead on AMD and its warnings become notes.
    amd_undefined_macros: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.hip_version is not None:
            resolve_version(self.hip_version)  # a UserError now rather than mid-tree
        if self.launch not in ("keep", "hip"):
            raise UserError(f"launch must be 'keep' or 'hip' (got {self.launch!r})")
        if self.mappings not in ("auto", "builtin"):
            raise UserError(f"mappings must be 'auto' or 'builtin' (got {self.mappings!r})")


class Edit(NamedTuple):
    """One replacement, in offsets of the input text (a tuple: tens of thousands per file)."""

    start: int
    end: int
    replacement: str
    category: str


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """Something the user should look at; line/column refer to the input text."""

    kind: Literal["unconverted", "unsupported", "hazard", "note"]
    line: int
    column: int
    name: str
    category: str
    message: str
    path: str | None = None

    def location(self) -> str:
        return f"{self.path or '<text>'}:{self.line}:{self.column}"


@dataclass(frozen=True, slots=True)
class TranslationStats:
    converted: dict[str, int] = field(default_factory=dict)  # category -> count
    unconverted: dict[str, int] = field(default_factory=dict)
    num_hazards: int = 0
    num_includes_rewritten: int = 0
    num_launches_rewritten: int = 0
    runtime_include_added: bool = False

    @property
    def num_converted(self) -> int:
        return sum(self.converted.values())

    @property
    def num_unconverted(self) -> int:
        return sum(self.unconverted.values())


@dataclass(frozen=True, slots=True)
class Translation:
    text: str
    stats: TranslationStats
    diagnostics: tuple[Diagnostic, ...]
    edits: tuple[Edit, ...] = ()  # identifier/include phase, before any launch rewriting
    # CUDA-looking names this text defines itself (`#define CUDA_CHECK`): a tree run uses them to
    # silence the same names in the files that include this one.
    defined_names: frozenset[str] = frozenset()

    @property
    def changed(self) -> bool:
        return bool(self.edits) or self.stats.num_launches_rewritten > 0


DEFAULT_OPTIONS = TranslateOptions()


@functools.cache
def _scanner(
    source: MappingSource, hip_version: str | None
) -> tuple[MappingTable, re.Pattern[str]]:
    table = load_table(source) if hip_version is None else table_for_version(source, hip_version)
    return table, build_scanner(table.candidate_prefixes())


@functools.cache
def _shared_hip_types(source: MappingSource, hip_version: str | None) -> dict[str, tuple[str, ...]]:
    """HIP type name -> its CUDA type names, for the HIP types two or more CUDA types become
    (`hipError_t` from `cudaError_t` and `CUresult`): overloads on them collide after
    translation (overloads.py)."""
    table, _ = _scanner(source, hip_version)
    sources: dict[str, list[str]] = {}
    for cuda_name, mapping in table.identifiers.items():
        if _TYPE_NAME.match(cuda_name):
            sources.setdefault(mapping.hip, []).append(cuda_name)
    return {hip: tuple(names) for hip, names in sources.items() if len(names) > 1}


# CUDA names of types: `cudaError_t`, `cudaStream_t`, `CUresult`, `CUstream`, `CUdeviceptr`.
_DRIVER_TYPE = re.compile(r"CU[a-z]\w*")
_TYPE_NAME = re.compile(r"(?:cuda\w*_t|CU[a-z]\w*)\Z")
_MEMBER = re.compile(r"\s*([A-Za-z_]\w*)")


@functools.cache
def _lacks_sync_intrinsics(hip_version: str | None) -> bool:
    return hip_version is not None and "__shfl_xor_sync" not in hip_names(
        resolve_version(hip_version)
    )


@functools.cache
def _device_prop_target(hip_version: str) -> tuple[str, frozenset[str]]:
    """The shipped release `hip_version` resolves to and its `hipDeviceProp_t` members: once per
    process, not a listing of the name-list folder per file."""
    shipped = resolve_version(hip_version)
    return shipped, device_prop_fields(shipped)


@functools.cache
def _definitions_for(hip_version: str | None) -> tuple[str, frozenset[str]]:
    """The release whose helper definitions a file is checked against (the newest list when no
    version is given: they change little) and its list; once per process."""
    shipped = resolve_version(hip_version or LATEST)
    return shipped, hip_definitions(shipped)


@functools.cache
def _amd_facts(
    source: MappingSource, hip_version: str | None, project: tuple[tuple[str, str], ...]
) -> amd_branches.AmdFacts:
    """What hip-clang leaves undefined: the version macros HIP lacks (mappings.toml) and the
    project's CUDA-only flags (`project` from project_macros.py)."""
    table, _ = _scanner(source, hip_version)
    undefined = frozenset(table.guards.version_macros) | {name for name, _ in project}
    return amd_branches.AmdFacts(undefined, project)


def amd_dead_branches(
    text: str, *, mappings: MappingSource = "builtin"
) -> Callable[[int], str | None]:
    """offset -> the directive of the branch no AMD compile takes that holds it (None: compiled),
    decided as translate() decides it for its own warnings (amd_branches.py, with the version
    macros HIP lacks)."""
    spans = amd_branches.dead_spans(text, _amd_facts(mappings, None, ()))
    return functools.partial(amd_branches.dead_branch, spans)


def translate(text: str, *, options: TranslateOptions = DEFAULT_OPTIONS) -> Translation:
    """Translate CUDA source text to HIP; pure (no I/O), deterministic and idempotent."""
    table, scanner = _scanner(options.mappings, options.hip_version)
    scan = _Scan(text, table, options)
    identifiers = table.identifiers
    add_edit = scan.edits.append
    add_protected = scan.protected.append
    # The hot loop, inlined: most matches are mapped identifiers. A Mapping is a (hip, category)
    # tuple, so `span + mapping` builds the (start, end, replacement, category) edit in C.
    for match in scanner.finditer(text):
        kind = match.lastgroup
        if kind == "ident":
            mapping = identifiers.get(match.group())
            if mapping is None:
                scan.unmapped(match, match.group())
            else:
                add_edit(match.span() + mapping)
        elif kind == "include":
            scan.include(match)
        else:
            add_protected(match.span())
            if options.translate_strings and kind in ("string", "raw"):
                scan.literal(match, scanner)
    return scan.finish()


def hazard_diagnostics(
    text: str, *, options: TranslateOptions = DEFAULT_OPTIONS
) -> tuple[Diagnostic, ...]:
    """The diagnostics of kind "hazard" that translate() gives `text`, without translating it:
    only comments, literals and includes are lexed (no identifier is mapped) and only the passes
    that report hazards run. Options that add hazards from the translation itself (a target HIP
    release, libraries the target lacks, the project's own headers) and text whose overloads may
    collide once translated take the whole translation."""
    table, _ = _scanner(options.mappings, options.hip_version)
    if (
        options.hip_version is not None
        or options.absent_libraries
        or options.project_headers
        or _colliding_types(text, table, options)
    ):
        return tuple(d for d in translate(text, options=options).diagnostics if d.kind == "hazard")
    scan = _Scan(text, table, options)
    for match in PROTECTED_SCANNER.finditer(text):
        if match.lastgroup == "include":
            scan.include(match)  # a CUDA toolkit header whose HIP counterpart differs
        else:
            scan.protected.append(match.span())
    scan._cuda_arch()
    if options.report_hazards:
        scan._hazards()
    return tuple(d for d in scan._diagnostics() if d.kind == "hazard")


def _colliding_types(text: str, table: MappingTable, options: TranslateOptions) -> set[str]:
    """The HIP types two CUDA types that `text` spells become (`hipError_t` from `CUresult` and
    `cudaError_t`): overloads on them may collide once translated (overloads.py)."""
    # Every pair HIP merges has a driver-API type (`CUresult`, `CUstream`): the driver type
    # names the file spells (a search for a literal start, in C), then whether it also
    # spells another CUDA name of the same HIP type. Most files stop at the first step.
    shared_types = _shared_hip_types(options.mappings, options.hip_version)
    shared: set[str] = set()
    for name in {m.group() for m in _DRIVER_TYPE.finditer(text)}:
        mapping = table.identifiers.get(name)
        others = shared_types.get(mapping.hip, ()) if mapping is not None else ()
        if any(other != name and other in text for other in others):
            shared.add(mapping.hip)  # type: ignore[union-attr]
    return shared


class _Scan:
    """Collects edits and findings while the master regex walks one text."""

    def __init__(self, text: str, table: MappingTable, options: TranslateOptions) -> None:
        self.text = text
        self.table = table
        self.options = options
        # (start, end, replacement, category) in scan order; Edit tuples once finished.
        self.edits: list[tuple[int, int, str, str]] = []
        self.in_order = True  # False once an edit is added behind the scan (guards, casts)
        # Spans a later phase rewrites whole (a guard, an overload's name, a device-property read):
        # the scan's edits starting inside one are dropped, then `replacement` (when not None)
        # is added. Applied once, in finish.
        self.overrides: list[tuple[int, int, str | None, str]] = []
        self.findings: list[tuple[int, str, str, str, str]] = []  # offset, kind, name, cat, msg
        self.num_includes_rewritten = 0
        self.first_hip_include: str | None = None
        self.protected: list[tuple[int, int]] = []  # comment and literal spans, in order
        self.defined_names: frozenset[str] = frozenset()
        self.num_casts = 0
        self._dead: list[tuple[int, int, str]] | None = None
        self.toolkit_release, self.toolkit_verdicts = toolkit.header_verdicts(
            options.hip_version or LATEST
        )

    def unmapped(self, match: re.Match[str], name: str) -> None:
        """A candidate name with no mapping: a namespace, a known gap, or an unconverted name."""
        if name in self.table.namespaces or name == "cuda":
            self._namespace(match, name)
        elif name in self.table.absent_device_functions:
            message = self._absent_device_function(name)
            self.findings.append((match.start(), "unsupported", name, DEVICE_FUNCTION, message))
        elif name in self.table.unsupported:
            reason = self.table.unsupported[name]
            self.findings.append((match.start(), "unsupported", name, category_of(name), reason))
        elif CUDA_LOOKING.match(name) and not name.startswith(self.table.kept_prefixes):
            self.findings.append((match.start(), "unconverted", name, category_of(name), ""))

    def _namespace(self, match: re.Match[str], name: str) -> None:
        end = match.end()
        if not self.text.startswith("::", end):
            return
        if (
            name == "cuda"
        ):  # thrust::cuda::par -> thrust::hip::par; libcu++'s cuda:: has no HIP twin
            if self.text[max(0, match.start() - 8) : match.start()] == "thrust::":
                self.edits.append(Edit(match.start(), end, "hip", "Thrust"))
            else:
                self.findings.append((match.start(), "unconverted", "cuda::", "libcu++", ""))
            return
        target = self.table.namespaces[name]
        checked = self.table.namespace_members.get(target)
        if checked is not None:
            member = _MEMBER.match(self.text, end + 2)
            if member is not None and member.group(1) not in checked[0]:
                spelled = f"{name}::{member.group(1)}"
                message = f"{target}::{member.group(1)} is not declared by {checked[1]}"
                self.findings.append((match.start(), "unsupported", spelled, "CUB", message))
                return
        self.edits.append(Edit(match.start(), end, target, "CUB"))

    def include(self, match: re.Match[str]) -> None:
        path = match.group("path")
        if path in self.table.unsupported_includes and not self._project_header(match, path):
            reason = self.table.unsupported_includes[path]
            self.findings.append((match.start("path"), "unsupported", path, "include", reason))
            return
        new_path = self.table.includes.get(path)
        if path in self.toolkit_verdicts and (
            new_path is None or toolkit.is_library_header(new_path)
        ):
            new_path = self._toolkit_header(match, path, new_path)
        elif new_path is not None and self._project_header(match, path):
            new_path = None
        if new_path is not None and new_path != path:
            self.edits.append(Edit(match.start("path"), match.end("path"), new_path, "include"))
            self.num_includes_rewritten += 1
            path = new_path
        folder = path.split("/", 1)[0]
        if folder in self.options.absent_libraries and match.group("open") == "<":
            message = (
                f"<{path}> cannot be found: the target has no {folder}/ headers next to hipcc "
                f"(install the {folder} development package, or build without it)"
            )
            self.findings.append((match.start("path"), "hazard", path, "missing-library", message))
        # HIP 5.2's other headers (cooperative groups...) need the runtime header included first.
        if self.first_hip_include is None and path.startswith("hip/"):
            self.first_hip_include = path

    def _toolkit_header(
        self, match: re.Match[str], path: str, table_path: str | None
    ) -> str | None:
        """A CUDA toolkit header the table does not map, or maps to a HIP library: decided by its
        verdict for the target (toolkit.py; data from both sides' headers)."""
        if self._project_header(match, path):
            return None
        decided = toolkit.include_decision(
            path, self.toolkit_verdicts[path], self.toolkit_release, table_path
        )
        if decided.kind is not None:
            self.findings.append(
                (match.start("path"), decided.kind, path, "include", decided.message)
            )
        return decided.path

    def _project_header(self, match: re.Match[str], path: str) -> bool:
        """`#include "cuda.h"` where the project has its own cuda.h: the project's file."""
        if (
            match.group("open") != '"'
            or path.removeprefix("./") not in self.options.project_headers
        ):
            return False
        message = (
            f"\"{path}\" is the project's own header (found in the tree), not CUDA's: "
            "kept as written (translate it with the tree)"
        )
        self.findings.append((match.start("path"), "note", path, "include", message))
        return True

    def literal(self, match: re.Match[str], scanner: re.Pattern[str]) -> None:
        offset = match.start()
        for inner in scanner.finditer(match.group(), 1):
            if inner.lastgroup == "ident":
                mapping = self.table.identifiers.get(inner.group())
                if mapping is not None:
                    start, end = offset + inner.start(), offset + inner.end()
                    self.edits.append((start, end, *mapping))

    def finish(self) -> Translation:
        self._conditions()
        self._cuda_arch()
        self._signatures()
        self._device_props()
        self._apply_overrides()
        self._colliding_overloads()
        if not self.in_order:
            # An insertion sorts before a replacement starting at the same offset.
            self.edits.sort(key=_START_END)
        include_added = self._maybe_add_runtime_include()
        text = _apply(self.text, self.edits)
        num_launches = 0
        text, _ = launch.join_spaced_chevrons(text)
        if self.options.launch == "hip" and "<<<" in text:
            text, num_launches = launch.rewrite_launches(text)
        converted = Counter(map(_CATEGORY, self.edits))
        converted["include"] -= include_added  # an insertion, not a conversion
        if self.num_casts:
            converted["signature"] = self.num_casts
        if _lacks_sync_intrinsics(self.options.hip_version):
            text = self._lower_warp_sync(text)
        if self.options.report_hazards:
            self._hazards()
        diagnostics = self._diagnostics()
        stats = TranslationStats(
            converted=dict(+converted),
            unconverted=dict(
                Counter(d.category for d in diagnostics if d.kind in ("unconverted", "unsupported"))
            ),
            num_hazards=sum(1 for d in diagnostics if d.kind == "hazard"),
            num_includes_rewritten=self.num_includes_rewritten,
            num_launches_rewritten=num_launches,
            runtime_include_added=include_added,
        )
        edits = tuple(map(_as_edit, self.edits))
        return Translation(text, stats, diagnostics, edits, self.defined_names)

    def _conditions(self) -> None:
        """Guards and version macros in `#if` conditions: rewrite or report (see guards.py)."""
        found = list(guards.condition_names(self.text, self.table.guards, self.in_protected))
        if not found:
            return
        handled = {name.start for name in found}
        self.findings = [f for f in self.findings if f[0] not in handled]
        for name in found:
            self.overrides.append((name.start, name.end, name.replacement, "guard"))
            if name.replacement is None:
                category = "guard" if name.name in self.table.guards.defined_only else "version"
                self.findings.append((name.start, "unconverted", name.name, category, name.message))

    def _cuda_arch(self) -> None:
        """Each use of `__CUDA_ARCH__` decided for AMD, reported where it decides (arch.py)."""
        for use in arch.arch_uses(self.text, self.in_protected):
            self.overrides.append((use.start, use.end, use.replacement, use.category))
            if use.kind is not None:
                self.findings.append((use.start, use.kind, arch.NAME, use.category, use.message))

    def _signatures(self) -> None:
        """Call sites whose HIP signature differs (signatures.py): `reinterpret_cast<const
        void*>(kernel)` where HIP declares `const void*`, arguments HIP gives no default."""
        if not any(trigger in self.text for trigger in signatures.TRIGGERS):
            return
        for start, end in signatures.kernel_arguments(self.text, self.in_protected):
            self.edits.append((start, start, signatures.CAST, "signature"))
            self.edits.append((end, end, ")", "signature"))
            self.num_casts += 1
        for offset, argument in signatures.missing_defaults(self.text, self.in_protected):
            self.edits.append((offset, offset, argument, "signature"))
            self.num_casts += 1
        # The overload's name replaces the plain mapping found by the scan.
        for start, end, hip_name in signatures.overloads(self.text, self.in_protected):
            self.overrides.append((start, end, hip_name, "signature"))
            self.num_casts += 1
        self.in_order = False

    def _device_props(self) -> None:
        """Reads of `hipDeviceProp_t` members the target HIP lacks get a substitute (props.py)."""
        version = self.options.hip_version
        if version is None or not any(trigger in self.text for trigger in props.TRIGGERS):
            return
        shipped, present = _device_prop_target(version)
        for read in props.missing_reads(self.text, present, shipped, self.in_protected):
            # The object expression's own names go with it (`props[cudaCpuDeviceId].x` -> `0`).
            self.overrides.append((read.start, read.end, read.replacement, "device-prop"))
            self.findings.append((read.start, "hazard", read.member, "device-prop", read.message))

    def _apply_overrides(self) -> None:
        """One pass over the edits for all overrides: the outermost of nested overrides wins
        (a device-property read inside another's object expression goes with it)."""
        if not self.overrides:
            return
        kept: list[tuple[int, int, str | None, str]] = []
        for override in sorted(self.overrides, key=lambda o: (o[0], -o[1])):
            if not kept or override[0] >= kept[-1][1]:
                kept.append(override)
        starts = [start for start, *_ in kept]

        def overridden(offset: int) -> bool:
            index = bisect.bisect_right(starts, offset) - 1
            return index >= 0 and offset < kept[index][1]

        self.edits = [edit for edit in self.edits if not overridden(edit[0])]
        self.edits += [(s, e, r, c) for s, e, r, c in kept if r is not None]
        self.in_order = False

    def _colliding_overloads(self) -> None:
        """Overloads that become one after translation (`check(CUresult)`, `check(cudaError_t)`):
        the later ones are compiled out with `#if 0` and reported (overloads.py)."""
        text = self.text
        shared = _colliding_types(text, self.table, self.options)
        if not shared:
            return
        sources: dict[str, set[str]] = {}
        offsets: dict[str, list[int]] = {}
        for start, end, hip, _ in [edit for edit in self.edits if edit[2] in shared]:
            sources.setdefault(hip, set()).add(text[start:end])
            offsets.setdefault(hip, []).append(start)
        names_at = [
            o
            for hip, names in sources.items()
            if len(names) > 1
            for o in offsets[hip]
            if not self.in_protected(o)  # a string with --translate-strings
        ]
        if not names_at:
            return
        hip_name = self.table.identifiers.get
        translated = lambda n: (hip_name(n) or (n,))[0]  # noqa: E731
        for found in overloads.collisions(text, names_at, translated, self.in_protected):
            line = text.count("\n", 0, found.kept_offset) + 1
            opening = f"#if 0 // rocmkit hipify: the same overload as line {line} once translated\n"
            rest_of_line = text[found.end : text.find("\n", found.end) % (len(text) + 1)]
            closing = "\n#endif" if not rest_of_line.strip() else "\n#endif\n"
            self.edits.append((found.start, found.start, opening, "overload"))
            self.edits.append((found.end, found.end, closing, "overload"))
            self.findings.append(
                (found.start, "hazard", found.name, "overload-collision", found.message)
            )
        self.in_order = False

    def _hazards(self) -> None:
        """The fixed-spelling rules (hazards.py), then the value-following warp-size analysis
        (warpsize.py) where no fixed rule already reported the same thing on the line."""
        text = self.text
        lines_reported: set[tuple[int, str]] = set()  # (line start, rule code)
        for offset, rule, snippet in hazards.find_hazards(text):
            if self.in_protected(offset):
                continue
            branch = None
            if (
                rule.code == "inline-ptx"
                and amd_branches.dead_branch(self.dead_spans(), offset) is None
            ):
                branch = hazards.ptx_fallback(text, offset)  # dead code: a note, said later
                if branch is not None and self._else_of_dead_branch(offset):
                    branch = None  # the `#else` an AMD compile takes: this asm is compiled there
            if branch is not None:
                # the project wrote another branch for targets without PTX: a note, not a warning
                message = f"{rule.message}; it sits under `{branch}`, whose group has another "
                message += "branch: that one is compiled if the condition is false on AMD"
                self.findings.append((offset, "note", snippet.strip(), rule.code, message))
            else:
                self.findings.append((offset, "hazard", snippet.strip(), rule.code, rule.message))
                lines_reported.add((text.rfind("\n", 0, offset), rule.code))
        for offset, snippet, message, same_as in warpsize.findings(text, self.in_protected):
            if (text.rfind("\n", 0, offset), same_as) not in lines_reported:
                self.findings.append((offset, "hazard", snippet, warpsize.CODE, message))
        version, defined = _definitions_for(self.options.hip_version)
        for found in redefinitions.find(text, defined, version, self.in_protected):
            self.findings.append(
                (found.offset, "hazard", found.signature, redefinitions.CODE, found.message)
            )

    def _absent_device_function(self, name: str) -> str:
        """What to say of a call of a CUDA device function the target's headers lack (one list
        from two definitions, toolkit.absent_device_api); a file or tree that declares the name
        itself is quiet (see _user_defined_names)."""
        absent = toolkit.absent_device_api(self.options.hip_version or LATEST)
        header, hint = absent.entries.get(name, (toolkit.HIPIFY_TABLE, ""))
        where = f"in {header}" if header == toolkit.HIPIFY_TABLE else f"CUDA's {header}"
        return (
            f"{name} ({where}) is not declared by HIP {absent.release}'s headers"
            f"{': ' + hint if hint else ''}; port the call or keep it out of AMD builds"
        )

    def _lower_warp_sync(self, text: str) -> str:
        """HIP releases without `__shfl_xor_sync` & co. get the maskless intrinsics, reported."""
        lowered, count = warp.lower_sync_calls(text)
        if count:
            for offset, name in warp.sync_calls(self.text, self.in_protected):
                message = warp.WAVEFRONT_WARNING.format(lowered=warp.LOWERED[name])
                self.findings.append((offset, "hazard", name, "warp-sync-lowered", message))
        return lowered

    def in_protected(self, offset: int) -> bool:
        index = bisect.bisect_right(self.protected, (offset, len(self.text) + 1)) - 1
        return index >= 0 and self.protected[index][0] <= offset < self.protected[index][1]

    def _maybe_add_runtime_include(self) -> bool:
        """nvcc includes cuda_runtime.h implicitly in .cu files; hip-clang needs it spelled out."""
        if not self.options.add_runtime_include:
            return False
        has_device_code = any(marker in self.text for marker in _DEVICE_CODE)
        enough = {"hip/hip_runtime.h"} if has_device_code else _RUNTIME_HEADERS
        if self.first_hip_include in enough:
            return False
        uses_runtime = any(edit[3] in _RUNTIME_CATEGORIES for edit in self.edits)
        if not (uses_runtime or has_device_code):
            return False
        preamble = _PREAMBLE.match(self.text)
        position = preamble.end() if preamble else 0
        position = self.text.rfind("\n", 0, position) + 1  # start of the line, keep its indentation
        # Before the first edit at or after `position` (edits are sorted, insertions first).
        index = bisect.bisect_left(self.edits, position, key=_START)
        self.edits.insert(index, (position, position, HIP_RUNTIME_INCLUDE, "include"))
        return True

    def _diagnostics(self) -> tuple[Diagnostic, ...]:
        if not self.findings:
            return ()
        has_unconverted = any(may_be_users(kind, cat) for _, kind, _, cat, _ in self.findings)
        user_defined = self._user_defined_names() if has_unconverted else set()
        self.defined_names = frozenset(user_defined)
        findings = [
            f
            for f in sorted(self.findings)
            if not may_be_users(f[1], f[3]) or f[2] not in user_defined
        ]
        findings = self._in_dead_branches(findings)
        positions = line_columns(self.text, [f[0] for f in findings])
        result = []
        for (_, kind, name, category, message), (line, column) in zip(
            findings, positions, strict=True
        ):
            if kind == "unconverted" and not message:
                message = f"no HIP equivalent known for {category} name '{name}'"
            result.append(Diagnostic(kind, line, column, name, category, message))  # type: ignore[arg-type]
        return tuple(result)

    def _in_dead_branches(
        self, findings: list[tuple[int, str, str, str, str]]
    ) -> list[tuple[int, str, str, str, str]]:
        """Warnings inside a branch no AMD compile takes (`#ifndef __HIP_PLATFORM_AMD__`) become
        notes: hip-clang never sees that code."""
        spans = self.dead_spans()
        if not spans:
            return findings
        result = []
        for offset, kind, name, category, message in findings:
            branch = amd_branches.dead_branch(spans, offset) if kind != "note" else None
            if branch is not None:
                message = message or f"no HIP equivalent known for {category} name '{name}'"
                message += f" (not compiled for AMD: under {branch})"
                kind = "note"
            result.append((offset, kind, name, category, message))
        return result

    def _else_of_dead_branch(self, offset: int) -> bool:
        """Whether the code at `offset` is in the `#else` branch of a group whose `#if` branch no
        AMD compile takes (`#if __CUDA_ARCH__ >= 700 ... #else <here>`): AMD compiles it."""
        directive = hazards.directive_before(self.text, offset)
        if directive is None or directive[1] != "else":
            return False
        line_start = directive[0]
        hash_at = self.text.index("#", line_start)  # a dead span ends at the directive
        return any(end in (line_start, hash_at) for _, end, _ in self.dead_spans())

    def dead_spans(self) -> list[tuple[int, int, str]]:
        """The regions no AMD compile takes (amd_branches.py), found once per text."""
        if self._dead is None:
            options = self.options
            facts = _amd_facts(options.mappings, options.hip_version, options.amd_undefined_macros)
            self._dead = amd_branches.dead_spans(self.text, facts)
        return self._dead

    def _user_defined_names(self) -> set[str]:
        # Every occurrence of an unconverted name outside comments and literals is already a
        # finding, so one pass over the findings (not one scan of the text per name) suffices.
        defined: set[str] = set()
        for offset, kind, name, category, _ in self.findings:
            if not may_be_users(kind, category) or name in defined:
                continue
            if declarations.declares(self.text, offset, offset + len(name)):
                defined.add(name)
        return defined


# A device-function name HIP lacks (`umin`, `mulhi`) may be the project's own function.
DEVICE_FUNCTION = "device"


def may_be_users(kind: str, category: str) -> bool:
    """Whether a finding's name may be one the file defines itself (then it is not reported)."""
    return kind == "unconverted" or category == DEVICE_FUNCTION


_START = itemgetter(0)
# tuple.__new__ bound to Edit: the C constructor, without NamedTuple's Python-level __new__.
_as_edit: Callable[[tuple[int, int, str, str]], Edit] = functools.partial(tuple.__new__, Edit)
_START_END = itemgetter(0, 1)
_CATEGORY = itemgetter(3)
_REPLACEMENT = itemgetter(2)


def _apply(text: str, edits: list[tuple[int, int, str, str]]) -> str:
    if not edits:
        return text
    pieces, last = [], 0
    for start, end, replacement, _ in edits:
        pieces += [text[last:start], replacement]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)
