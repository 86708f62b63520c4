"""FFmpeg's NVIDIA video engines asked for by a command a module builds, or by its default.

FFmpeg reaches NVIDIA's video engines through its own names (FFmpeg's hardware-acceleration
guide, trac.ffmpeg.org/wiki/HWAccelIntro, and `ffmpeg -encoders / -decoders / -hwaccels /
-filters`): the NVENC encoders (`h264_nvenc`, `hevc_nvenc`, `av1_nvenc`; the older `nvenc`,
`nvenc_h264`, `nvenc_hevc`), the CUVID decoders (`<codec>_cuvid`), the `cuda`, `cuvid` and `nvdec`
hwaccels and the CUDA / NPP filters (`scale_cuda`, `scale_npp`, `hwupload_cuda`, ...). They load
NVIDIA's driver libraries (libcuda, libnvidia-encode, libnvcuvid): on an AMD GPU ffmpeg stops
("Cannot load libcuda.so.1", "No NVENC capable devices found"). AMD's engines are reached through
VAAPI (`h264_vaapi`, `-hwaccel vaapi`) or AMF (`h264_amf`).

A name is a finding where the module asks ffmpeg for it: inside a command string (one that names
ffmpeg or its options), in a command list beside ffmpeg's options (`["-hwaccel", "cuda"]`), or as
the default of a codec / encoder / decoder / hwaccel parameter, keyword or setting. A name only
compared with (`if codec == "h264_nvenc"`), listed among choices, mapped in a table or written in
a docstring asks for nothing. A module that also names an AMD engine (VAAPI, AMF) has the other
side of a switch: info.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterator

from rocmkit.port import whole_tree
from rocmkit.port.rules import Severity

RULE = "ffmpeg-nvidia-codec"
# Substrings one of which a module that can hold a finding contains (its pre-filter).
_FILTERS = ("scale", "hwupload", "yadif", "bwdif", "overlay", "thumbnail", "chromakey", "bilateral")
TRIGGERS = ("nvenc", "_cuvid", "hwaccel", "hw_accel", "_npp", *(f"{f}_cuda" for f in _FILTERS))
_NVIDIA = re.compile(
    r"(?<![\w-])(?:(?:h264|hevc|av1)_nvenc|nvenc(?:_h264|_hevc)?|[a-z0-9]+_cuvid"
    rf"|(?:{'|'.join(_FILTERS)})_cuda"
    r"|(?:scale|transpose|sharpen)_npp)(?![\w-])"
    r"|-hwaccel(?:_output_format)?[\s=]+(?:cuda|cuvid|nvdec)\b"
)
# What makes a string an ffmpeg command line: the program, or one of its video options.
_COMMAND = re.compile(
    r"\bffmpeg\b|(?<![\w-])-(?:c:v|codec:v|vcodec|hwaccel\w*|vf|filter_complex|gpu)(?![\w-])"
)
_OPTION = re.compile(
    r"^(?:ffmpeg|-(?:c:v|codec:v|vcodec|hwaccel\w*|vf|filter:v|filter_complex|i|gpu|y|f))$"
)
# The hwaccel names NVIDIA's engines answer to, as their own list item after `-hwaccel`.
_HWACCEL_OPTIONS = frozenset({"-hwaccel", "-hwaccel_output_format"})
_HWACCEL_NVIDIA = frozenset({"cuda", "cuvid", "nvdec"})
_SETTING = re.compile(r"(?i)codec|encoder|decoder|hwaccel|hw_accel")
_HWACCEL_SETTING = re.compile(r"(?i)hw_?accel")
# AMD's engines named anywhere in the module: the NVIDIA name is one side of a switch.
_AMD = re.compile(r"(?i)vaapi|(?<![a-z])amf(?![a-z])|_amf\b")


@dataclasses.dataclass(frozen=True)
class Use:
    line: int
    column: int
    evidence: str
    severity: Severity


def uses(tree: ast.AST, text: str, severity: Severity) -> list[Use]:
    """Each place the module asks ffmpeg for an NVIDIA engine (see the module docstring)."""
    amd = _AMD.search(text) is not None
    if amd:
        severity = "info"
    side = "; the module also names an AMD engine (VAAPI/AMF): one side of a switch" if amd else ""
    found: dict[tuple[int, int], Use] = {}
    for node, name, how in _asks(tree):
        place = (node.lineno, node.col_offset)
        found.setdefault(place, Use(*place, f"{name}  ({how}{side})", severity))
    return sorted(found.values(), key=lambda u: (u.line, u.column))


def _asks(tree: ast.AST) -> Iterator[tuple[ast.expr, str, str]]:
    quiet = _quiet_strings(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Constant, ast.JoinedStr)) and id(node) not in quiet:
            yield from _command_string(node)
        elif isinstance(node, (ast.List, ast.Tuple)):
            yield from _command_list(node)
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg and _SETTING.search(keyword.arg):
                    yield from _default(keyword.value, keyword.arg, f"keyword {keyword.arg}=")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for argument, value in whole_tree.argument_defaults(node.args):
                if _SETTING.search(argument.arg):
                    yield from _default(value, argument.arg, f"default of {argument.arg}")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            name = next((n for n in map(_name, targets) if n and _SETTING.search(n)), None)
            if name is not None:
                yield from _default(node.value, name, f"setting {name}")


def _quiet_strings(tree: ast.AST) -> set[int]:
    """Strings that ask for nothing: docstrings and other bare string statements, the pieces of
    an f-string (read as a whole), and the operands of a comparison."""
    quiet: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, (ast.Constant, ast.JoinedStr)):
            quiet.add(id(node.value))
        elif isinstance(node, ast.JoinedStr):
            quiet.update(id(v) for v in node.values)
        elif isinstance(node, ast.Compare):
            quiet.update(id(v) for v in (node.left, *node.comparators))
    return quiet


def _name(target: ast.expr) -> str | None:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant):
        return str(target.slice.value)
    return None


def _text(node: ast.expr) -> str | None:
    """A string constant's text, or an f-string's with `{}` for each value."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
            for v in node.values
        )
    return None


def _default(value: ast.expr, setting: str, how: str) -> Iterator[tuple[ast.expr, str, str]]:
    """A codec / encoder / hwaccel setting whose value is an NVIDIA engine (a hwaccel setting's
    `"cuda"` too: torchaudio's `hw_accel="cuda:0"`)."""
    text = _text(value)
    if text is None:
        return
    # the value is the engine's name (`codec="h264_nvenc"`), not prose that names it among
    # others (`CODEC_NOTE = "shared: nvdec/nvenc/nvjpg"`)
    match = _NVIDIA.fullmatch(text.strip())
    if match is not None:
        yield value, match.group(0), f"{how}: NVIDIA's video engine, absent on AMD GPUs"
    elif text.split(":")[0] in _HWACCEL_NVIDIA and _HWACCEL_SETTING.search(setting):
        yield value, text, f"{how}: NVIDIA's hwaccel, absent on AMD GPUs"


def _command_string(value: ast.Constant | ast.JoinedStr) -> Iterator[tuple[ast.expr, str, str]]:
    """A command line written as one string (`"ffmpeg -hwaccel cuda -i {} ..."`)."""
    text = _text(value)
    if text is None or _COMMAND.search(text) is None:
        return
    match = _NVIDIA.search(text)
    if match is not None:
        yield value, match.group(0), "an ffmpeg command asks for NVIDIA's video engine"


def _command_list(node: ast.List | ast.Tuple) -> Iterator[tuple[ast.expr, str, str]]:
    """An argv list beside ffmpeg's own options: its NVIDIA codec, filter or hwaccel items."""
    texts = [_text(e) for e in node.elts]
    if not any(t is not None and _OPTION.match(t) for t in texts):
        return
    for index, (element, text) in enumerate(zip(node.elts, texts, strict=True)):
        if text is None:
            continue
        match = _NVIDIA.search(text)
        if match is not None:
            yield element, match.group(0), "an ffmpeg argument list asks for NVIDIA's video engine"
        elif text in _HWACCEL_NVIDIA and index and texts[index - 1] in _HWACCEL_OPTIONS:
            how = f"an ffmpeg argument list asks for the {text!r} hwaccel (NVIDIA's)"
            yield element, f"{texts[index - 1]} {text}", how
