"""One settings registry: every ``DEDUP_*`` / ``SIMCRAWL_*`` name is read through
``dedup/config.py`` (the ``DedupConfig`` fields) or ``dedup/setting_names.py`` (every other
name: how it is read, its type, its default), never by a module on its own; and a default
is written once."""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The registry: the only modules that read the names themselves.
REGISTRY = {ROOT / "dedup" / "config.py", ROOT / "dedup" / "setting_names.py"}
NAME = re.compile(r"^(?:DEDUP|SIMCRAWL)_[A-Z0-9_]+$")
#: Calls that read a setting or an environment variable by its name.
READERS = {"get", "getbool", "getint", "getfloat", "getlist", "getdict", "getwithbase",
           "getenv", "pop"}


def _sources() -> list[Path]:
    return sorted(p for folder in ("crawler", "dedup") for p in (ROOT / folder).rglob("*.py")
                  if p not in REGISTRY)


def _constants(tree: ast.Module) -> dict[str, str]:
    """A module's names bound to a string constant (``TOKEN_ENV = "SIMCRAWL_WEB_TOKEN"``)."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value.value
    return out


def _named(node: ast.AST, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif isinstance(node, ast.Name):
        text = constants.get(node.id, "")
    else:
        return None
    return text if NAME.match(text) else None


def reads_outside_the_registry() -> list[str]:
    """Each place a module reads a ``DEDUP_*`` / ``SIMCRAWL_*`` name itself: a reader's
    call (``settings.getint("SIMCRAWL_X")``, ``os.environ.get(...)``, ``own.get(...)``) or
    a subscript that loads (``os.environ["SIMCRAWL_X"]``)."""
    found = []
    for path in _sources():
        tree = ast.parse(path.read_text("utf-8"))
        constants = _constants(tree)
        for node in ast.walk(tree):
            name = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in READERS and node.args:
                name = _named(node.args[0], constants)
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                name = _named(node.slice, constants)
            if name:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} reads {name}")
    return found


def test_no_module_reads_a_setting_of_simcrawls_by_itself() -> None:
    """A name read in two places had two defaults (``SIMCRAWL_PROGRESS_SECONDS``: 2 as a
    setting, 10 from the environment) or was read from the environment in simcrawl's own
    settings module only, which a project under the add-on never loads."""
    assert reads_outside_the_registry() == []


def test_the_check_finds_a_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above is not blind: each form of reading a name is found."""
    where = "/".join(("crawler", "sample.py"))
    sample = tmp_path / where
    sample.parent.mkdir()
    sample.write_text(
        'import os\nNAME = "SIMCRAWL_WEB_TOKEN"\n'
        'a = settings.getint("SIMCRAWL_MAX_OUTLINKS", 10)\n'
        'b = os.environ.get(NAME)\nc = os.environ["DEDUP_WARC_DIR"]\n'
        'os.environ["SIMCRAWL_DATA"] = "x"\n', encoding="utf-8")
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert reads_outside_the_registry() == [
        f"{where}:3 reads SIMCRAWL_MAX_OUTLINKS", f"{where}:4 reads SIMCRAWL_WEB_TOKEN",
        f"{where}:5 reads DEDUP_WARC_DIR"]


def _words(name: str) -> set[str]:
    return set(name.lower().removeprefix("default_").split("_"))


def defaults_written_twice() -> list[str]:
    """A :class:`~dedup.config.DedupConfig` field's default written again as a literal
    (not the constant the field names as its default):
    a ``DEFAULT_*`` module constant whose words are the field's (``DEFAULT_SIZE`` and
    ``pinyin_size``), or another dataclass's field of the same name (``Rules``), with the
    same value."""
    from dedup.config import DedupConfig

    defaults = {f.name: f.default for f in fields(DedupConfig)}
    # the constants DedupConfig names as its fields' defaults (simhash's DEFAULT_SHINGLE):
    # each one is the declaration, wherever it is written
    config = ast.parse((ROOT / "dedup" / "config.py").read_text("utf-8"))
    named = {node.value.id for node in ast.walk(config)
             if isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Name)}
    found = []
    for path in _sources():
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.target, ast.Name):
                names = [node.target.id]
            else:
                continue
            for name in names:
                if name in named:
                    continue
                value = node.value.value
                for field, default in defaults.items():
                    same = type(value) is type(default) and value == default
                    if same and (name == field or (name.startswith("DEFAULT_")
                                                   and _words(name) <= _words(field))):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name} = "
                                     f"{value!r} (DEDUP_{field.upper()})")
    return found


def test_a_default_is_written_once() -> None:
    """The containment, trust and verify distances, the pinyin windows' four defaults and
    their two shares, the batch size, the URL rules' support and the data folder were
    each written twice: in ``DedupConfig`` and as a module's constant or another class's
    field. They are declared in dedup/config.py, and the modules take them from there."""
    assert defaults_written_twice() == []


def test_simcrawls_own_settings_module_sets_none_of_the_registrys() -> None:
    """crawler/settings.py (simcrawl's own project) sets no ``DEDUP_*`` / ``SIMCRAWL_*``
    setting: their defaults are the registry's, the same for a project under the add-on."""
    tree = ast.parse((ROOT / "crawler" / "settings.py").read_text("utf-8"))
    assigned = [t.id for node in tree.body if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name) and NAME.match(t.id)]
    assert assigned == []


def test_a_value_comes_from_the_setting_then_the_environment_then_the_default(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from dedup.setting_names import default, value

    given = {"SIMCRAWL_IDLE_SECONDS": "2.5", "SIMCRAWL_LOG_LEVEL": "DEBUG"}
    monkeypatch.delenv("SIMCRAWL_IDLE_SECONDS", raising=False)
    monkeypatch.delenv("SIMCRAWL_LOG_LEVEL", raising=False)
    assert value("SIMCRAWL_IDLE_SECONDS", given.get) == 2.5
    assert value("SIMCRAWL_IDLE_SECONDS") == default("SIMCRAWL_IDLE_SECONDS") == 1.0
    monkeypatch.setenv("SIMCRAWL_IDLE_SECONDS", "7")
    assert value("SIMCRAWL_IDLE_SECONDS", {}.get) == 7.0  # either way: the environment next
    assert value("SIMCRAWL_IDLE_SECONDS", given.get) == 2.5  # the setting first
    # read from the environment only: a setting of that name does nothing
    assert value("SIMCRAWL_LOG_LEVEL", given.get) == "INFO"
    # read as a setting only: the environment does nothing
    monkeypatch.setenv("SIMCRAWL_KEEP_WAITING", "true")
    assert value("SIMCRAWL_KEEP_WAITING", {}.get) is False
    assert value("SIMCRAWL_KEEP_WAITING", {"SIMCRAWL_KEEP_WAITING": "true"}.get) is True
    with pytest.raises(ValueError, match="SIMCRAWL_MAX_OUTLINKS must be an integer"):
        value("SIMCRAWL_MAX_OUTLINKS", {"SIMCRAWL_MAX_OUTLINKS": "many"}.get)
