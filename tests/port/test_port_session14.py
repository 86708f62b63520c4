"""Issue 26, session fourteen: each change, with a case where the finding must appear and one where
it must not (or where it must stay put), on small synthetic trees."""

from __future__ import annotations

import ast
from pathlib import Path

from port_helpers import scan_files as _scan

from rocmkit.port.pieces import parse, place_fstring_parts_as_311

# A literal part of an f-string that a rule reads: CDI's NVIDIA device name, the part before the
# replacement field. The second is an f-string over two lines.
_CDI = """def gpu_args(indices):
    args = []
    for index in indices:
        args += ["--device", f"nvidia.com/gpu={index}"]
    return args


def more(i, width):
    return ("--device",
            f"{i:>{width}} "
            f"nvidia.com/gpu={i}")
"""


def test_a_finding_in_an_fstring_is_placed_where_the_fstring_starts_on_every_python(
    tmp_path: Path,
) -> None:
    # Python 3.12 (PEP 701) places an f-string's parts apart, 3.11 at the whole f-string: the same
    # project gave `sandbox.py:7:32` on the H200's Python 3.12 and `:30` here (2026-11-27 run).
    report = _scan(tmp_path, {"sandbox.py": _CDI})
    cdi = [f for f in report.findings if f.rule_id == "cdi-nvidia-device"]
    assert len(cdi) == 1
    assert (cdi[0].line, cdi[0].column) == (4, 30)  # the `f` of f"nvidia.com/gpu={index}"
    assert cdi[0].lines == (4, 10)  # the two-line f-string counts at its first line


def test_fstring_parts_take_the_whole_fstrings_place_and_expressions_keep_theirs() -> None:
    tree = parse(_CDI)
    strings = [n for n in ast.walk(tree) if isinstance(n, ast.JoinedStr)]
    # Place every part apart, as Python 3.12's parser does, then put them back as 3.11 does.
    for n, node in enumerate(ast.walk(tree)):
        if isinstance(node, (ast.Constant, ast.FormattedValue)) and node.lineno >= 4:
            node.lineno, node.col_offset, node.end_col_offset = 100 + n, n, n + 1
    for joined in strings:
        for value in joined.values:
            if isinstance(value, ast.FormattedValue) and value.format_spec is not None:
                value.format_spec.lineno = 99
    names = {n.id: (n.lineno, n.col_offset) for n in ast.walk(tree) if isinstance(n, ast.Name)}
    place_fstring_parts_as_311(tree)
    for joined in strings:
        whole = (joined.lineno, joined.col_offset, joined.end_lineno, joined.end_col_offset)
        todo: list[ast.expr] = list(joined.values)
        while todo:
            part = todo.pop()
            assert (part.lineno, part.col_offset, part.end_lineno, part.end_col_offset) == whole
            spec = getattr(part, "format_spec", None)
            if spec is not None:
                assert (spec.lineno, spec.col_offset) == whole[:2]
                todo.extend(spec.values)
    # `width` inside the format spec and `i`, `index` in the fields keep their own places.
    after = {n.id: (n.lineno, n.col_offset) for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert after == names
    assert after["width"] == (10, 19)


# fp8-coat's copy of Hugging Face's Trainer: apex is imported only where transformers finds it.
_HF_GUARD = """from transformers.utils import (
    is_apex_available,
    is_datasets_available,
)

if is_apex_available():
    from apex import amp
"""


def test_an_import_under_a_hugging_face_availability_check_is_optional(tmp_path: Path) -> None:
    report = _scan(tmp_path / "hf", {"trainer.py": _HF_GUARD})
    apex = [f for f in report.findings if f.rule_id == "apex"]
    assert [f.severity for f in apex] == ["info"]
    assert "optional" in apex[0].evidence
    # The same test of a local function of that name proves nothing: apex is required there.
    local = _HF_GUARD.replace("from transformers.utils import", "from .compat import")
    report = _scan(tmp_path / "local", {"trainer.py": local})
    assert [f.severity for f in report.findings if f.rule_id == "apex"] == ["warn"]


# nfflr's trainer: Ignite's GpuInfo metric takes pynvml.smi's instance, which calls nvmlInit.
_IGNITE = """import torch
from ignite.contrib.metrics import GpuInfo
from ignite.metrics import Accuracy


def attach(trainer):
    Accuracy().attach(trainer, "acc")
    if torch.cuda.is_available():
        GpuInfo().attach(trainer, name="gpu")
"""


def test_ignites_gpu_info_metric_is_an_nvml_call(tmp_path: Path) -> None:
    report = _scan(tmp_path / "a", {"trainer.py": _IGNITE})
    nvml = [f for f in report.findings if f.rule_id == "nvml"]
    assert [(f.line, f.severity) for f in nvml] == [(9, "warn")]
    assert "Ignite" in nvml[0].evidence
    # A class of the same name that is not Ignite's (SkyPilot's catalog rows) is no NVML call.
    other = _IGNITE.replace(
        "from ignite.contrib.metrics import GpuInfo", "from .rows import GpuInfo"
    )
    report = _scan(tmp_path / "b", {"trainer.py": other})
    assert not [f for f in report.findings if f.rule_id == "nvml"]


# rvc's Intel XPU shim makes torch look like CUDA: it writes torch.version.cuda, which is no read.
_SHIM = """import torch


def ipex_init():
    torch.version.cuda = "11.7"
    torch.cuda.get_device_capability = lambda *args, **kwargs: [11, 7]


def cuda_major():
    return int(torch.version.cuda.split(".")[0])
"""


def test_writing_torch_version_cuda_is_not_reading_it(tmp_path: Path) -> None:
    report = _scan(tmp_path, {"shim.py": _SHIM})
    lines = sorted(f.line for f in report.findings if f.rule_id == "torch-version-cuda")
    assert lines == [10]  # the read in cuda_major, not the assignment on line 5


def test_32_warps_fail_a_launch_and_only_older_tritons_autotune(tmp_path: Path) -> None:
    fixture = Path(__file__).parent.parent / "fixtures/port/rules/triton-num-warps-32"
    files = {p.name: p.read_text() for p in fixture.glob("*.py")}
    report = _scan(tmp_path, files)
    warps = {
        (f.path, line): f.severity
        for f in report.findings
        for line in f.lines
        if f.rule_id == "triton-num-warps-32"
    }
    assert warps == {
        ("launch.py", 14): "error",
        ("launch.py", 21): "error",
        ("launch.py", 31): "warn",
    }


# simpletransformers: the provider is chosen against the CPU by a flag an AMD GPU sets too.
_ORT_FLAG = """from onnxruntime import InferenceSession


def session(path, use_cuda, onnx_execution_provider=None):
    if not onnx_execution_provider:
        onnx_execution_provider = (
            "CUDAExecutionProvider" if use_cuda else "CPUExecutionProvider"
        )
    return InferenceSession(path, providers=[onnx_execution_provider])
"""


def test_an_onnx_provider_chosen_against_the_cpu_by_a_flag_is_nvidias_only(tmp_path: Path) -> None:
    report = _scan(tmp_path / "a", {"model.py": _ORT_FLAG})
    ort = [(f.line, f.severity) for f in report.findings if f.rule_id == "ort-nvidia-provider"]
    assert ort == [(7, "warn")]
    # A choice whose test reads the build's providers is an availability probe: left alone.
    probe = _ORT_FLAG.replace("if use_cuda", "if 'CUDAExecutionProvider' in available")
    report = _scan(tmp_path / "b", {"model.py": probe})
    assert not [f for f in report.findings if f.rule_id == "ort-nvidia-provider"]
    # With the AMD provider named in the module, the CUDA side is one vendor's branch.
    amd = _ORT_FLAG.replace('else "CPUExecutionProvider"', 'else "MIGraphXExecutionProvider"')
    amd += 'FALLBACK = "CPUExecutionProvider"\n'
    report = _scan(tmp_path / "c", {"model.py": amd})
    assert not [
        f for f in report.findings if f.rule_id == "ort-nvidia-provider" and f.severity != "info"
    ]


# xfuser: imports under a table of availability flags named after the distribution.
_FLAGGED = """from xfuser.envs import PACKAGES_CHECKER

env_info = PACKAGES_CHECKER.get_packages_info()
if env_info["has_flash_attn_4"]:
    from flash_attn.cute.interface import flash_attn_func
"""


def test_an_import_under_a_flag_named_for_its_distribution_is_optional(tmp_path: Path) -> None:
    report = _scan(tmp_path / "a", {"attention.py": _FLAGGED})
    cute = [f for f in report.findings if f.rule_id == "flash-attn-cute"]
    assert [(f.line, f.severity) for f in cute] == [(5, "info")]
    # A flag named for something else guards nothing: the import is required.
    other = _FLAGGED.replace("has_flash_attn_4", "has_fp4_kernels")
    report = _scan(tmp_path / "b", {"attention.py": other})
    assert [f.severity for f in report.findings if f.rule_id == "flash-attn-cute"] == ["error"]


def test_a_file_with_crlf_line_ends_is_scanned_as_its_lf_copy(tmp_path: Path) -> None:
    # trinix and neuroquant ship CRLF sources: port's byte path kept the CR, and patterns anchored
    # at a line's end read those files otherwise than their LF copies.
    # A shape from trinix's utils.py: the CR left at each line's end made the pre-filtered scan
    # link the first function's capability read to the second's comparison.
    source = '''import torch


def capability():
    """The compute capability of the current device.
    """
    props = torch.cuda.get_device_properties(0)
    """The block size and warp count.
    """
def shared_memory():
    """Shared memory per block of the current GPU.
             (48 KB for older GPUs, 96 KB for SM 7.x, 164 KB for SM 8.x+).
    """

    if hasattr(props, "shared_memory_per_block"):
        level = props.major * 10 + props.minor
        if level >= 80:
            return 164 * 1024
'''
    (tmp_path / "lf").mkdir()
    (tmp_path / "crlf").mkdir()
    (tmp_path / "lf" / "m.py").write_bytes(source.encode())
    (tmp_path / "crlf" / "m.py").write_bytes(source.replace("\n", "\r\n").encode())

    def shown(root: Path) -> list[tuple[int, str, str, str]]:
        report = _scan(root, {})
        return sorted(
            (line, f.rule_id, f.severity, f.evidence) for f in report.findings for line in f.lines
        )

    lf = shown(tmp_path / "lf")
    assert [(line, evidence) for line, rule, _, evidence in lf if rule == "device-capability"] == [
        (7, "torch.cuda.get_device_properties()  (read, never compared)")
    ]
    assert shown(tmp_path / "crlf") == lf


def test_port_reads_a_file_with_universal_newlines_as_python_does() -> None:
    from rocmkit.port.project import decode

    assert decode(b"import torch\r\nx = 1\r\n") == "import torch\nx = 1\n"
    assert decode(b"\xef\xbb\xbfa\rb\n") == "a\nb\n"  # a BOM dropped, a lone CR a line end
