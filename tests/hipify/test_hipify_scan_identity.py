"""The fast paths port's CUDA scan takes through hipify find exactly what the plain ones find.

The comments/literals scanner is spelled for speed (each alternative led by a literal); it must
match the spans the lexer's own fragments define, or a hazard inside a comment would be reported
(or one in code hidden). The directive and dead-branch lookups are computed once per file; asking
again, or about another file, must not return a stale answer.
"""

from __future__ import annotations

import re
from pathlib import Path

from rocmkit.hipify import TranslateOptions, amd_dead_branches, hazard_diagnostics, lexer, translate
from rocmkit.hipify.amd_branches import dead_spans
from rocmkit.hipify.hazards import ptx_fallback

# The plain pattern from the lexer's fragments: a lookahead on the first characters, then the
# alternatives in the order C++ reads them.
_REFERENCE = re.compile(
    f"(?=[{lexer._LEAD}])(?:"
    + "|".join((lexer.COMMENT, lexer.RAW_STRING, lexer.STRING, lexer.CHAR, lexer.INCLUDE))
    + ")",
    re.DOTALL | re.MULTILINE,
)

TRICKY = (
    'u8R"x(a "b" )x" uR"(c)" UR"(d)" LR"(e)" R"(f)" FOOR"(g)" xu8R"(h)" R"((i)"\n'
    "int n = 1'000'000; char c = '\\''; char q = '\"';\n"
    'const char* s = "a \\" // not a comment";\n'
    "// a line comment \\\n continued /* still */\n"
    "/* block \n #include <not_an_include.h> */\n"
    '#include "kernel.cuh"\n  # include_next <cuda_fp16.h>\n'
    'R"abcdefghijklmnopq(too long a delimiter)abcdefghijklmnopq"\n'
    "/* unterminated"
)


def _spans(pattern: re.Pattern[str], text: str) -> list[tuple[tuple[int, int], str | None]]:
    return [
        (m.span(), m.group("path") if m.lastgroup == "include" else None)
        for m in pattern.finditer(text)
    ]


def test_protected_scanner_matches_the_lexer_fragments() -> None:
    sources = [TRICKY, *(p.read_text() for p in sorted(Path(__file__).parent.glob("corpus/*.cu")))]
    for source in sources:
        assert _spans(lexer.PROTECTED_SCANNER, source) == _spans(_REFERENCE, source)
    masked = lexer.mask_protected(TRICKY)
    assert len(masked) == len(TRICKY) and '"kernel.cuh"' not in masked and "1'000'000" in masked


def test_hazards_in_comments_and_literals_stay_silent() -> None:
    code = "__global__ void k(int* o) {\n  o[threadIdx.x % 32] = 1;\n}\n"
    quiet = '// o[threadIdx.x % 32]\nconst char* s = R"(threadIdx.x % 32)";\n'
    options = TranslateOptions(mappings="builtin")
    assert [d.line for d in hazard_diagnostics(code, options=options)] == [2]
    assert hazard_diagnostics(quiet + code, options=options)[0].line == 4
    plain = TranslateOptions(add_runtime_include=False)
    assert translate(quiet + code, options=plain).text == quiet + code  # no name to map


def test_ptx_fallback_reads_directives_up_to_the_asm() -> None:
    code = (
        "#if defined(__CUDA_ARCH__)\n"
        '  asm volatile("mov.u32 %0, %%laneid;" : "=r"(x));\n'
        "#else\n  x = 0;\n#endif\n"
    )
    assert ptx_fallback(code, code.index("asm")) == "#if defined(__CUDA_ARCH__)"
    # Asked about another text with the same directives up to there: its own answer.
    alone = '#if defined(__CUDA_ARCH__)\n  asm("exit;");\n#endif\n'
    assert ptx_fallback(alone, alone.index("asm")) is None
    assert ptx_fallback(code, code.index("x = 0")) == "#else"


def test_dead_spans_are_per_text_and_a_fresh_list() -> None:
    dead = "#if CUDA_VERSION >= 9000\n  __shfl_sync(0xffffffff, v, 0);\n#endif\n"
    first = dead_spans(dead)
    first.clear()  # a caller changing its list must not change the next caller's
    assert amd_dead_branches(dead)(dead.index("__shfl")) is not None
    assert amd_dead_branches("int x;\n" + dead)(0) is None
