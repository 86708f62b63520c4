"""Property tests: byte-exact round trip outside translated tokens, idempotence, no crash on junk."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocmkit.hipify import TranslateOptions, load_table, translate
from rocmkit.hipify.project import HipifyConfig, hipify_paths

FEW = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

_NAMES = ["cudaMalloc", "cudaFree", "cuInit", "cublasSgemm", "CUDA_SUCCESS", "cub", "cudaNope", "x"]
_CODE = st.sampled_from(
    [
        *_NAMES,
        " ",
        "\n",
        "(",
        ")",
        ";",
        "::",
        "<<<",
        ">>>",
        ",",
        "1'0",
        "#include <cuda_runtime.h>\n",
        "__global__",
        "#pragma once\n",
        "\\\n",
        "0xffffffff",
        "threadIdx.x & 31",
    ]
)
_PROTECTED = st.builds(
    lambda kind, name: {
        "line": f"// {name} \n",
        "block": f"/* {name} */",
        "string": f'"{name}"',
        "raw": f'R"z({name} ")z"',
    }[kind],
    st.sampled_from(["line", "block", "string", "raw"]),
    st.sampled_from(_NAMES),
)
_SOURCE = st.lists(st.one_of(_CODE, _PROTECTED), max_size=40)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*\Z")


@FEW
@given(_SOURCE)
def test_text_outside_edits_round_trips_byte_for_byte(pieces):
    source = "".join(pieces)
    result = translate(source)
    rebuilt, last = [], 0
    table = load_table()
    for edit in result.edits:
        assert edit.start >= last
        original = source[edit.start : edit.end]
        if edit.category == "include":
            assert original == "" or original in table.includes
        else:  # a whole identifier token of the table, never part of a longer one
            assert _IDENTIFIER.match(original)
            assert not source[edit.end : edit.end + 1].isalnum()
            assert edit.start == 0 or not (
                source[edit.start - 1].isalnum() or source[edit.start - 1] == "_"
            )
        rebuilt += [source[last : edit.start], edit.replacement]
        last = edit.end
    rebuilt.append(source[last:])
    assert "".join(rebuilt) == result.text


@FEW
@given(st.lists(st.tuples(st.lists(_CODE, max_size=5), _PROTECTED), max_size=12))
def test_comments_and_literals_survive_verbatim(chunks):
    source = "".join("".join(code) + " " + protected for code, protected in chunks)
    out = translate(source, options=TranslateOptions(launch="hip")).text
    position = 0
    for _, protected in chunks:
        position = out.find(protected, position)
        assert position >= 0, protected
        position += len(protected)


@FEW
@given(_SOURCE, st.sampled_from(["keep", "hip"]))
def test_translating_twice_equals_translating_once(pieces, launch):
    options = TranslateOptions(launch=launch)
    once = translate("".join(pieces), options=options).text
    assert translate(once, options=options).text == once


@pytest.mark.slow
@FEW
@given(st.text(max_size=300))
def test_any_text_translates_idempotently(text):
    once = translate(text).text
    assert translate(once).text == once


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_crash_and_keep_every_untranslated_byte(tmp_path_factory, data):
    root = tmp_path_factory.mktemp("junk")
    source = root / "junk.cu"
    source.write_bytes(data)
    out_dir = root / "out"
    report = hipify_paths(HipifyConfig(paths=(source,), output_dir=out_dir))
    (result,) = report.files
    assert result.status in ("converted", "unchanged", "passthrough")
    written = (out_dir / "junk.cu").read_bytes()
    if result.status == "passthrough":
        assert written == data
    else:
        # 8-bit text too: undecodable bytes come back exactly as they were.
        text = data.decode("utf-8", errors="surrogateescape")
        assert written == translate(text).text.encode("utf-8", errors="surrogateescape")
    assert Path(source).read_bytes() == data
