"""The scanning engine's shortcuts (byte pre-filter, trigger tests, partial parsing) change no
finding (issue 26 speed): the fixture trees give the stored findings, pruned and whole-file scans of
every fixture Python file agree, and a rule added to a rule set is seen by the fast path without
any second list of trigger words."""

from __future__ import annotations

import ast
import json
import os
import re
import textwrap
from pathlib import Path

import engine_snapshot
import pytest

from rocmkit.port import (
    PortConfig,
    build_flags,
    capability_tables,
    load_rules,
    nvml_query,
    pieces,
    python_scan,
    scan_project,
    vendor_loading,
    whole_tree,
)
from rocmkit.port.python_scan import scan_python
from rocmkit.port.rules import parse_rules
from rocmkit.port.text_scan import ScanError

# A module of plain code around the lines that matter, so that a file holds far more text than
# the statements a rule can match (the shape where partial parsing pays).
FILLER = "".join(
    f"def helper_{i}(x):\n    return [x * {i} for _ in range(3)]\n\n" for i in range(40)
)


def test_findings_on_the_fixture_trees_equal_the_stored_snapshot() -> None:
    stored = json.loads(engine_snapshot.SNAPSHOT.read_text())
    now = engine_snapshot.current()
    differ = sorted(k for k in stored.keys() | now.keys() if stored.get(k) != now.get(k))
    assert not differ, (
        f"findings changed on {differ}; an engine change must not change them (for an intended"
        " rule change: PYTHONPATH=src python tests/port/engine_snapshot.py --write)"
    )


def _fixture_python_files() -> list[Path]:
    return sorted(engine_snapshot.FIXTURES.rglob("*.py"))


@pytest.mark.parametrize("path", _fixture_python_files(), ids=lambda p: p.name)
def test_pruned_scan_equals_whole_file_scan_on_fixture_python_files(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    rules, setup = load_rules(), os.path.basename(path) == "setup.py"
    try:
        whole, _ = scan_python(text, rules, is_setup=setup, exhaustive=True)
    except ScanError:
        pytest.skip("does not parse as a whole")
    pruned, _ = scan_python(text, rules, is_setup=setup)
    key = lambda h: (h.line, h.column, h.rule.id, h.severity, h.evidence)  # noqa: E731
    assert sorted(map(key, pruned)) == sorted(map(key, whole))


NEW_RULES = """
[[rule]]
id = "zz-import"
severity = "error"
title = "a CUDA-only module"
fix = "drop it"
source = "https://example.org/zz"
imports = ["zzcudalib"]

[[rule]]
id = "zz-env"
severity = "warn"
title = "an NVIDIA-only variable"
fix = "drop it"
source = "https://example.org/zz"
env = ["ZZGPU_*"]

[[rule]]
id = "zz-command"
severity = "warn"
title = "an NVIDIA-only tool"
fix = "use the AMD one"
source = "https://example.org/zz"
commands = ["zz-smi"]

[[rule]]
id = "zz-url"
severity = "error"
title = "a CUDA-only index"
fix = "use the ROCm one"
source = "https://example.org/zz"
files = ["python", "dockerfile"]
pattern = 'zzwheels\\.example/cu\\d+'
triggers = ["zzwheels.example"]
"""

NEW_HAZARDS = (
    FILLER
    + "import zzcudalib\n\n\n"
    + "class Launcher:\n"
    + "    '''Starts jobs.'''\n\n"
    + "".join(f"    def step_{i}(self):\n        return {i}\n\n" for i in range(30))
    + "    def run(self):\n"
    + "        os.environ['ZZGPU_MODE'] = '1'\n"
    + "        subprocess.run(['zz-smi', '-q'])\n"
    + "        return 'https://zzwheels.example/cu121'\n"
    + FILLER
)


def test_a_rule_added_to_a_rule_set_is_found_by_the_fast_path(tmp_path: Path) -> None:
    builtin = (Path(__file__).resolve().parents[2] / "src/rocmkit/port/rules.toml").read_text()
    rules = parse_rules(builtin + NEW_RULES)
    (tmp_path / "launch.py").write_text(NEW_HAZARDS)
    (tmp_path / "Dockerfile").write_text(
        "FROM ubuntu\nRUN pip install -f https://zzwheels.example/cu121 x\n"
    )
    config = PortConfig(path=tmp_path, show_info=True)
    found = {(f.path, f.line, f.rule_id) for f in scan_project(config, rules).findings}
    lines = NEW_HAZARDS.splitlines()

    def at(text: str) -> int:
        return lines.index(text) + 1

    assert found == {
        ("launch.py", at("import zzcudalib"), "zz-import"),
        ("launch.py", at("        os.environ['ZZGPU_MODE'] = '1'"), "zz-env"),
        ("launch.py", at("        subprocess.run(['zz-smi', '-q'])"), "zz-command"),
        ("launch.py", at("        return 'https://zzwheels.example/cu121'"), "zz-url"),
        ("Dockerfile", 2, "zz-url"),
    }
    # The built-in rules know none of these words: the same tree gives nothing.
    assert scan_project(config).findings == ()


CLASS_MODULE = (
    "import torch\n\n\n"
    "class Builder(Base):\n"
    '    """A builder.\n\n'
    "    def looks_like_a_method(self):  (inside the docstring)\n"
    '    """\n\n'
    "    WARP_SIZE = 32\n\n"
    + "".join(f"    def step_{i}(self):\n        return {i}\n\n" for i in range(40))
    + "    @staticmethod\n"
    "    def flags():\n"
    "        if torch.version.hip:\n"
    "            return []\n"
    "        return ['-gencode', 'arch=compute_80,code=sm_80']\n\n"
    "    def version(self):\n"
    "        major = torch.version.cuda \\\n"
    "    .split('.')[0]\n"
    "        return major\n\n"
    "    def capability(self):\n"
    "        cap = torch.cuda.get_device_capability()\n"
    "        return cap >= (9, 0)\n"
    + "".join(f"    def other_{i}(self):\n        return {i}\n\n" for i in range(40))
    + "from torch.utils.cpp_extension import CUDAExtension\n"
)


def test_a_class_is_parsed_in_pieces_and_judged_as_a_whole() -> None:
    rules = load_rules()
    whole, _ = scan_python(CLASS_MODULE, rules, exhaustive=True)
    pruned, _ = scan_python(CLASS_MODULE, rules)
    key = lambda h: (h.line, h.column, h.rule.id, h.severity, h.evidence)  # noqa: E731
    assert sorted(map(key, pruned)) == sorted(map(key, whole))
    assert {h.rule.id for h in whole} == {
        "warp-size-32",
        "nvcc-only-flags",  # gated by the `if torch.version.hip: return` above it: info
        "torch-version-cuda",
        "device-capability",
    }
    # Only the class header and the methods holding a trigger are parsed, at their own lines.
    offsets = [CLASS_MODULE.index(t) for t in ("WARP_SIZE", "-gencode", "version.cuda", "get_dev")]
    source = pieces.plan(CLASS_MODULE, offsets, None).sources[0]
    line = "    def flags():"
    assert source.splitlines().index(line) == CLASS_MODULE.splitlines().index(line)
    assert "class Builder(Base):" in source and "def flags" in source and "def step_3" not in source
    assert len(source.replace("\n", "")) < len(CLASS_MODULE) // 4


FUNCTION_MODULE = (
    "from torch.utils.cpp_extension import CUDAExtension\n"
    "import torch\n\n"
    "ready = torch.version.hip is not None\n\n\n"
    "def build(sources):\n"
    '    """Build the kernels.\n\n'
    "    if not ready:  (inside the docstring)\n"
    '    """\n'
    + "".join(f"    step_{i} = [s * {i} for s in sources]\n" for i in range(60))
    + "    if not ready:\n"  # no vendor word, yet a gate: ready holds a vendor test
    "        return None\n"
    + "".join(f"    more_{i} = [s + {i} for s in sources]\n" for i in range(60))
    + "    flags = ['-gencode', 'arch=compute_80,code=sm_80']\n"
    "    return CUDAExtension('k', sources, extra_compile_args={'nvcc': flags})\n"
)


def test_a_function_body_is_parsed_in_pieces_and_judged_as_a_whole() -> None:
    rules = load_rules()
    whole, _ = scan_python(FUNCTION_MODULE, rules, exhaustive=True)
    pruned, _ = scan_python(FUNCTION_MODULE, rules)
    key = lambda h: (h.line, h.column, h.rule.id, h.severity, h.evidence)  # noqa: E731
    assert sorted(map(key, pruned)) == sorted(map(key, whole))
    # The flags and the extension come after `if not ready: return`: one side of a switch.
    assert {(h.rule.id, h.severity) for h in whole} >= {("nvcc-only-flags", "info")}
    offsets = [FUNCTION_MODULE.index(t) for t in ("-gencode", "CUDAExtension('k'", "version.hip")]
    source = pieces.plan(FUNCTION_MODULE, offsets, None).sources[0]
    # The statements that hold a trigger and the `if ...: return` that may gate them, at their
    # own lines; the other statements of the body are not parsed.
    line = "    if not ready:"
    assert source.splitlines().index(line) == FUNCTION_MODULE.splitlines().index(line)
    assert "step_3 =" not in source and "more_3 =" not in source and "-gencode" in source
    assert len(source.replace("\n", "")) < len(FUNCTION_MODULE) // 4


def test_trigger_keys_on_the_raw_bytes_equal_a_substring_test_per_key() -> None:
    rules = load_rules()
    keys = [k for k, _ in python_scan._trigger_groups(rules)]
    samples = [path.read_bytes() for path in sorted(engine_snapshot.FIXTURES.rglob("*.py"))]
    samples += [b"CUDNN Cutlass cudacudnn NVITOP nvidia_x", b"", "caf\u00e9 Warp".encode()]
    # keys that share a pattern (nv..., py...), one right after another's match
    samples += [b"pytorch/pytorch/pynvml", b"nvmlinitnvidia", b"pytorch/pykeops", b"PyNVML"]
    for data in samples:
        text = data.decode("utf-8").lower()
        assert python_scan.trigger_keys(data, rules) == tuple(k for k in keys if k in text)


def test_triggers_found_at_their_keys_spellings_equal_a_substring_test_per_trigger() -> None:
    rules = load_rules()
    groups = python_scan._trigger_groups(rules)
    samples = [path.read_text() for path in sorted(engine_snapshot.FIXTURES.rglob("*.py"))]
    samples += ["cuda", "CUDA_HOMEcuda.cudart", "xNVIDIA_REQUIRE_CUDA", "\u00e9 torch.version.cuda"]
    samples += ["from torch.version import cuda", "libnvidia-ml nvcr.io/nvidia", "NVIDIA_VISIBLE"]
    samples += [" ".join(t for _, group in groups for t in group)]
    for text in samples:
        for key, group in groups:
            assert set(python_scan._held(text, key, group)) == {t for t in group if t in text}
    assert any(python_scan._spellings(key, group) for key, group in groups)  # the shortcut runs


def test_vendor_tokens_found_at_their_keys_equal_a_search_for_each_token() -> None:
    samples = [path.read_text() for path in sorted(engine_snapshot.FIXTURES.rglob("*.py"))]
    samples += ["a chip and a relationship", "chip_HIP", "x = 'amd'", "Kelvin \u212a _hip"]
    samples += ["ship_it = 1", "torch.version.hip", "commandline", "'nvidia'", "nvidiax"]
    found = 0
    for text in samples:
        expected = any(t in text for t in python_scan.VENDOR_TOKENS)
        assert python_scan.vendor_possible(text) is expected, text
        found += expected
    assert 0 < found < len(samples)


IF_MODULE = (
    "import torch\n\n"
    "if torch.version.cuda is None:\n"
    + "".join(f"    step_{i} = [{i}] * 3\n" for i in range(60))
    + "    raise RuntimeError('this build needs CUDA')\n"
    "elif FAST:\n"
    + "".join(f"    fast_{i} = [{i}] * 3\n" for i in range(60))
    + "    import flash_attn\n"
    + "".join(f"    more_{i} = [{i}] * 3\n" for i in range(60))
    + "else:\n"
    + "".join(f"    slow_{i} = [{i}] * 3\n" for i in range(60))
)


def test_a_top_level_if_is_parsed_in_pieces_and_judged_as_a_whole() -> None:
    rules = load_rules()
    whole, _ = scan_python(IF_MODULE, rules, exhaustive=True)
    pruned, _ = scan_python(IF_MODULE, rules)
    key = lambda h: (h.line, h.column, h.rule.id, h.severity, h.evidence)  # noqa: E731
    assert sorted(map(key, pruned)) == sorted(map(key, whole))
    # The branch ends in raise, 60 lines below the test: the check refuses every ROCm build.
    assert any("rejects ROCm" in h.evidence for h in whole)
    assert ("flash-attn", "info") in {(h.rule.id, h.severity) for h in whole}  # gated
    offsets = [IF_MODULE.index(t) for t in ("version.cuda", "flash_attn")]
    source = pieces.plan(IF_MODULE, offsets, None).sources[0]
    # Each clause's header, first and last statements and the one holding the import.
    for line in ("elif FAST:", "else:", "    import flash_attn", "    raise RuntimeError('this"):
        at = [i for i, text in enumerate(IF_MODULE.splitlines()) if text.startswith(line)]
        assert [i for i, text in enumerate(source.splitlines()) if text.startswith(line)] == at
    assert "step_3 =" not in source and "fast_3 =" not in source and "slow_3 =" not in source
    assert len(source.replace("\n", "")) < len(IF_MODULE) // 4


def test_the_vendor_token_pre_check_equals_a_substring_test_per_token() -> None:
    texts = [path.read_text() for path in sorted(engine_snapshot.FIXTURES.rglob("*.py"))]
    texts += [*python_scan.VENDOR_TOKENS, "x = HIP_VISIBLE", "IS_CUDA", "Hip", "import os"]
    # Non-ASCII text, where str.lower() changes lengths (İ) or folds into ASCII (the Kelvin sign).
    texts += ["# İ\nx = 'nvidia_smi'", "s = 'İİİ' + is_cuda", "\u212a = 'ROCm'", "ship = '✓ chip'"]
    texts += ["# ﬁle\nAMD = 1", "\u212aHIP", "émd = 'ɑmd'", "s = 'İHip'"]
    for text in texts:
        expected = any(t in text for t in python_scan.VENDOR_TOKENS)
        assert python_scan.vendor_possible(text) is expected, text


def test_vendor_word_places_equal_the_alternation_regex_scan() -> None:
    texts = [path.read_text() for path in sorted(engine_snapshot.FIXTURES.rglob("*.py"))]
    texts += ["version.hip_amd_ x_hip_rocm_amd-smi amdsmi 'amd' nvidia_nvml HIPHIP", ""]
    for text in texts:
        for start, end in ((0, len(text)), (3, len(text) // 2)):
            expected = [m.start() for m in python_scan._VENDOR_TEXT.finditer(text, start, end)]
            assert python_scan.vendor_starts(text, start, end) == expected


def test_warp_places_equal_the_confirm_regex_scan() -> None:
    texts = [path.read_text() for path in sorted(engine_snapshot.FIXTURES.rglob("*.py"))]
    texts.append("THREADS_PER_WARP = 32; warp_size=32 lanes_per_warp: int = 32\nWARPSIZE = 64\n")
    for text in texts:
        expected = [m.start() for m in python_scan._WARP_CONFIRM.finditer(text)]
        assert python_scan._warp_confirmed(text) == expected


def test_files_skipped_on_their_bytes_are_still_checked_for_utf8(tmp_path: Path) -> None:
    # None of these holds a trigger: the fast path never decodes them, yet a file that is not
    # UTF-8 or is binary is reported as before, and valid UTF-8 beyond ASCII is not.
    (tmp_path / "latin1.py").write_bytes("# caf\xe9\nx = 1\n".encode("latin-1"))
    (tmp_path / "binary.py").write_bytes(b"\x00\x01x = 1\n")
    (tmp_path / "utf8.py").write_text("# caf\xe9, \u00fcber\nx = 1\n", encoding="utf-8")
    report = scan_project(PortConfig(path=tmp_path))
    assert {i.path: i.reason for i in report.issues} == {
        "latin1.py": "not UTF-8 (byte 5); skipped",
        "binary.py": "binary file; skipped",
    }
    assert report.num_files == {"python": 3}


# -- the shortcuts of round four: each equals the plain code it replaces ----------------------


def _fixture_texts() -> list[str]:
    return [path.read_text() for path in sorted(engine_snapshot.FIXTURES.rglob("*.py"))]


def test_statement_nodes_are_the_statements_of_ast_walk_in_its_order() -> None:
    blocks = (ast.Module, ast.stmt, ast.excepthandler, ast.match_case)
    match = "match x:\n    case 1:\n        import a\n    case _:\n        pass\n"
    for text in [*_fixture_texts(), match]:
        tree = ast.parse(text)
        expected = [n for n in ast.walk(tree) if isinstance(n, blocks)]
        assert list(pieces.statement_nodes(tree)) == expected


def test_the_node_search_finds_every_node_of_ast_walk_but_the_contexts() -> None:
    for text in _fixture_texts():
        tree = ast.parse(text)
        expected = {id(n) for n in ast.walk(tree) if not isinstance(n, ast.expr_context)}
        assert {id(n) for n in python_scan._nodes(tree)} == expected


def _gated_by_a_whole_walk(text: str, rel: str) -> dict[str, int]:
    """vendor_loading._gated_imports as it was: the whole file parsed, every node walked."""
    tree = ast.parse(text)
    gated: dict[str, int] = {}
    gated_nodes: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            for statement in vendor_loading._cuda_side(node):
                for n in ast.walk(statement):
                    if isinstance(n, ast.ImportFrom) and n.level:
                        gated_nodes.add(id(n))
                        for dotted in vendor_loading._resolved(n, rel):
                            gated.setdefault(dotted, n.lineno)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level and id(node) not in gated_nodes:
            for dotted in vendor_loading._resolved(node, rel):
                gated.pop(dotted, None)
    return gated


GATES = {
    "if-else": "if torch.version.cuda:\n    from .cuda import *\nelse:\n    from .cpu import *\n",
    "imported-again": "if torch.version.cuda:\n    from .cuda import *\nfrom .cuda import x\n",
    "in-a-function": "def f():\n    if not torch.version.hip:\n        from . import ops\n    return 1\n",
    "bracketed": "if (\n    torch.version.cuda\n):\n    from.cuda import k\n",
    "continued": "if torch.\\\n        version.cuda is not None:\n    from .a import b\n",
    "in-a-class": "class A:\n    if torch.version.hip is None:\n        from ..x import y\n",
    "after-a-string": "x = '''\nif torch.version.cuda:\n'''\nif torch.version.cuda:\n    from .z import q\n",
    "in-a-handler": "try:\n    pass\nexcept Exception:\n    if torch.version.cuda:\n        from .w import v\n",
    "elif": "if torch.version.cuda:\n    from .a import b\nelif torch.version.hip:\n"
    "    from .c import d\nelse:\n    from .e import f\n",
    "not-a-test": "v = torch.version.cuda\nif v:\n    from .a import b\n",
}


@pytest.mark.parametrize("name", sorted(GATES))
def test_cuda_loading_gates_equal_a_walk_of_the_whole_file(name: str) -> None:
    text = "import torch\n" + FILLER + GATES[name]
    expected = _gated_by_a_whole_walk(text, "pkg/m/__init__.py")
    assert vendor_loading._gated_imports(text, "pkg/m/__init__.py") == expected
    assert bool(expected) is (name not in ("imported-again", "not-a-test"))


def test_def_name_searches_equal_their_regexes() -> None:
    tricky = ["def def rocm_a", "undef x\ndef _amd_y", "DEF _rocm_x", "Def is_hip", "xdef _hip"]
    tricky += ["\u00e9def _rocm_z", "def\n\n _hip_w(", "def"]
    for text in [*_fixture_texts(), *tricky]:
        assert python_scan._def_names(text) == python_scan._DEF_NAME.findall(text), text
        expected = bool(python_scan._OTHER_VENDOR_DEF.search(text))
        assert python_scan._defines_other_vendor(text) is expected, text


def test_whole_word_places_equal_a_word_boundary_regex() -> None:
    texts = [*_fixture_texts(), "_ a_ _a __ _\n major,minor=x; major_x xmajor \u00e9major major"]
    for text in texts:
        words = {"_", "major", "x", *re.findall(r"[A-Za-z_]\w*", text)[:20]}
        expected = sorted(
            {m.start() for w in words for m in re.finditer(rf"\b{re.escape(w)}\b", text)}
        )
        assert python_scan._word_offsets(text, words) == expected


SETUPS = [
    "setup(install_requires=reqs)\nreqs = ['flash-attn']\n",
    "reqs = ['flash-attn', 'xformers']\nsetup(install_requires = \\\n    reqs)\n",
    "reqs = ['xformers']\nsetup(\n    install_requires=  # pinned below\n    (reqs),\n)\n",
    "extras = {'gpu': ['flash-attn']}\n"
    "@decorate(setup(extras_require=extras))\ndef f():\n    pass\n",
    "extras = {}\nextras['gpu'] = ['xformers']\n"
    "if __name__ == '__main__':\n    setup(extras_require=extras)\n",
    "reqs = ['flash-attn']\nsetup(install_requires=[*reqs])\n",
    "reqs = ['flash-attn']\nsetup(install_requires=list(reqs), extras_require={'a': reqs})\n",
]


@pytest.mark.parametrize("index", range(len(SETUPS)))
def test_requirement_lists_passed_by_name_equal_a_walk_of_the_whole_file(index: int) -> None:
    rules = load_rules()
    text = FILLER + SETUPS[index]
    tree = ast.parse(text)
    passed = {
        keyword.value.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and python_scan._dotted(node.func).endswith("setup")
        for keyword in node.keywords
        if keyword.arg in python_scan._REQUIREMENT_KEYWORDS and isinstance(keyword.value, ast.Name)
    }
    hits = python_scan._named_requirement_hits(text, rules)
    assert bool(passed) is (index < 5)
    # From the statements that hold the keywords and the names: what the whole tree gives.
    parsed = whole_tree.Whole(text)
    parsed.tree()
    key = lambda h: (h.line, h.column, h.rule.id, h.severity, h.evidence)  # noqa: E731
    from_whole = python_scan._named_requirement_hits(text, rules, parsed)
    assert list(map(key, hits)) == list(map(key, from_whole))
    # Each requirement string of a list assigned to a passed name is found, at its line.
    assigned = {
        c.lineno
        for n in tree.body
        if isinstance(n, ast.Assign)
        and {t.id for t in ast.walk(n.targets[0]) if isinstance(t, ast.Name)} & passed
        for c in ast.walk(n.value)
        if isinstance(c, ast.Constant) and c.value in ("flash-attn", "xformers")
    }
    assert {h.line for h in hits} == assigned
    assert bool(assigned) is (index < 5)


BUILD_MODULE = (
    FILLER
    + "from torch.utils.cpp_extension import CUDAExtension, load as jit\n"
    + "flags = ['-O3']\n"
    + "try:\n"
    + "    import ninja\n"
    + "except ImportError:\n"
    + "    flags = ['-O2']  # bound in a handler: a statement the walk must keep\n"
    + "flags.append('--use_fast_math')\n"
    + "extra = {}\n"
    + "extra['nvcc'] = flags\n"
    + "match mode:\n"
    + "    case 'fast':\n"
    + "        extra['nvcc'].extend(['-Xptxas', '-v'])\n"
    + "ops = [helper_1(flags.insert(0, '-g')) for _ in range(1)]\n"
    + "ext = CUDAExtension('k', ['k.cu'], extra_compile_args=extra)\n"
    + "mod = jit('k', ['k.cu'], extra_cuda_cflags=flags)\n"
)


def _module_facts(module: build_flags._Module) -> tuple[object, ...]:
    def ids(nodes: list[ast.expr]) -> list[int]:
        return [id(n) for n in nodes]

    return (
        {k: id(v) for k, v in module.functions.items()},
        {k: ids(v) for k, v in module.values.items()},
        {k: ids(v) for k, v in module.keyed.items()},
        ids(module.sinks),
        ids(module.arg_dicts),
        module.jit_names,
        module.jit_modules,
    )


@pytest.mark.parametrize(
    "text",
    [
        BUILD_MODULE,
        *(t for p in _fixture_python_files() if "cpp_extension" in (t := p.read_text())),
    ],
)
def test_the_build_flow_read_from_the_lines_with_its_calls_equals_a_walk_of_every_node(
    text: str,
) -> None:
    # The nvcc flow reads every statement and only the expressions on lines that hold one of
    # the calls it follows; the same nodes, in the same order, as a walk of the whole tree.
    tree = pieces.parse(text)
    pruned = build_flags.read_module(tree, text)
    assert _module_facts(pruned) == _module_facts(build_flags.read_module(tree))
    direct, _ = build_flags.nvcc_arguments(tree, pruned)
    if text is BUILD_MODULE:
        assert {v for _, v in direct} >= {"-O2", "-O3", "--use_fast_math", "-Xptxas", "-g"}
        # ... and the list walk is ast.walk's order, less the contexts (Load, Store).
        expected = [n for n in ast.walk(tree) if not isinstance(n, ast.expr_context)]
        assert whole_tree.walk(tree) == expected


def test_warp_words_found_in_the_lower_cased_text_equal_the_case_insensitive_search() -> None:
    samples = [path.read_text() for path in sorted(engine_snapshot.FIXTURES.rglob("*.py"))]
    samples += ["WarpWARPwarp num_warps", "WAVEFRONTwarp", "wavefronwarp", "\u212a warp_size"]
    for text in samples:
        expected = [m.start() for m in python_scan._WARP_WORD.finditer(text)]
        assert python_scan._warp_words(text) == expected
    assert python_scan._warp_words("num_warps = 4; WAVEFRONT_SIZE = 64") == [4, 15]


VISIBLE_MODULE = (
    FILLER
    + "def docker_args(env):\n"
    + "    args = ['run']\n"
    + "    if env.get('CUDA_VISIBLE_DEVICES'):\n"
    + "        args += ['--gpus', 'all', '--runtime=nvidia']\n"
    + "    return args\n"
    + FILLER.replace("helper_", "other_")
    + "if os.environ.get('CUDA_VISIBLE_DEVICES') is not None:\n"
    + "    RUNTIME = 'nvidia'\n"
)


@pytest.mark.parametrize(
    "text",
    [
        VISIBLE_MODULE,
        *(t for p in _fixture_python_files() if "CUDA_VISIBLE_DEVICES" in (t := p.read_text())),
    ],
)
def test_the_visible_devices_check_on_its_statements_equals_the_check_on_the_whole_tree(
    text: str,
) -> None:
    rules = load_rules()
    parsed = whole_tree.Whole(text)
    parsed.tree()  # as when another check has parsed the whole file
    key = lambda h: (h.line, h.column, h.rule.id, h.severity, h.evidence)  # noqa: E731
    pruned = python_scan._visible_devices_as_vendor(text, rules)
    assert list(map(key, pruned)) == list(
        map(key, python_scan._visible_devices_as_vendor(text, rules, parsed))
    )
    if text is VISIBLE_MODULE:
        assert sorted(h.line for h in pruned) == [
            VISIBLE_MODULE.splitlines().index(line) + 1
            for line in (
                "    if env.get('CUDA_VISIBLE_DEVICES'):",
                "if os.environ.get('CUDA_VISIBLE_DEVICES') is not None:",
            )
        ]


NVML_MODULE = (
    "import os\n"
    + "import pynvml as nv\n"
    + FILLER
    + "class Monitor:\n"
    + "    def start(self):\n"
    + "        nv.nvmlInit()\n"
    + FILLER.replace("helper_", "other_")
    + "def count():\n"
    + "    return nv.nvmlDeviceGetCount()  # a query through the name, far from the import\n"
    + "def envelope():\n"
    + "    return 'nv'\n"
)


@pytest.mark.parametrize(
    "text",
    [NVML_MODULE, *(t for p in _fixture_python_files() if "nvml" in (t := p.read_text()))],
)
def test_nvml_queries_found_in_their_statements_equal_those_of_the_whole_tree(text: str) -> None:
    rules = load_rules()
    parsed = whole_tree.Whole(text)
    try:
        parsed.tree()  # as when another check has parsed the whole file
    except SyntaxError:
        pytest.skip("does not parse as a whole")
    hits, _ = python_scan._scan_python(text, rules)
    key = lambda h: (h.line, h.column, h.rule.id, h.severity, h.evidence)  # noqa: E731
    tree = python_scan._nvml_statements(text, hits, whole_tree.Whole(text))
    assert tree is not None
    moved = nvml_query.move_to_queries(tree, hits)
    assert list(map(key, moved)) == list(map(key, nvml_query.move_to_queries(parsed.tree(), hits)))
    if text is NVML_MODULE:
        source = NVML_MODULE.splitlines()
        # Round seven: a module that calls nvmlInit is reported there (its queries need it first);
        # round nine: and at its import, the module's only GPU API (no amdsmi side).
        assert {h.line for h in moved if h.rule.check == "nvml-call"} == {
            i + 1 for i, line in enumerate(source) if "nv.nvmlInit" in line or "as nv" in line
        }
        assert len(tree.body) < 10  # the import's statement and the class, not the fillers


def _table(last: str) -> str:
    rows = [f'    (\n        ("--opt-{i}",),\n        "help {i}",\n    ),\n' for i in range(300)]
    return (
        '"""Generated option table."""\n\n'
        "OPTIONS = (\n"
        + "".join(rows[:150])
        + '    (\n        ("--image",),\n        "see pytorch/pytorch#1234",\n    ),\n'
        + '    (\n        ("--base",),\n        "nvidia/cuda:12.4.1-base-ubuntu22.04",\n    ),\n'
        + "".join(rows[150:])
        + last
        + ")\n"
    )


@pytest.mark.parametrize("last", ["", '    ("--end", "pytorch/pytorch:2.1-cuda12")\n'])
def test_a_generated_table_is_parsed_by_its_items_and_judged_as_a_whole(last: str) -> None:
    rules = load_rules()
    text = _table(last)
    key = lambda h: (h.line, h.column, h.rule.id, h.severity, h.evidence)  # noqa: E731
    whole, _ = scan_python(text, rules, exhaustive=True)
    pruned, _ = scan_python(text, rules)
    assert sorted(map(key, pruned)) == sorted(map(key, whole))
    assert {h.rule.id for h in whole} == {"cuda-image"}
    offsets = python_scan._trigger_offsets(text, rules, frozenset())
    sources = pieces.plan(text, offsets, None).sources
    if last:  # an item with no comma after it: cut out, the value would be that item alone
        assert sources == ()  # so the statement, most of the file, is parsed whole
    else:  # only the items holding a trigger, at their own lines
        source = sources[0]
        assert "--opt-3" not in source and len(source.replace("\n", "")) < 200
        line = '        "nvidia/cuda:12.4.1-base-ubuntu22.04",'
        assert source.splitlines().index(line) == text.splitlines().index(line)


def test_setup_keyword_lines_equal_a_search_of_the_whole_pattern() -> None:
    def expected(text: str) -> list[int]:
        starts = [m.start() for m in python_scan._NAMED_KEYWORD.finditer(text)]
        return [text.count("\n", 0, s) + 1 for s in starts]

    samples = [FILLER + s for s in SETUPS]
    samples += [
        "setup(xinstall_requires=reqs, install_requires = \\\n  # c\n (reqs))\n",
        "setup(install_requires=setup_requires, extras_require==x)\n",
        "install_requires=install_requires\nsetup_requires = [\n]\n",
    ]
    for text in samples:
        assert python_scan._named_keyword_lines(text) == expected(text)
    assert python_scan._named_keyword_lines(samples[-3]) == [1]  # not xinstall_requires


def test_names_are_searched_in_text_whose_non_ascii_characters_cannot_spell_them() -> None:
    # Emoji, accents and CJK in strings leave every identifier's spelling as searched; a
    # fullwidth or ligature letter is an NFKC spelling of an ASCII name: the whole tree then.
    assert whole_tree.ascii_names("import pynvml\nLOGGER.info('✅ done, café, 完成')\n")
    assert not whole_tree.ascii_names("import pynvml as ｎv\nｎv.nvmlInit()\n")
    assert not whole_tree.ascii_names("ﬁle = 1\n")  # the fi ligature: `file`
    text = "import pynvml as nv\n# ✅ ready\n" + FILLER + "def f():\n    return nv.nvmlInit()\n"
    hits, _ = python_scan._scan_python(text, load_rules())
    tree = python_scan._nvml_statements(text, hits, whole_tree.Whole(text))
    assert tree is not None and len(tree.body) == 2  # the import and f, not the fillers


def test_relative_imports_found_from_their_word_equal_the_pattern_search() -> None:
    samples = [path.read_text() for path in sorted(engine_snapshot.FIXTURES.rglob("*.py"))]
    samples += ["from .x import y", "xfrom .x", "from\\\n.x import y", "_from . import z"]
    samples += ["a = 1\nfrom  . import b", "from x import y", "wherefrom .5", "é from .a import b"]
    found = 0
    for text in samples:
        expected = vendor_loading._RELATIVE_FROM.search(text) is not None
        assert vendor_loading._has_relative_from(text) is expected, text
        found += expected
    assert 0 < found < len(samples)


def test_a_file_that_does_not_parse_whole_gets_the_checks_its_statements_hold() -> None:
    # As the walk reads the pieces of such a file, the statement-read checks do too.
    text = VISIBLE_MODULE + 'print "python 2 left over"\n'
    with pytest.raises(SyntaxError):
        ast.parse(text)
    hits = python_scan._visible_devices_as_vendor(text, load_rules())
    lines = VISIBLE_MODULE.splitlines()
    assert sorted(h.line for h in hits) == [
        lines.index("    if env.get('CUDA_VISIBLE_DEVICES'):") + 1,
        lines.index("if os.environ.get('CUDA_VISIBLE_DEVICES') is not None:") + 1,
    ]


def test_nvcc_only_spellings_found_from_their_dash_equal_the_pattern_search() -> None:
    pattern = build_flags._nvcc_only_word()
    samples = [path.read_text() for path in sorted(engine_snapshot.FIXTURES.rglob("*.py"))]
    samples += ["flags = ['-std=c++17', '-O3']", "flags = ['-Xptxas', '-v']", "x = a-b --c"]
    samples += [
        'cmd = "nvcc --use_fast_math -lineinfo"',
        "f'-arch=sm_{cap}'",
        "'--maxrregcount=64'",
    ]
    found = 0
    for text in samples:
        expected = pattern.search(text) is not None
        assert build_flags.mentions_nvcc_only(text) is expected, text
        found += expected
    assert 0 < found < len(samples)


# Requirement strings near an installer call: one a ROCm machine installs, one behind the CUDA
# branch of a vendor switch decided by a name bound far away, and packages only named in messages.
INSTALLER_MODULE = (
    "import subprocess\nimport sys\n\nimport torch\n\n"
    + "ON_CUDA = torch.version.cuda is not None\n"
    + FILLER
    + "def check_requirements(requirements):\n    ...\n\n\n"
    + "def export(path):\n"
    + "    check_requirements(('onnx', 'onnxruntime-gpu' if torch.cuda.is_available() else 'x'))\n"
    + "    if ON_CUDA:\n"
    + "        check_requirements('pycuda')  # the CUDA side: not installed on ROCm\n"
    + "    subprocess.check_call([sys.executable, '-m', 'pip', 'install', 'onnxruntime-gpu'])\n"
    + FILLER.replace("helper_", "other_")
    + "def message():\n"
    + "    raise ImportError('onnxruntime-gpu is missing: install it with pip install pycuda')\n"
)


# ... and a message inside a class that is most of its module.
CLASS_MESSAGE = (
    "import subprocess\n\n\nclass Client:\n"
    + textwrap.indent(FILLER, "    ")
    + "    def connect(self):\n"
    + "        raise ImportError('vLLM is missing: install it with pip install onnxruntime-gpu')\n"
)


@pytest.mark.parametrize(
    "text",
    [
        INSTALLER_MODULE,
        CLASS_MESSAGE,
        MESSAGE_ONLY := INSTALLER_MODULE.replace("check_requirements(", "print(").replace(
            "'pip', 'install'", "'pip', 'list'"
        ),
        INSTALLER_MODULE.replace("if ON_CUDA:", "if not ON_CUDA:"),
        *(t for p in _fixture_python_files() if "install" in (t := p.read_text())),
    ],
)
def test_installer_check_parses_the_whole_file_only_when_its_statements_find_something(
    text: str,
) -> None:
    from rocmkit.port import installer

    rules = load_rules()
    lines = installer.package_lines(text, rules)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        pytest.skip("does not parse as a whole")
    key = lambda h: (h.line, h.column, h.rule.id, h.severity, h.evidence)  # noqa: E731
    whole = whole_tree.Whole(text)
    found = installer.run_time_hits(whole, rules, lines) if lines else []
    assert list(map(key, found)) == list(
        map(key, installer.installed_at_run_time(tree, rules, lines) if lines else [])
    )
    if text is INSTALLER_MODULE:
        shown = {(h.line, h.evidence.split()[0].strip("'\"")) for h in found}
        source = text.splitlines()
        assert shown == {
            (source.index(line) + 1, "onnxruntime-gpu")
            for line in source
            if "check_requirements(('onnx'" in line or "'pip', 'install'" in line
        }
        assert whole.parsed  # the `if ON_CUDA:` needed the module's bindings
    if text is MESSAGE_ONLY or text is CLASS_MESSAGE:
        assert lines and not found
        assert not whole.parsed  # packages named in a message are no reason for a whole parse


# nvidia-smi named in a function and launched through the name there, and at module level.
LAUNCH_MODULE = (
    "import subprocess\n"
    + FILLER
    + "def gpus():\n"
    + "    smi = 'nvidia-smi'\n"
    + "    return subprocess.run([smi, '-L'], capture_output=True)\n"
    + FILLER.replace("helper_", "other_")
)


@pytest.mark.parametrize(
    "text",
    [
        LAUNCH_MODULE,
        LAUNCH_MODULE
        + "SMI = 'nvidia-smi'\nif __name__ == '__main__':\n    subprocess.call([SMI])\n",
        *(t for p in _fixture_python_files() if "smi" in (t := p.read_text())),
    ],
)
def test_launches_found_in_their_statements_equal_those_of_the_whole_tree(text: str) -> None:
    rules = load_rules()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        pytest.skip("does not parse as a whole")
    hits, _ = python_scan._scan_python(text, rules)
    if not any(h.rule.commands and h.severity != "info" for h in hits):
        pytest.skip("no command finding")
    key = lambda h: (h.line, h.column, h.rule.id, h.severity, h.evidence)  # noqa: E731
    whole = whole_tree.Whole(text)
    statements = python_scan._launch_statements(text, hits, whole)
    assert statements is not None
    moved = nvml_query.move_to_launches(statements, hits)
    assert list(map(key, moved)) == list(map(key, nvml_query.move_to_launches(tree, hits)))
    if text is LAUNCH_MODULE:
        launch = text.splitlines().index(
            "    return subprocess.run([smi, '-L'], capture_output=True)"
        )
        named = text.splitlines().index("    smi = 'nvidia-smi'")
        assert [h.line for h in moved if h.rule.commands] == [named + 1, launch + 1]
        assert not whole.parsed and len(statements.body) == 1  # the function alone
    elif text.startswith(LAUNCH_MODULE):
        assert whole.parsed  # a command at module level: every module-level launch may run it


@pytest.mark.parametrize(
    "pattern",
    [
        capability_tables.TEXT_HINT,
        re.compile(r"[{,]ab(c|d)*e"),
        re.compile(r"[ab]x{2,3}?(?:q|rs)z\s*:"),
        re.compile(r"[xy](a|bc)+?d\s*:"),
    ],
)
def test_a_search_over_the_reversed_text_finds_what_the_pattern_finds(
    pattern: re.Pattern[str],
) -> None:
    import random

    rng = random.Random(0)
    pieces_of = ["{", ",", " ", "\n", "\t", "'", '"', "(", ")", ":", ".", "8", "12", "0", "x"]
    pieces_of += ["a", "b", "bc", "c", "d", "e", "q", "rs", "z", "y", "\u00e9", "if cc < "]
    seeds = ['{"8.0": 1}', "x = {(8, 0): 'a'}", ",\n  ( 12 ,\t3 )  :", "if cc < (9, 0):"]
    seeds += ["{'9.0' : x}", ",abcdce", "bxxqz :", "yabcad:", "[ '7.5':"]
    seeds += [p.read_text() for p in _fixture_python_files()[:40]]
    texts = list(seeds)
    for _ in range(1500):  # near misses: a seed with a few pieces inserted, dropped or swapped
        text = list(rng.choice(seeds[:9]))
        for _ in range(rng.randint(0, 3)):
            at = rng.randint(0, len(text))
            choice = rng.random()
            if choice < 0.4:
                text[at:at] = rng.choice(pieces_of)
            elif choice < 0.7 and text:
                del text[min(at, len(text) - 1)]
            elif text:
                text[min(at, len(text) - 1)] = rng.choice(pieces_of)
        texts.append("".join(text))
    found = [pattern.search(t) is not None for t in texts]
    assert [python_scan._holds_match(pattern, t) for t in texts] == found
    assert 20 < sum(found) < len(texts) - 20  # matches and near misses both occur
    assert python_scan._backwards(pattern) is not None  # the reversed search is the one tested


def test_the_vendor_aware_test_at_its_words_equals_the_case_insensitive_pattern() -> None:
    import random

    rng = random.Random(1)
    seeds = ["torch.version.hip", "VERSION.Cuda", "is_hip", "IsHip", "is_rocm", "'hip'", '"HIP"']
    seeds += ["is_cuda (", "is_cuda\u00a0(", "is_hipster", "chip", "ship'", "versionxhip", "ROCm"]
    # characters `re` folds to an ASCII letter that lower-case to something else, or to two
    pieces_of = ["\u0131", "\u0130", "\u212a", "\u017f", "\u00e9", "\U0001f600", "\u03a3", " "]
    pieces_of += ["h", "I", "p", "_", "s", "(", "'", ".", "c", "u", "d", "a", "x", "\n"]
    texts = list(seeds) + [p.read_text() for p in _fixture_python_files()[:40]]
    for _ in range(3000):  # near misses: a seed with a few pieces inserted or swapped
        text = list(rng.choice(seeds))
        for _ in range(rng.randint(0, 3)):
            at = rng.randint(0, len(text) - 1)
            if rng.random() < 0.5:
                text[at:at] = rng.choice(pieces_of)
            else:
                text[at] = rng.choice(pieces_of)
        texts.append("".join(text))
    found = [python_scan._VENDOR_AWARE.search(t) is not None for t in texts]
    assert [python_scan.vendor_aware(t) for t in texts] == found
    assert 100 < sum(found) < len(texts) - 100  # matches and near misses both occur


_KERNEL = """__global__ void k(float* in, int n) {
  int lane = threadIdx.x % 32;
  float v = in[lane];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  unsigned m = __ballot_sync(0xffffffff, v > 0);
  in[lane] = v + m;
}
"""
_HAZARD_TEXTS = [
    _KERNEL,
    # hazards inside comments, strings, raw strings and after digit separators are not hazards
    '// threadIdx.x % 32\n/* __ballot(1) */\nconst char* s = "asm(\\"x\\")";\n'
    "auto r = R\"x(lane % 32)x\";\nint big = 1'000'000;\n" + _KERNEL,
    # dead on AMD: notes, not hazards
    "#ifndef __HIP_PLATFORM_AMD__\n" + _KERNEL + "#endif\n",
    "#if __CUDA_ARCH__ >= 700\n" + _KERNEL + "#else\n__global__ void k() {}\n#endif\n",
    "#define WARP 32\n__global__ void g(int* o) { o[threadIdx.x / WARP] = 1; }\n",
    # overloads that collide once translated: the whole translation decides
    "#include <cuda.h>\nvoid f(cudaError_t e) {}\nvoid f(CUresult r) {}\n" + _KERNEL,
    '#include <cuda_runtime.h>\n#include "local.h"\n#include <cusparse.h>\n' + _KERNEL,
]


@pytest.mark.parametrize(
    "options",
    [
        {"mappings": "builtin"},
        {"mappings": "builtin", "hip_version": "6.2"},
        {"mappings": "builtin", "amd_undefined_macros": (("USE_TC", "sm80 only"),)},
        {"mappings": "builtin", "report_hazards": False},
    ],
    ids=["builtin", "hip-6.2", "project-macros", "no-hazards"],
)
def test_hipify_hazards_without_translating_equal_the_hazards_of_a_translation(
    options: dict[str, object],
) -> None:
    from rocmkit.hipify import TranslateOptions, hazard_diagnostics, translate

    chosen = TranslateOptions(**options)  # type: ignore[arg-type]
    corpus = Path(__file__).resolve().parents[1] / "hipify" / "corpus"
    sources = [p.read_text() for p in sorted(corpus.glob("*.cu"))]
    sources += [p.read_text() for p in sorted(engine_snapshot.FIXTURES.rglob("*.cu*"))]
    num_found = 0
    for text in [*_HAZARD_TEXTS, *sources]:
        full = translate(text, options=chosen).diagnostics
        expected = tuple(d for d in full if d.kind == "hazard")
        assert hazard_diagnostics(text, options=chosen) == expected
        num_found += len(expected)
    assert num_found > (0 if options.get("report_hazards") is False else 20)


@pytest.mark.parametrize(
    "data",
    [
        b"import x\r\nif torch.version.cuda:\r\n    from . import k\r\n",
        b"a\rb\r\r\nc\n\r",
        b"\xef\xbb\xbfimport os\n",
        b"bad \xff\xfe utf-8 \xe2\x82 cut\r\n\xf0\x9f\x98\x80 emoji\r",
        b"x" * 70000 + b"\r\n" + b"\xe2\x82\xac" * 30000 + b"\r",
    ],
    ids=["crlf", "lone-cr", "bom", "invalid-utf8", "large"],
)
def test_the_bytes_the_scan_read_give_the_text_a_note_would_read(
    tmp_path: Path, data: bytes
) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(data)
    assert vendor_loading._as_read(data) == vendor_loading._read(str(path))


DECORATED = (
    "import pytest\nimport torch\n\n\n"
    "@pytest.mark.skipif(\n"
    "    not torch.cuda.is_available()\n"
    "    or torch.cuda.get_device_capability() < (8, 9),\n"
    '    reason="FP8 needs 8.9",\n'
    ")\n"
    "def test_fp8():\n    pass\n"
)
IN_CLASS = (
    "import pytest\nimport torch\n\n\n"
    "class TestKernels:\n"
    '    @pytest.mark.skipif(torch.cuda.get_device_capability() < (8, 9), reason="FP8")\n'
    "    def test_fp8(self):\n        pass\n"
)


def test_a_decorators_arguments_are_read_by_the_fast_path() -> None:
    # a decorated def starts at its decorator, not at its `def` line (ast's lineno): the fast
    # path's walk skipped the skipif arguments above it, which a whole-file walk reads
    rules = load_rules()
    key = lambda h: (h.line, h.column, h.rule.id, h.severity, h.evidence)  # noqa: E731
    for module, line in ((DECORATED, 7), (IN_CLASS, 6)):
        whole, _ = scan_python(module, rules, exhaustive=True)
        pruned, _ = scan_python(module, rules)
        assert sorted(map(key, pruned)) == sorted(map(key, whole))
        assert (line, "device-capability") in {(h.line, h.rule.id) for h in pruned}
