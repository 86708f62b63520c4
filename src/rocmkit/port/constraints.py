"""pip constraints files: pins that install nothing.

pip's documentation ("Constraints Files", pip.pypa.io/en/stable/user_guide/#constraints-files):
a constraints file only controls which version of a package is installed when something else asks
for that package; it never installs a package itself. A requirement file that the project passes
with `-c`/`--constraint` (from a requirements file, a shell script, a Makefile, a Dockerfile), or
whose name says it is one (`constraints.txt`, `constraints-dev.txt.in`), is therefore not a place
that installs the CUDA build: its pins are info. The same file passed with `-r`/`--requirement`
anywhere is a requirement source again and keeps its findings.
"""

from __future__ import annotations

import os
import re

from rocmkit.port.findings import Hit

# The kinds of file whose text can pass a file to pip (a requirements file's `-c other.txt`,
# `pip install -c ...` in a script, a Dockerfile RUN, a Makefile recipe).
REFERENCING_KINDS = frozenset({"requirements", "shell", "dockerfile"})
_REFERENCE = re.compile(
    r"""(?:^|[\s"'])(-c|--constraint|-r|--requirement)(?:[ \t]+|=)["']?([^\s"';&|]+)"""
)
_NOTE = "a pip constraints file: its pins apply only where something else installs the package"


class ConstraintFiles:
    """The file names the project passes to pip with -c and with -r, told each file's text."""

    def __init__(self) -> None:
        self.constraint: set[str] = set()
        self.requirement: set[str] = set()

    def read(self, kind: str, text: str) -> None:
        """Record the files `text` passes with -c/-r (only a text holding `-c`/`-r` is searched;
        `--constraint` and `--requirement` hold them too)."""
        if kind not in REFERENCING_KINDS or not ("-c" in text or "-r" in text):
            return
        for option, target in _REFERENCE.findall(text):
            name = os.path.basename(target)
            if option in ("-c", "--constraint"):
                self.constraint.add(name)
            else:
                self.requirement.add(name)

    def is_constraints(self, rel: str) -> bool:
        """Whether the requirements file at `rel` is a constraints file: named so or passed with
        -c, and never passed with -r."""
        name = os.path.basename(rel)
        if name in self.requirement:
            return False
        return "constraints" in name.lower() or name in self.constraint

    def demote(self, hits: list[Hit]) -> list[Hit]:
        """The hits of a constraints file at info, saying why."""
        return [
            h if h.severity == "info" else h._replace(severity="info", evidence=_evidence(h))
            for h in hits
        ]


def _evidence(h: Hit) -> str:
    return f"{h.evidence}  ({_NOTE})"[:160]
