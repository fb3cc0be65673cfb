"""The import rules, checked on the import graph grimp builds from the source (imports
inside functions included; imports only for type checkers left out of the rooms' order and
counted for the circles): two packages,
``crawler`` and ``dedup``, and inside them rooms that import one way,

    crawler.cli  ->  the crawl (crawler.*) / crawler.console / dedup.spark  ->  dedup

(the three in the middle never import each other), and no circle of imports anywhere."""

from __future__ import annotations

import grimp
import pytest

PACKAGES = ("crawler", "dedup")

#: Which room may import which (each may import itself).
MAY_IMPORT = {"command": {"crawl", "console", "spark", "library"},
              "crawl": {"library"}, "console": {"library"}, "spark": {"library"},
              "library": set()}


def room(module: str) -> str:
    """The room of a module (see the module docstring).

    >>> [room(m) for m in ("crawler.cli.crawl", "crawler.pipelines", "crawler.console.app",
    ...                    "dedup.spark.job", "dedup.adapters.mongo")]
    ['command', 'crawl', 'console', 'spark', 'library']
    """
    for prefix, name in (("crawler.cli", "command"), ("crawler.console", "console"),
                         ("dedup.spark", "spark"), ("crawler", "crawl"), ("dedup", "library")):
        if module == prefix or module.startswith(prefix + "."):
            return name
    return "outside"


@pytest.fixture(scope="module")
def graph():  # type: ignore[no-untyped-def]
    return grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True, cache_dir=None)


def test_imports_point_one_way(graph) -> None:  # type: ignore[no-untyped-def]
    """A direct import against the rooms' order is reported; with none, no chain of
    imports can go against it either."""
    rooms = {room(m) for m in graph.modules}
    assert rooms == set(MAY_IMPORT), rooms  # every room has modules, and nothing is outside
    illegal = sorted(f"{m} ({room(m)}) imports {n} ({room(n)})" for m in graph.modules
                     for n in graph.find_modules_directly_imported_by(m)
                     if room(n) != room(m) and room(n) not in MAY_IMPORT[room(m)])
    assert not illegal, "\n".join(illegal)


def test_no_module_imports_itself_through_others() -> None:
    """No circle of imports, the type checkers' imports included (a circle there is a
    knot a reader has to untie all the same)."""
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=False, cache_dir=None)
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


#: The rooms of the library beside its pure core, as folders: the adapters (Redis, Redis
#: Cluster, MongoDB, the journal, the embedded servers) and the batch job on Spark;
#: everything else in dedup is the pure core, the store's records, interfaces and write
#: protocol included.
ADAPTERS = ("dedup.adapters", "dedup.spark")

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

    code = ("import sys, dedup, dedup.deduplicator, dedup.reading, dedup.reconcile; "
            "print(sorted(m for m in ('redis', 'pymongo', 'bson', 'scrapy') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


def test_each_middleware_is_a_module_of_its_own() -> None:
    """crawler/middlewares/ holds one Scrapy component a module (a class with a
    middleware's ``process_*`` hook), each named by its module in the add-on,
    and ``crawler.middlewares.<Class>``, which settings written before the package name,
    loads the same class."""
    import importlib
    import inspect
    import pkgutil

    from scrapy.utils.misc import load_object

    import crawler.middlewares as package
    from crawler.addon import COMPONENTS

    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"crawler.middlewares.{info.name}")
        components = [name for name, cls in inspect.getmembers(module, inspect.isclass)
                      if cls.__module__ == module.__name__
                      and any(n.startswith("process_") for n in vars(cls))]
        assert len(components) <= 1, (info.name, components)
        found.update({f"{module.__name__}.{name}": name for name in components})
    assert len(found) == 7, found  # batches.py holds the decision's helpers, no component
    named = {name for part in COMPONENTS.values() if isinstance(part, dict) for name in part
             if isinstance(name, str) and name.startswith("crawler.middlewares")}
    assert named == set(found)
    for path, name in found.items():
        if name != "CutDownloads":  # the add-on's own: no setting named it before
            assert load_object(f"crawler.middlewares.{name}") is load_object(path)


def test_each_extension_is_a_module_of_its_own() -> None:
    """crawler/extensions/ holds one Scrapy extension a module (a class built
    ``from_crawler``), each named by its module where the crawl enables it (the add-on,
    simcrawl's settings), and ``crawler.extensions.<Class>``, which settings written
    before the package name, loads the same class."""
    import importlib
    import inspect
    import pkgutil

    from scrapy.settings import Settings
    from scrapy.utils.misc import load_object

    import crawler.extensions as package
    import crawler.settings as simcrawl_settings
    from crawler.addon import COMPONENTS

    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"crawler.extensions.{info.name}")
        components = [name for name, cls in inspect.getmembers(module, inspect.isclass)
                      if cls.__module__ == module.__name__ and hasattr(cls, "from_crawler")]
        assert len(components) <= 1, (info.name, components)
        found.update({f"{module.__name__}.{name}": name for name in components})
    assert len(found) == 5, found
    own = Settings()
    own.setmodule(simcrawl_settings)
    named = {name for name in [*COMPONENTS["EXTENSIONS"], *own.getdict("EXTENSIONS")]
             if isinstance(name, str) and name.startswith("crawler.extensions")}
    assert named == set(found)
    for path, name in found.items():
        assert load_object(f"crawler.extensions.{name}") is load_object(path)

