"""Every reference in the code's docstrings and in the docs resolves: a ``:func:``,
``:class:``, ``:meth:``, ``:mod:``, ``:data:``, ``:attr:`` or ``:exc:`` target names
something defined (in this repository, or in a library it imports), a repository path
in backquotes exists, and a test named in backquotes is a test of the suite. A newcomer
follows them; one that names what is gone sends them nowhere (the fingerprint benchmark's
C source, named in its docstring, was never in the repository)."""

from __future__ import annotations

import ast
import importlib
import re
from collections import defaultdict
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("crawler", "dedup", "bench", "tests")
ROLE = re.compile(r":(mod|func|class|meth|data|attr|exc|obj):`~?([^`<]+?)(?:\s*<([^>]+)>)?`")
PATH = re.compile(r"(?<![\w/.-])((?:crawler|dedup|bench|tests|docs|deploy|\.ci)/[\w./-]*?"
                  r"\.(?:py|pyx|md|yml|yaml|txt|c|sh|json|cfg|toml|html))(?![\w/-])")
TEST = re.compile(r"`(test_\w+)(?:\[[^\]]*\])?`")


def sources() -> list[Path]:
    files = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    return [*files, *(ROOT / "dedup").glob("*.pyx"), ROOT / "setup.py"]


def documents() -> list[Path]:
    return [*sources(), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[0] == "bench":  # bench scripts import each other by their stem
        return parts[-1]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class Symbols:
    """What the repository defines: each module's top-level names, and each class's
    members (methods, class attributes, ``self.x`` set in its methods), by name."""

    def __init__(self) -> None:
        self.modules: dict[str, set[str]] = {}
        self.classes: dict[str, set[str]] = defaultdict(set)  # class name -> members
        self.members_in: dict[str, set[str]] = defaultdict(set)  # module -> its classes' members
        self.everywhere: set[str] = set()  # every top-level name of every module
        for path in sources():
            if path.suffix == ".pyx":  # Cython: its def and cdef names, read as text
                names = set(re.findall(r"^(?:c?p?def|cdef class|class)\s+(?:\w+\s+)*?(\w+)\s*[(:]",
                                       path.read_text(), re.M))
                self.modules[module_name(path)] = names
                self.everywhere |= names
                continue
            tree = ast.parse(path.read_text())
            names = set()
            for node in tree.body:
                names |= self._bound(node)
                if isinstance(node, ast.ClassDef):
                    members = self._members(node)
                    self.classes[node.name] |= members
                    self.members_in[module_name(path)] |= members
            self.modules[module_name(path)] = names
            self.everywhere |= names

    @staticmethod
    def _bound(node: ast.stmt) -> set[str]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return {node.name}
        if isinstance(node, ast.Assign):
            return {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            return {node.target.id}
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return {(a.asname or a.name).split(".")[0] for a in node.names}
        if isinstance(node, (ast.If, ast.Try)):  # TYPE_CHECKING blocks, optional imports
            return {n for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)
                    for n in Symbols._bound(child)}
        return set()

    @staticmethod
    def _members(cls: ast.ClassDef) -> set[str]:
        members = set()
        for node in cls.body:
            members |= Symbols._bound(node)
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in ("self", "cls") and isinstance(node.ctx, ast.Store):
                members.add(node.attr)
        return members

    def resolves(self, target: str, here: str, role: str) -> bool:
        parts = target.split(".")
        # a module of this repository, and what it defines
        for cut in range(len(parts), 0, -1):
            name = ".".join(parts[:cut])
            if name in self.modules:
                rest = parts[cut:]
                if not rest:
                    return True
                if rest[0] not in self.modules[name]:
                    return False
                return len(rest) == 1 or (len(rest) == 2 and rest[1] in self.classes[rest[0]])
        # a name of this module or of one of its classes; a class or a function of any
        # module; in the docs, a member of any class
        if len(parts) == 1:
            name = parts[0]
            if name in self.modules.get(here, set()) or name in self.members_in[here]:
                return True
            if role not in ("meth", "attr") and name in self.everywhere:
                return True
            if not here and any(name in m for m in self.classes.values()):
                return True
            return library_has(target)
        if len(parts) == 2 and parts[0] in self.classes:
            return parts[1] in self.classes[parts[0]]
        return library_has(target)


@cache
def library_has(target: str) -> bool:
    """Whether ``target`` is a module, or a name in one, of an installed library."""
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            if not hasattr(obj, part):
                return False
            obj = getattr(obj, part)
        return True
    return False


def test_every_reference_resolves() -> None:
    symbols = Symbols()
    tests = {node.name for path in (ROOT / "tests").rglob("*.py")
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
             and node.name.startswith("test_")}
    broken = []
    for path in documents():
        text = path.read_text()
        where = str(path.relative_to(ROOT))
        here = module_name(path) if path.suffix in (".py", ".pyx") else ""
        for found in ROLE.finditer(text):
            target = re.sub(r"\s+", "", found.group(3) or found.group(2)).strip(".~")
            target = target.removesuffix("()")
            if not symbols.resolves(target, here, found.group(1)):
                broken.append(f"{where}: {found.group(0)}")
        for found in PATH.finditer(text):
            if not (ROOT / found.group(1)).exists():
                broken.append(f"{where}: {found.group(1)} (no such file)")
        for found in TEST.finditer(text):
            if found.group(1) not in tests:
                broken.append(f"{where}: {found.group(1)} (no such test)")
    assert not broken, "\n".join(broken)
