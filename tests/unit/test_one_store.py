"""One store: no module of simcrawl outside the store's MongoDB adapter, the folder
``dedup/adapters/mongo/``, speaks to MongoDB. None imports
pymongo or bson, builds a query or update document (a key such as ``$set`` or ``$gte``),
or calls a collection's methods; everything else reads and writes through the store's
interfaces (:mod:`dedup.store`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: simcrawl's packages (what a user installs).
PACKAGES = ("dedup", "crawler")

#: The store's MongoDB adapter: the only folder whose modules may speak to MongoDB.
ADAPTER = "dedup/adapters/mongo/"

#: Methods only a pymongo collection, database or client has.
COLLECTION_METHODS = {
    "find_one", "aggregate", "insert_one", "insert_many", "update_one", "update_many",
    "replace_one", "delete_one", "delete_many", "bulk_write", "count_documents",
    "estimated_document_count", "create_index", "list_collection_names", "drop_database",
    "drop_collection", "find_one_and_update", "distinct"}


def speaks_to_mongodb(source: str) -> list[str]:
    """What in ``source`` speaks to MongoDB, one line each (empty: nothing).

    >>> speaks_to_mongodb("import pymongo\\nq = {'url': {'$gte': 'a'}}\\ndb.pages.find_one(q)")
    ['line 1: imports pymongo', "line 2: builds a MongoDB document ('$gte')", 'line 3: calls find_one']
    >>> speaks_to_mongodb("text.find('x'); d = {'kind': 1}")
    []
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            names = []
        for name in names:
            if name.split(".")[0] in ("pymongo", "bson"):
                found.append(f"line {node.lineno}: imports {name}")
        if isinstance(node, ast.Dict):
            for key in node.keys:
                if isinstance(key, ast.Constant) and isinstance(key.value, str) \
                        and key.value.startswith("$") and key.value[1:2].isalpha():
                    found.append(f"line {node.lineno}: builds a MongoDB document "
                                 f"({key.value!r})")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method in COLLECTION_METHODS or (
                    method == "find" and node.args and isinstance(node.args[0], ast.Dict)):
                found.append(f"line {node.lineno}: calls {method}")
    return sorted(found, key=lambda line: int(line.split(":")[0][5:]))


def modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py")
                  if not p.relative_to(ROOT).as_posix().startswith(ADAPTER))


def test_the_packages_are_where_the_rule_looks() -> None:
    assert (ROOT / ADAPTER / "__init__.py").exists()
    assert len(modules()) > 100  # the rule reads every module, not an empty list


@pytest.mark.parametrize("path", modules(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_only_the_store_adapter_speaks_to_mongodb(path: Path) -> None:
    said = speaks_to_mongodb(path.read_text(encoding="utf-8"))
    assert not said, (f"{path.relative_to(ROOT)} speaks to MongoDB outside the store's "
                      "adapter (read and write through dedup.store): " + "; ".join(said))


def test_the_adapter_is_where_mongodb_is_spoken() -> None:
    """The rule sees MongoDB where it is spoken: every module of the adapter fails it
    (its package's __init__ only gathers them)."""
    parts = sorted(p for p in (ROOT / ADAPTER).glob("*.py") if p.name != "__init__.py")
    assert len(parts) >= 6
    for path in parts:
        assert speaks_to_mongodb(path.read_text(encoding="utf-8")), path.name
