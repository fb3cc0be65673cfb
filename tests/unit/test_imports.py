"""The import rules: ``cli`` -> ``crawler`` / ``console`` / ``sparkjob`` -> ``dedup``, one way, and no
circle of imports anywhere (checked on the import graph grimp builds from the source,
imports inside functions included, imports only for type checkers left out)."""

from __future__ import annotations

import grimp
import pytest

PACKAGES = ("cli", "crawler", "console", "sparkjob", "dedup")


@pytest.fixture(scope="module")
def graph():  # type: ignore[no-untyped-def]
    return grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True)


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
