"""The corpus: real CUDA programs, their golden HIP translations, and compiling both sides.

Set ROCMKIT_REGEN_GOLDEN=1 to rewrite the golden files after a deliberate change (then review the diff).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rocmkit.hipify import TranslateOptions, translate
from rocmkit.hipify.check import check_compiles, find_hipcc, first_error_line

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CORPUS = Path(__file__).parent / "corpus"
GOLDEN = CORPUS / "golden"
PROGRAMS = sorted(CORPUS.glob("*.cu"))
EXPECTED = tomllib.loads((CORPUS / "expected_failures.toml").read_text())
LAUNCH_HIP = TranslateOptions(launch="hip")
# (golden file, options) for every translation the corpus pins down.
GOLDENS = [(GOLDEN / f"{p.stem}.hip", p, TranslateOptions()) for p in PROGRAMS] + [
    (GOLDEN / "template_launch.launch_hip.hip", CORPUS / "template_launch.cu", LAUNCH_HIP)
]


def test_corpus_is_big_enough():
    assert len(PROGRAMS) >= 15


@pytest.mark.parametrize(
    ("golden", "source", "options"), GOLDENS, ids=lambda v: getattr(v, "name", "")
)
def test_translation_matches_golden(golden: Path, source: Path, options: TranslateOptions):
    result = translate(source.read_text(), options=options)
    if os.environ.get("ROCMKIT_REGEN_GOLDEN") == "1":
        golden.write_text(result.text)
    assert result.text == golden.read_text()


@pytest.mark.parametrize("source", PROGRAMS, ids=lambda p: p.stem)
@pytest.mark.parametrize("mappings", ["auto", "builtin"])
def test_corpus_leaves_nothing_unconverted(source: Path, mappings):
    """Every CUDA name in the corpus has a HIP equivalent, with or without PyTorch's table."""
    result = translate(source.read_text(), options=TranslateOptions(mappings=mappings))
    leftovers = [d for d in result.diagnostics if d.kind in ("unconverted", "unsupported")]
    assert leftovers == []
    assert translate(result.text, options=TranslateOptions(mappings=mappings)).text == result.text


def test_builtin_table_gives_the_same_corpus_output_as_torch_table():
    for source in PROGRAMS:
        text = source.read_text()
        builtin = translate(text, options=TranslateOptions(mappings="builtin")).text
        assert builtin == translate(text).text, source.name


def test_warp_program_reports_its_hazards():
    result = translate((CORPUS / "warp_shuffle.cu").read_text())
    codes = {d.category for d in result.diagnostics if d.kind == "hazard"}
    assert {
        "warp-full-mask",
        "warp-lane-arithmetic",
        "warp-size-literal",
        "warp-ballot-width",
    } <= codes


def _header_found(header: str, roots: list[Path]) -> bool:
    return any((root / header).is_file() for root in roots)


def _expectation(compiler: str, stem: str, roots: list[Path]) -> tuple[bool, str]:
    """(should compile, text the first error must contain)."""
    entry = EXPECTED.get(compiler, {}).get(stem)
    if entry is None:
        return True, ""
    header = entry.get("missing_header")
    if header is not None:
        if _header_found(header, roots):
            return True, ""
        return (
            False,
            f"'{header}' file not found" if compiler == "hipcc" else f"{header}: No such file",
        )
    return False, entry["error"]


def _assert_outcomes(compiler: str, outcomes: dict[str, tuple[bool, str]], roots: list[Path]):
    problems = []
    for stem, (ok, error) in sorted(outcomes.items()):
        should_compile, expected_error = _expectation(compiler, stem, roots)
        if should_compile and not ok:
            problems.append(f"{stem}: expected to compile, failed with: {error}")
        elif not should_compile and ok:
            problems.append(f"{stem}: expected failure ({expected_error}) but it compiled")
        elif not should_compile and expected_error not in error:
            problems.append(f"{stem}: failed differently: {error!r}, expected {expected_error!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.hipcc
def test_translated_corpus_compiles_with_hipcc():
    hipcc = find_hipcc()
    if hipcc is None:
        pytest.skip(
            "hipcc is not installed (apt-get install hipcc libamdhip64-dev rocm-device-libs)"
        )
    units = [golden for golden, _, _ in GOLDENS]
    results = check_compiles(units, arch="gfx90a", jobs=4)
    outcomes = {
        r.path.name.removesuffix(".hip").split(".")[0] + _variant(r.path): (r.ok, r.first_error)
        for r in results
    }
    roots = [Path("/usr/include"), Path(os.environ.get("ROCM_PATH", "/opt/rocm")) / "include"]
    _assert_outcomes("hipcc", outcomes, roots)


def _variant(path: Path) -> str:
    return ".launch_hip" if ".launch_hip" in path.name else ""


def test_expected_failures_name_real_programs():
    stems = {p.stem for p in PROGRAMS}
    for compiler in ("hipcc", "nvcc"):
        for stem, entry in EXPECTED[compiler].items():
            assert stem in stems
            assert entry["reason"]
            assert ("missing_header" in entry) != ("error" in entry)


@pytest.mark.slow
def test_original_corpus_compiles_with_nvcc(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed")

    def compile_one(source: Path) -> tuple[str, tuple[bool, str]]:
        command = [nvcc, "-c", str(source), "-o", str(tmp_path / f"{source.stem}.o")]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
        return source.stem, (done.returncode == 0, first_error_line(done.stderr + done.stdout))

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = dict(pool.map(compile_one, PROGRAMS))
    cuda_root = Path(nvcc).resolve().parent.parent
    _assert_outcomes("nvcc", outcomes, [cuda_root / "include", Path("/usr/include")])
