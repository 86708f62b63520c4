"""NVML findings at the query, not the import.

Importing an NVML binding loads nothing: pynvml loads libnvidia-ml in `nvmlInit` (NVML API
reference: nvmlInit_v2 must precede every query), and nvitop's `Device` initialises NVML on its
first query (`Device.all()`, `Device.count()`, `Device(index)`). What an AMD machine loses is
the feature at the call, which may sit hundreds of lines below the import, under its own test
(`if torch.cuda.is_available(): Device.all()`): the finding goes where the project calls
through a name a module-level import bound. An import inside a function runs where the query
runs, and one with no call in the module, stay where they are.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import replace

from rocmkit.port.findings import Hit, PortFinding, hit
from rocmkit.port.rules import Rule
from rocmkit.port.text_scan import read_head

_CHECK = "nvml-call"
# The words the nvml rule's requirement_note (rules.toml) starts with: a requirement's finding.
_REQUIREMENT = "a pure-Python binding"
_NOTE = re.compile(r"\(a pure-Python binding[^)]*\)")
# Bindings whose every query needs an explicit nvmlInit() first (pynvml from nvidia-ml-py, and
# nvidia-ml-py3's nvidia_smi): there the init is where NVML fails on an AMD machine. nvitop
# initialises on its first query, so its queries stay findings.
_EXPLICIT_INIT = frozenset({"pynvml", "nvidia_smi", "py3nvml"})


# An AMD management library in the module: its GPU API has another vendor's side.
_AMD_SMI = ("amdsmi", "rocm_smi", "rocm-smi", "rsmi", "pyrsmi", "rocml", "amdgpu")


def move_to_queries(tree: ast.Module, hits: list[Hit], text: str = "") -> list[Hit]:
    """`hits` with each NVML import finding replaced by findings at the calls through the
    names that import bound (the import's line is kept when nothing calls them). An import at
    the top of a module that names no AMD management library (amdsmi, rocm-smi) is kept as well:
    the module's GPU API is bound to NVML alone, and the import is where it is bound."""
    at_import = {
        h.line: h
        for h in hits
        if h.rule.check == _CHECK and h.severity != "info" and h.evidence.startswith("import ")
    }
    if not at_import:
        return hits
    bound: dict[str, int] = {}  # name -> line of the import that bound it
    explicit: set[int] = set()  # import lines of bindings whose queries need nvmlInit first
    for statement in _module_level(tree):
        if isinstance(statement, (ast.Import, ast.ImportFrom)) and statement.lineno in at_import:
            for alias in statement.names:
                name = alias.asname or alias.name.split(".")[0]
                bound.setdefault(name, statement.lineno)
            modules = [a.name for a in statement.names] if isinstance(statement, ast.Import) else []
            if isinstance(statement, ast.ImportFrom):
                modules = [statement.module or ""]
            if any(m.split(".")[0] in _EXPLICIT_INIT for m in modules):
                explicit.add(statement.lineno)
    calls: dict[int, list[tuple[ast.Call, str]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            root, dotted = _root(node.func)
            if root in bound and node.lineno != bound[root]:
                calls.setdefault(bound[root], []).append((node, dotted))
    # nvmlInit called by a name (`from pynvml import *` ... `nvmlInit()`): the visitor reports it.
    inits = any(isinstance(n, ast.Call) and _initialises(_root(n.func)[1]) for n in ast.walk(tree))
    sole = set()
    if not any(word in text.lower() for word in _AMD_SMI):
        sole = {
            s.lineno
            for s in tree.body  # unconditional: not under a try/if (an optional binding)
            if isinstance(s, (ast.Import, ast.ImportFrom)) and s.lineno in at_import
        }
    moved = []
    for h in hits:
        # kept where this module is where NVML is used: it initialises (pynvml), or it queries
        # through a binding that initialises itself (nvitop, gpustat); a wrapper that only
        # queries what an nvmlInit elsewhere set up is reported at that init
        uses = inits if h.line in explicit else bool(calls.get(h.line))
        if h.line in sole and h is at_import.get(h.line) and uses:
            why = f"{h.evidence}  (the module's only GPU API: no amdsmi/rocm-smi side)"
            moved.append(hit(h.line, h.column, h.rule, why, h.severity))
        found = calls.get(h.line) if h is at_import.get(h.line) else None
        if not found:
            if not (h is at_import.get(h.line) and h.line in explicit and inits):
                moved.append(h)
            continue
        initialises = any(_initialises(d) for _, d in found)
        if h.line in explicit and initialises:
            # the nvmlInit call is the finding (the visitor reports it); nvidia_smi's
            # getInstance() is where its constructor calls nvmlInit
            for call, dotted in found:
                if dotted.endswith(_SMI_INIT):
                    why = f"{dotted}() runs nvmlInit() (pynvml.smi's constructor): no AMD GPU"
                    moved.append(hit(call.lineno, call.col_offset + 1, h.rule, why, h.severity))
            continue
        for call, dotted in sorted(found, key=lambda c: (c[0].lineno, c[0].col_offset)):
            why = f"{dotted}() queries NVML (imported at line {h.line}): NVML sees no AMD GPU"
            severity = h.severity
            if h.line in explicit:
                # pynvml raises NVMLError_Uninitialized for a query made before nvmlInit: this
                # module only queries what an nvmlInit elsewhere set up, reported at that call.
                severity = "info"
                why = f"{dotted}() queries NVML after an nvmlInit() elsewhere (reported there)"
            moved.append(hit(call.lineno, call.col_offset + 1, h.rule, why, severity))
    return moved


# pynvml.smi (and nvidia-ml-py3's nvidia_smi module): the singleton's getInstance() constructs it,
# and the constructor calls nvmlInit() (gpuopenanalytics/pynvml, pynvml/smi.py).
_SMI_INIT = "nvidia_smi.getInstance"


def _initialises(dotted: str) -> bool:
    """Whether a call (dotted name) initialises NVML: nvmlInit*, or nvidia_smi.getInstance()."""
    return dotted.rsplit(".", 1)[-1].startswith("nvmlInit") or dotted.endswith(_SMI_INIT)


def queries_beside(tree: ast.Module, hits: list[Hit], text: str) -> list[Hit]:
    """Where this module initialises NVML (or binds it as its only GPU API) at warn or error and
    names no AMD management library, each NVML query it makes (NVML's API: every function is
    an `nvml*`), and the nvmlShutdown() that closes it, is a place a port changes too: a hit of
    the same finding (one per file)."""
    anchor = next(
        (
            h
            for h in hits
            if h.rule.check == _CHECK
            and h.severity != "info"
            and ("nvmlInit" in h.evidence or "the module's only GPU API" in h.evidence)
        ),
        None,
    )
    if anchor is None or any(word in text.lower() for word in _AMD_SMI):
        return []
    taken = {h.line for h in hits if h.rule is anchor.rule}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.lineno not in taken:
            name = _root(node.func)[1].rsplit(".", 1)[-1]
            if name.startswith("nvml") and not name.startswith("nvmlInit"):
                taken.add(node.lineno)
                # nvmlShutdown() ends the life cycle nvmlInit() began: where amdsmi_shut_down() goes
                does = "closes" if name.startswith("nvmlShutdown") else "queries"
                why = f"{name}() {does} NVML (initialised at line {anchor.line}): no AMD GPU"
                found.append(
                    hit(node.lineno, node.col_offset + 1, anchor.rule, why, anchor.severity)
                )
    return found


# NVML's query namespaces (NVML API reference: nvmlDevice*, nvmlSystem*, nvmlUnit*, nvmlEvent*,
# nvmlVgpu*, nvmlGpm*), called as an attribute: `self.nvml.nvmlDeviceGetHandleByIndex(i)`.
QUERY_TRIGGERS = (".nvmlDevice", ".nvmlSystem", ".nvmlUnit", ".nvmlEvent", ".nvmlVgpu", ".nvmlGpm")
_QUERY_PREFIXES = tuple(t[1:] for t in QUERY_TRIGGERS)


def queries_through_held_binding(tree: ast.Module, text: str, rule: Rule) -> list[Hit]:
    """A module that neither imports an NVML binding nor initialises NVML, but queries it through
    an object another module bound to one (labml's ProcessMonitor keeps the scanner's py3nvml as
    `self.nvml`; ipyexperiments' CellLogger its experiment's `pynvml`): each query is a place a
    port changes, where the module names no AMD management library."""
    if "nvmlInit" in text or any(word in text.lower() for word in _AMD_SMI):
        return []
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr.startswith(_QUERY_PREFIXES)
        ):
            holder = _root(node.func)[1].rsplit(".", 1)[0]
            why = f"{node.func.attr}() through {holder}, an NVML binding held here: no AMD GPU"
            found.append(hit(node.lineno, node.col_offset + 1, rule, why))
    return found


def _module_level(tree: ast.Module) -> list[ast.stmt]:
    """Statements outside functions and classes (inside top-level if/try blocks too)."""
    found, stack = [], list(tree.body)
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            stack += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            stack += [s for handler in getattr(node, "handlers", []) for s in handler.body]
    return found


def _root(func: ast.expr) -> tuple[str, str]:
    """(the name a call is made through, its dotted spelling): `Device.all` -> ("Device", ...)."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return "", ""
    return func.id, ".".join([func.id, *reversed(parts)])


# What starts a process (subprocess, os, asyncio): the first argument (or the first item of an
# argv list) is the program.
_LAUNCHERS = frozenset(
    {
        "Popen",
        "run",
        "call",
        "check_call",
        "check_output",
        "getoutput",
        "getstatusoutput",
        "system",
        "popen",
        "create_subprocess_exec",
        "create_subprocess_shell",
    }
)


def move_to_launches(tree: ast.Module, hits: list[Hit], rocm_aware: bool = True) -> list[Hit]:
    """`hits` with each command finding (nvidia-smi) whose string is assigned to a name that a
    process launch then runs (`smi = "nvidia-smi"` ... `Popen([smi, "--query-gpu=..."])`) also
    placed at the launch: the name may be bound in several places (a Windows path, a lookup), and
    the launch is where the machine without the tool loses the feature; the line that names the
    tool stays a place of the same finding (where a port names amd-smi instead). In a module that never
    looks at ROCm (`rocm_aware` False), a command a helper returns (`def get_nvidia_smi():
    return smi`) is moved to each call that is handed the name bound to its result, whatever
    runs it (`run_lambda(smi + " -L")`, torch's collect_env): the helper only names the tool."""
    commands = {h.line: h for h in hits if h.rule.commands and h.severity != "info"}
    if not commands:
        return hits
    moved: dict[int, list[tuple[ast.Call, list[int]]]] = {}
    owns = _scope_nodes(tree)
    module_values = _assigned_constant_lines(owns[tree])
    returners = _command_returners(tree, owns, module_values, set(commands))
    namers = _namers(tree, returners) if not rocm_aware else {}
    for scope, own in owns.items():
        values = _assigned_constant_lines(own)
        if scope is not tree:
            # A module-level command string a function launches (`CMD = "nvidia-smi ..."` ...
            # `check_output(shlex.split(CMD))` in a function): the launch is the place.
            values = {**{k: v for k, v in module_values.items() if k not in values}, **values}
        for name, lines in _assigned_call_lines(own, returners).items():
            values.setdefault(name, set()).update(lines)
        returned = _assigned_call_lines(own, namers) if namers else {}
        for node in own:
            if not (isinstance(node, ast.Call) and node.args):
                continue
            if not launcher_name(node.func):
                if returned:
                    for name in _handed_names(node, returned):
                        named = sorted(line for line in returned[name] if line in commands)
                        for line in named:
                            moved.setdefault(line, []).append((node, named))
                continue
            program = _program(node.args[0])
            if not isinstance(program, ast.Name):
                continue
            named = sorted(line for line in values.get(program.id, ()) if line in commands)
            for line in named:
                moved.setdefault(line, []).append((node, named))
    result = []
    placed: set[tuple[int, str]] = set()
    for h in hits:
        launches = moved.get(h.line) if h is commands.get(h.line) else None
        if not launches:
            result.append(h)
            continue
        result.append(h)  # where the tool is named: the line a port edits to name AMD's
        for call, named in launches:
            if (call.lineno, h.rule.id) in placed:
                continue
            placed.add((call.lineno, h.rule.id))
            at = ", ".join(map(str, named))
            why = f"{_root(call.func)[1]}() starts {h.evidence} (named at line {at})"
            result.append(hit(call.lineno, call.col_offset + 1, h.rule, why, h.severity))
    return result


# Calls that show their arguments rather than run them: print, the logging methods, a stream's
# write (a command handed to one runs nothing; a value printed is only shown).
_DISPLAY_CALLS = frozenset(
    {"print", "debug", "info", "warning", "warn", "error", "exception", "log", "write"}
)


def displays(name: str) -> bool:
    """A call that shows its arguments: print and the logging methods, and the print family
    by its name (pprint.pprint, rich's rprint, a project's fprint/eprint wrappers)."""
    return name in _DISPLAY_CALLS or name.endswith("print")


def _handed_names(call: ast.Call, names: dict[str, set[int]]) -> list[str]:
    """The names of `names` a call is handed as an argument, alone or joined to more text
    (`smi + " -L"`, an f-string); none for a call that only shows them (print, logging)."""
    called = _root(call.func)[1].rsplit(".", 1)[-1]
    if displays(called) or called.endswith(("Error", "Exception", "Warning")):
        return []  # shown, or an exception's message
    found = []
    for argument in call.args:
        parts = [argument]
        while parts:
            part = parts.pop()
            if isinstance(part, ast.Name) and part.id in names and part.id not in found:
                found.append(part.id)
            elif isinstance(part, ast.BinOp) and isinstance(part.op, ast.Add):
                parts += [part.left, part.right]
            elif isinstance(part, ast.JoinedStr):
                parts += [v.value for v in part.values if isinstance(v, ast.FormattedValue)]
    return found


def _program(argument: ast.expr) -> ast.expr:
    """The expression naming the program of a launch's first argument: the first element of an
    argv list, or the string `shlex.split(CMD)` / `CMD.split()` splits."""
    if isinstance(argument, (ast.List, ast.Tuple)) and argument.elts:
        return argument.elts[0]
    if not (isinstance(argument, ast.Call) and isinstance(argument.func, ast.Attribute)):
        return argument
    func = argument.func
    if func.attr == "split" and _root(func)[1] == "shlex.split" and len(argument.args) == 1:
        return argument.args[0]
    if func.attr == "split" and not argument.args and isinstance(func.value, ast.Name):
        return func.value
    return argument


def _scope_nodes(tree: ast.Module) -> dict[ast.AST, list[ast.AST]]:
    """Each scope (the module, every function at any depth) -> its own nodes: those outside its
    nested functions, classes and lambdas (a nested def or class node itself is its parent's),
    in the order a depth-first walk of that scope alone meets them. One walk of the tree for
    all scopes (a walk per scope went over each function's nodes once more per enclosing one)."""
    owns: dict[ast.AST, list[ast.AST]] = {tree: []}
    stack: list[tuple[ast.AST, list[ast.AST] | None]] = [
        (child, owns[tree]) for child in ast.iter_child_nodes(tree)
    ]
    while stack:
        node, own = stack.pop()
        if own is not None:
            own.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner: list[ast.AST] | None = owns.setdefault(node, [])
        elif isinstance(node, (ast.ClassDef, ast.Lambda)):
            inner = None  # a class body and a lambda belong to no scope; a def in a class does
        else:
            inner = own
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return owns


def _spans_any(scope: ast.AST, lines: dict[int, Hit]) -> bool:
    """Whether a function's body (its `def` line to its last) holds one of `lines`."""
    start = getattr(scope, "lineno", 0)
    end = getattr(scope, "end_lineno", None) or start
    return any(start <= line <= end for line in lines)


def _assigned_constant_lines(own: list[ast.AST]) -> dict[str, set[int]]:
    """name -> lines of the string constants in the values assigned to it in a scope (`own`:
    its nodes outside nested functions and classes)."""
    lines: dict[str, set[int]] = {}
    for node in own:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    lines.setdefault(target.id, set()).update(
                        c.lineno
                        for c in ast.walk(node.value)
                        if isinstance(c, ast.Constant) and isinstance(c.value, str)
                    )
    return lines


def _command_returners(
    tree: ast.Module,
    owns: dict[ast.AST, list[ast.AST]],
    module_values: dict[str, set[int]],
    commands: set[int],
) -> dict[str, set[int]]:
    """Module-level function -> the command-finding lines its `return`s can give: the command
    strings it returns itself, or those of the module-level names it returns (a lookup such as
    `def find_smi(): ... return "/usr/bin/nvidia-smi" ... return NVIDIA_SMI`)."""
    returners: dict[str, set[int]] = {}
    for function in tree.body:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        own = owns[function]
        local = _assigned_constant_lines(own)
        lines: set[int] = set()
        for node in own:
            if not (isinstance(node, ast.Return) and node.value is not None):
                continue
            for leaf in ast.walk(node.value):
                if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str):
                    lines.add(leaf.lineno)
                elif isinstance(leaf, ast.Name):
                    lines |= local.get(leaf.id) or module_values.get(leaf.id, set())
        if lines & commands:
            returners[function.name] = lines & commands
    return returners


def _namers(tree: ast.Module, returners: dict[str, set[int]]) -> dict[str, set[int]]:
    """The returners that return the command's name itself (`return smi`, `smi = "nvidia-smi"`),
    not what running it gave (`out = run("nvidia-smi ..."); return out`): the lines of their
    command strings that stand outside every call of the function."""
    found: dict[str, set[int]] = {}
    for function in tree.body:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        lines = returners.get(function.name)
        if not lines:
            continue
        in_calls = {
            c.lineno
            for call in ast.walk(function)
            if isinstance(call, ast.Call)
            for c in ast.walk(call)
            if isinstance(c, ast.Constant)
        }
        if lines - in_calls:
            found[function.name] = lines - in_calls
    return found


def _assigned_call_lines(own: list[ast.AST], returners: dict[str, set[int]]) -> dict[str, set[int]]:
    """name -> command lines, for `name = f()` where f is a command returner."""
    lines: dict[str, set[int]] = {}
    for node in own:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id in returners
        ):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    lines.setdefault(target.id, set()).update(returners[node.value.func.id])
    return lines


def launcher_name(func: ast.expr) -> bool:
    """Whether a call's function starts a process (subprocess.run, os.system, Popen, ...)."""
    return _root(func)[1].rsplit(".", 1)[-1] in _LAUNCHERS


def required_where_called(findings: list[PortFinding], root: str) -> list[PortFinding]:
    """`findings` with the NVML binding a project requires at warn where the project's own code
    calls NVML (a warn/error NVML finding in a Python file): the requirement is the project's
    NVIDIA-only GPU telemetry, and where a ROCm install needs amdsmi beside or instead of it. A
    requirement nothing in the project calls stays info (a pure-Python binding that installs and
    imports anywhere), and so does one in a file that requires AMD's bindings too (amdsmi).
    Session thirty: on the seen corpus this found 75 listed hazards with 31 new false positives
    (22 of 25 new findings true on rounds W to AB)."""
    calls = any(
        f.rule_id == "nvml"
        and f.severity != "info"
        and f.path.endswith(".py")
        and _REQUIREMENT not in f.evidence
        for f in findings
    )
    if not calls:
        return findings
    why = "the project calls NVML: its GPU telemetry is NVIDIA-only; add amdsmi beside it"
    return [
        replace(f, severity="warn", evidence=_NOTE.sub(f"({why})", f.evidence, count=1))
        if f.rule_id == "nvml"
        and f.severity == "info"
        and _REQUIREMENT in f.evidence
        and not f.note
        and not _names_amd_bindings(os.path.join(root, f.path))
        else f
        for f in findings
    ]


def _names_amd_bindings(path: str) -> bool:
    text = read_head(path, 1 << 20).decode("utf-8", "replace").lower()
    return any(name in text for name in _AMD_SMI)
