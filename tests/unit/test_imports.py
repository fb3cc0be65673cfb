"""The import rules: ``cli`` -> ``crawler`` / ``console`` / ``sparkjob`` -> ``dedup``, one way, and no
circle of imports anywhere (checked on the import graph grimp builds from the source,
imports inside functions included, imports only for type checkers left out)."""

from __future__ import annotations

import grimp
import pytest

PACKAGES = ("cli", "crawler", "console", "sparkjob", "dedup")


@pytest.fixture(scope="module")
def graph():  # type: ignore[no-untyped-def]
    return grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True, cache_dir=None)


def test_imports_point_one_way(graph) -> None:  # type: ignore[no-untyped-def]
    illegal = graph.find_illegal_dependencies_for_layers(
        layers=["cli", grimp.Layer("crawler", "console", "sparkjob", independent=True), "dedup"])
    assert not illegal, "\n".join(
        f"{d.importer} imports {d.imported}: " + "; ".join(
            f"{sorted(r.heads)} -> {' -> '.join(r.middle)} -> {sorted(r.tails)}"
            for r in d.routes) for d in illegal)


def test_no_module_imports_itself_through_others(graph) -> None:  # type: ignore[no-untyped-def]
    modules = sorted(graph.modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(m: str) -> None:  # Tarjan's strongly connected components
        index[m] = low[m] = len(index)
        stack.append(m)
        on_stack.add(m)
        for n in sorted(graph.find_modules_directly_imported_by(m)):
            if n not in index:
                visit(n)
                low[m] = min(low[m], low[n])
            elif n in on_stack:
                low[m] = min(low[m], index[n])
        if low[m] == index[m]:
            group = []
            while True:
                n = stack.pop()
                on_stack.discard(n)
                group.append(n)
                if n == m:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for m in modules:
        if m not in index:
            visit(m)
    assert not circles, "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


#: The rooms of the library: the adapters (Redis, MongoDB: the store's MongoDB adapter and
#: its write protocol, which speaks to the journal in Redis) and process management (the
#: embedded servers); everything else in dedup is the pure core, the store's records and
#: interfaces included.
ADAPTERS = ("dedup.adapters", "dedup.servers", "dedup.store.mongo", "dedup.store.mongo_reads",
            "dedup.store.writer")

#: Client libraries the pure core never imports (and bson, MongoDB's format).
CLIENTS = ("redis", "pymongo", "bson", "hiredis", "scrapy", "twisted", "pyspark")


def test_the_pure_core_imports_no_adapter_and_no_client_library() -> None:
    graph = grimp.build_graph("dedup", include_external_packages=True,
                              exclude_type_checking_imports=True, cache_dir=None)
    core = [m for m in graph.modules
            if m.startswith("dedup") and not m.startswith(ADAPTERS)]
    assert "dedup.deduplicator" in core and "dedup.index.core" in core
    illegal = {m: sorted(n for n in graph.find_modules_directly_imported_by(m)
                         if n.startswith(ADAPTERS) or n.split(".")[0] in CLIENTS)
               for m in core}
    assert not {m: n for m, n in illegal.items() if n}


def test_importing_the_decision_loads_no_redis_or_mongodb_client() -> None:
    """What the grimp rule means at run time: a process that decides in memory (a scan,
    the batch job's workers) never loads a client."""
    import subprocess
    import sys

    code = ("import sys, dedup, dedup.deduplicator, dedup.pages, dedup.reconcile; "
            "print(sorted(m for m in ('redis', 'pymongo', 'bson', 'scrapy') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
