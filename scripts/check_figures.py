"""Check that every figure in README.md and docs/*.md cites a benchmark result file (issue 27).

A figure is a number with a unit (ms, s, MB/s, GiB, tok/s, files/CPU-s, %, ...) or a ratio such as
`1.67x`, in prose or in a table column whose header names a unit. Code blocks, inline code, HTML
comments and link targets are not prose. Each figure must either

* be followed, in the same paragraph and before the next figure, by a link to its result file with
  the figure's path inside it:
  `1.67x ([result](../benchmarks/results/infer_local_fast.json#batch1.fast_over_eager))`.
  The path after `#` is dotted (keys may contain dots; the longest matching key wins); it is
  looked up from the document's top, then under `figures`; a figure object gives its `median`.
  A range `760-790 files/CPU-s` cites two paths separated by a comma (`#a.min,a.max`).
* or stand inside an entry of docs/figures-allowlist.toml (doc, text, reason; `scope = "block"`
  covers the whole paragraph or table that contains `text`): hardware facts with their source,
  settings and defaults, definitions, thresholds.

Rounding rule: the cited value is divided by the text's suffix (k = 1e3, M = 1e6), rounded half
to even to as many decimals as the text shows, and must equal the text's number (thousands commas
ignored). An allow-list entry that matches nothing is an error too (stale entries hide nothing).

    python scripts/check_figures.py [--list] [FILE.md ...]      # exit 1 on a problem
    python scripts/check_figures.py --fix    # first rewrite cited numbers from their files
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
ALLOWLIST = REPO / "docs" / "figures-allowlist.toml"

_UNIT = (
    r"(?:%|x(?![\w×])|[nuµm]?s(?!\w)|min(?!\w)|seconds?(?!\w)|minutes?(?!\w)|hours?(?!\w)"
    r"|[KMGTP]i?B(?:/s)?(?!\w)|[KMGTP]B/s|[GTP]?FLOPS(?!\w)|TFLOP/s|W(?!\w)|GHz(?!\w)"
    r"|(?:files?|req|requests|tok|tokens|img|images|samples)\s?(?:/\s?(?:CPU-)?s|per (?:CPU-)?s(?:econd)?)(?!\w)"
    r"|(?:files?|req|requests|tok|tokens|img|images|samples)/CPU-s)"
)
_NUMBER = r"\d[\d,]*(?:\.\d+)?[kM]?"
# A figure: a number (or a range of two) and a unit, not glued to a word, a version or a path.
FIGURE = re.compile(
    rf"(?<![\w.\-/^*])(?P<num>{_NUMBER})(?:\s?[-–]\s?(?P<num2>{_NUMBER}))?\s?(?P<unit>{_UNIT})"
    r"(?![·²³\w])"
)
# A bare number followed by a citation link is a figure too (the link target is blanked in prose).
CITED_NUMBER = re.compile(
    rf"(?<![\w.\-/^*])(?P<num>{_NUMBER})(?:\s?[-–]\s?(?P<num2>{_NUMBER}))?(?=\s?\(?\[[^\]]*\]\(\s)"
)
CITATION = re.compile(
    r"\[[^\]]*\]\((?P<target>[^)\s]*benchmarks/results/[^)\s#]+\.json)#(?P<path>[^)\s]+)\)"
)
_TABLE_UNIT = re.compile(
    r"/s\b|/CPU-s|\((?:ms|s|us|MiB|GiB|MB|GB|%)\)|\b(?:ms|MiB|GiB|MB/s|GB/s|TFLOPS)\b"
    r"|\bwall s\b|\bCPU s\b|\bratio\b| / |\w s\s*$"
)
_CELL_NUMBER = re.compile(rf"^\s*(?P<num>{_NUMBER})(?P<x>x)?\s*(?=\[|$)")


@dataclass(frozen=True)
class Figure:
    doc: str
    line: int
    start: int  # offset in the document
    end: int
    text: str
    numbers: tuple[str, ...]
    citation: tuple[str, str] | None  # (target, path) of the link after it


@dataclass(frozen=True)
class Problem:
    doc: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.message}"


def blank_non_prose(text: str) -> str:
    """The document with code blocks, inline code, HTML comments and link targets blanked out
    (same length, newlines kept, so offsets and line numbers still point into the original)."""

    def blank(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match.group())

    text = re.sub(r"(?ms)^(```|~~~).*?^\1[^\n]*$", blank, text)
    text = re.sub(r"(?s)<!--.*?-->", blank, text)
    text = re.sub(r"``[^`\n]+``|`[^`\n]+`", blank, text)
    return re.sub(r"(?<=\])\([^)\s]*\)", lambda m: "(" + blank(m)[1:], text)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def find_figures(doc: str, text: str) -> list[Figure]:
    """Every figure of a document, with the citation link that follows it, if any."""
    prose = blank_non_prose(text)
    spans = [(m.start(), m.end(), (m["num"], m["num2"]) if m["num2"] else (m["num"],))
             for pattern in (FIGURE, CITED_NUMBER) for m in pattern.finditer(prose)]  # fmt: skip
    spans += _table_figures(prose)
    spans = _outermost(sorted({s[:2]: s for s in spans}.values()))
    figures = []
    for index, (start, end, numbers) in enumerate(spans):
        line_end = text.find("\n\n", end)  # the citation follows in the same paragraph
        stop = min(line_end if line_end >= 0 else len(text),
                   spans[index + 1][0] if index + 1 < len(spans) else len(text))  # fmt: skip
        link = CITATION.search(text, end, stop)
        figures.append(Figure(doc, _line_of(text, start), start, end, text[start:end], numbers,
                              (link["target"], link["path"]) if link else None))  # fmt: skip
    return figures


def _outermost(
    spans: list[tuple[int, int, tuple[str, ...]]],
) -> list[tuple[int, int, tuple[str, ...]]]:
    """Drop a span inside another one (a cited number that is also a figure with its unit)."""
    kept: list[tuple[int, int, tuple[str, ...]]] = []
    for span in sorted(spans, key=lambda s: (s[0], -s[1])):
        if kept and span[0] < kept[-1][1]:
            continue
        kept.append(span)
    return kept


def _table_figures(prose: str) -> list[tuple[int, int, tuple[str, ...]]]:
    """Bare numbers in table columns whose header names a unit (`| tok/s |` over `| 4,597 |`)."""
    found: list[tuple[int, int, tuple[str, ...]]] = []
    header: list[str] | None = None
    offset = 0
    for line in prose.splitlines(keepends=True):
        stripped = line.strip()
        if not stripped.startswith("|"):
            header = None
        elif header is None:
            header = stripped.strip("|").split("|")
        elif not re.fullmatch(r"\|?[\s:|-]+\|?", stripped):
            cell_start = offset + line.index("|") + 1
            for column, cell in enumerate(line.strip().strip("|").split("|")):
                unit = column < len(header) and _TABLE_UNIT.search(header[column])
                match = _CELL_NUMBER.match(cell)
                if unit and match:
                    start = cell_start + match.start("num")
                    stop = match.end("x") if match["x"] else match.end("num")
                    found.append((start, cell_start + stop, (match["num"],)))
                cell_start += len(cell) + 1
        offset += len(line)
    return found


def resolve(document: Any, path: str) -> Any:
    """The value at a dotted path; keys may contain dots (longest key first)."""
    for root in (document, document.get("figures", {}) if isinstance(document, dict) else {}):
        value = _walk(root, path.split("."))
        if value is not None:
            return value["median"] if isinstance(value, dict) and "median" in value else value
    raise KeyError(path)


def _walk(node: Any, parts: list[str]) -> Any:
    if not parts:
        return node
    if isinstance(node, list) and parts[0].isdigit() and int(parts[0]) < len(node):
        return _walk(node[int(parts[0])], parts[1:])
    if not isinstance(node, dict):
        return None
    for size in range(len(parts), 0, -1):
        key = ".".join(parts[:size])
        if key in node:
            found = _walk(node[key], parts[size:])
            if found is not None:
                return found
    return None


def matches(shown: str, value: float) -> tuple[bool, str]:
    """Does `shown` (e.g. "20,421", "345k", "1.67") equal `value` under the rounding rule?"""
    scale = {"k": 1e3, "M": 1e6}.get(shown[-1], 1.0)
    digits = shown.rstrip("kM").replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    expected = f"{value / scale:.{decimals}f}"
    return expected == digits, expected + ("" if scale == 1.0 else shown[-1])


def formatted(shown: str, value: float) -> str:
    """`value` written like `shown` (its decimals, suffix and thousands commas); a placeholder
    "0" gets the precision a reader needs (0, 1 or 2 decimals by size)."""
    suffix = shown[-1] if shown[-1] in "kM" else ""
    value /= {"k": 1e3, "M": 1e6}.get(suffix, 1.0)
    digits = shown.rstrip("kM").replace(",", "")
    if digits == "0":
        decimals = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2
    else:
        decimals = len(digits.split(".")[1]) if "." in digits else 0
    comma = "," if ("," in shown or digits == "0") and abs(value) >= 1_000 else ""
    return f"{value:{comma}.{decimals}f}{suffix}"


def fix(path: Path, root: Path = REPO) -> int:
    """Rewrite every cited number of one document from its result file; returns how many moved."""
    text = path.read_text()
    cache: dict[Path, Any] = {}
    edits = []
    for figure in find_figures(_name(path, root), text):
        if figure.citation is None:
            continue
        target, paths = figure.citation
        file = (path.parent / target).resolve()
        try:
            document = cache.setdefault(file, json.loads(file.read_text()))
            values = [float(resolve(document, key)) for key in paths.split(",")]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if len(values) != len(figure.numbers):
            continue
        new = figure.text
        offset = 0
        for shown, value in zip(figure.numbers, values, strict=True):
            at = new.index(shown, offset)
            replacement = formatted(shown, value)
            new = new[:at] + replacement + new[at + len(shown) :]
            offset = at + len(replacement)
        if new != figure.text:
            edits.append((figure.start, figure.end, new))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    if edits:
        path.write_text(text)
    return len(edits)


def check_citation(figure: Figure, doc_path: Path, cache: dict[Path, Any]) -> Problem | None:
    assert figure.citation is not None
    target, paths = figure.citation
    file = (doc_path.parent / target).resolve()
    if file not in cache:
        try:
            cache[file] = json.loads(file.read_text())
        except (OSError, ValueError) as error:
            return Problem(figure.doc, figure.line, f"{figure.text!r} cites {target}: {error}")
    keys = paths.split(",")
    if len(keys) != len(figure.numbers):
        return Problem(figure.doc, figure.line,
                       f"{figure.text!r} shows {len(figure.numbers)} number(s), cites {len(keys)}")  # fmt: skip
    for shown, key in zip(figure.numbers, keys, strict=True):
        try:
            value = resolve(cache[file], key)
        except KeyError:
            return Problem(figure.doc, figure.line, f"{figure.text!r}: no {key!r} in {target}")
        if not isinstance(value, (int, float)):
            return Problem(figure.doc, figure.line, f"{figure.text!r}: {key!r} is not a number")
        ok, expected = matches(shown, float(value))
        if not ok:
            return Problem(figure.doc, figure.line,
                           f"{figure.text!r} but {Path(target).name}#{key} gives {expected}")  # fmt: skip
    return None


@dataclass(frozen=True)
class Allowed:
    doc: str
    text: str
    reason: str
    scope: str  # "text" or "block"


def load_allowlist(path: Path) -> list[Allowed]:
    if not path.exists():
        return []
    entries = tomllib.loads(path.read_text()).get("allow", [])
    allowed = []
    for entry in entries:
        if not entry.get("reason"):
            raise SystemExit(f"{path}: entry {entry.get('text')!r} has no reason")
        scope = entry.get("scope", "text")
        if scope not in ("text", "block"):
            raise SystemExit(f"{path}: entry {entry.get('text')!r}: scope is text or block")
        allowed.append(Allowed(entry["doc"], entry["text"], entry["reason"], scope))
    return allowed


def allowed_spans(text: str, entry: Allowed) -> list[tuple[int, int]]:
    """Where an entry applies in a document: its text (whitespace-insensitive), or its block."""
    pattern = r"\s+".join(re.escape(word) for word in entry.text.split())
    spans = []
    for match in re.finditer(pattern, text):
        start, end = match.start(), match.end()
        if entry.scope == "block":
            before = text.rfind("\n\n", 0, start)
            after = text.find("\n\n", end)
            start, end = before + 1, after if after >= 0 else len(text)
        spans.append((start, end))
    return spans


def check(
    docs: list[Path], allowlist: list[Allowed], root: Path = REPO
) -> tuple[list[Problem], list[Figure]]:
    """Problems of these documents, and every figure found (for --list)."""
    problems: list[Problem] = []
    everything: list[Figure] = []
    used: set[Allowed] = set()
    cache: dict[Path, Any] = {}
    for path in docs:
        name = _name(path, root)
        text = path.read_text()
        entries = [e for e in allowlist if e.doc == name]
        spans = {e: allowed_spans(text, e) for e in entries}
        for figure in find_figures(name, text):
            everything.append(figure)
            if figure.citation is not None:
                problem = check_citation(figure, path, cache)
                if problem:
                    problems.append(problem)
                continue
            covering = [e for e, s in spans.items() if any(a <= figure.start and figure.end <= b
                                                          for a, b in s)]  # fmt: skip
            used.update(covering)
            if not covering:
                problems.append(Problem(name, figure.line, f"uncited figure {figure.text!r}: "
                                        "cite its result file or allow-list it"))  # fmt: skip
    names = {_name(p, root) for p in docs}
    for entry in allowlist:
        if entry.doc in names and entry not in used:
            problems.append(
                Problem(entry.doc, 0, f"allow-list entry matches no figure: {entry.text!r}")
            )
    return problems, everything


def _name(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def default_docs(root: Path = REPO) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", nargs="*", type=Path, help="default: README.md docs/*.md")
    parser.add_argument("--allowlist", type=Path, default=ALLOWLIST)
    parser.add_argument(
        "--root", type=Path, default=REPO, help="paths in the allow-list are relative to it"
    )
    parser.add_argument("--list", action="store_true", help="print every figure found")
    parser.add_argument(
        "--fix", action="store_true", help="rewrite cited numbers from their result files first"
    )
    args = parser.parse_args(argv)
    docs = args.docs or default_docs(args.root)
    if args.fix:
        for doc in docs:
            moved = fix(doc, args.root)
            if moved:
                print(
                    f"{_name(doc, args.root)}: {moved} cited figure(s) rewritten from result files"
                )
    problems, figures = check(docs, load_allowlist(args.allowlist), args.root)
    if args.list:
        for figure in figures:
            how = "cited" if figure.citation else "uncited"
            print(f"{figure.doc}:{figure.line}: {figure.text!r} {how}")
    for problem in problems:
        print(problem, file=sys.stderr)
    cited = sum(1 for f in figures if f.citation)
    print(f"check_figures: {len(figures)} figures in {len(docs)} documents, {cited} cited, "
          f"{len(problems)} problem(s)")  # fmt: skip
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
