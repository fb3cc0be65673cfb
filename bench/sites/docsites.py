"""Whole sites built by real static-site generators from text whose source is kept, for
the reading benchmark (``bench/quality_reading.py``).

The text is the project's own: the Markdown pages of ``docs/`` and the README, and the
Python modules of ``dedup/`` (their docstrings and their code). Three generators, each
with a theme it ships, render them:

* **Sphinx** (the ``alabaster`` theme, Sphinx's default) with MyST for the Markdown,
  ``autodoc`` for API pages of ``dedup``'s modules and ``viewcode`` for their source
  pages: article-like pages, API pages, module source pages (pages of code), the source
  pages' index (a page of links), the module index, the general index and the search page.
  Alabaster's sidebar holds the project's one-line description, "Navigation", "Related
  Topics" and a search box.
* **MkDocs** (its ``mkdocs`` and ``readthedocs`` themes) over the same ``docs/``.
* **Pelican** (its ``notmyidea`` theme): each second-level section of the docs an
  article (some a paragraph, some long with code and tables), and one-sentence notes, by
  three authors in categories, with tags of one, two, three and many items of unequal
  length; the index, tag, category, author and archive pages paginated by five; and
  question-and-answer threads (a question, then answers, each with its votes and its
  author's card), rendered by a template of ours over notmyidea's base.

The truth comes from the sources (:class:`Source`), not from the rendered pages: every
source document is cut into *units* (a line of prose, a list item, a table row, a line
of code, a heading). A page shows a document when one of its long units is in the page's
visible text. The page's **own text** is then the long units of the documents it shows
that are in its visible text (headings and titles only allowed, not required); on the
generators' index pages (the general index, the module index, the source pages' index)
its own text is the names of the objects and modules they list, and what the page says
of them is allowed: its heading, the letters it sorts them under, each entry's label
("in module dedup.sketch", "dedup.sketch.TextSketch method").

An API page shows what autodoc documents, modelled from the module's source: the
docstrings, the attributes with a ``#:`` comment (the comment required, the value as
Sphinx describes it allowed) and each object's signature as autodoc shows it, with
viewcode's "[source]" (allowed).
"""

from __future__ import annotations

import ast
import html
import inspect
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: Modules of dedup rendered as API and source pages by Sphinx.
API_MODULES = ("dedup.overlap", "dedup.sketch", "dedup.listing", "dedup.maintext",
               "dedup.simhash", "dedup.tables", "dedup.templates", "dedup.ids",
               "dedup.files", "dedup.progress_line")
#: The Python packages the generators come from (the project's ``sites`` extra).
GENERATORS = ("sphinx>=8", "myst-parser>=4", "mkdocs>=1.6", "pelican[markdown]>=4.9")
#: A unit of at least this many tokens names the document it comes from.
LONG = 4


@dataclass
class Unit:
    """A piece of a source document as a page shows it: its tokens, joined by spaces."""

    tokens: str
    #: required of a page that shows its document (prose, code, items), or only allowed
    #: (a heading, a title, a short line)
    required: bool


@dataclass
class Source:
    """A source document: its name and units."""

    name: str
    units: list[Unit] = field(default_factory=list)
    title: str = ""


@dataclass
class Built:
    """A built site: each page's URL path, HTML and kind; the sources it was built from;
    for index pages, the names they list."""

    name: str
    pages: dict[str, str] = field(default_factory=dict)
    kind: dict[str, str] = field(default_factory=dict)
    sources: list[Source] = field(default_factory=list)
    names: dict[str, list[str]] = field(default_factory=dict)
    #: ... and what else they say of those names (headings, letters, labels)
    labels: dict[str, list[str]] = field(default_factory=dict)


def tokens(text: str) -> list[str]:
    """The tokens of a text as the fingerprints count them."""
    from dedup.text import normalize, token_pattern

    return token_pattern().findall(normalize(text))


def joined(text: str) -> str:
    return " ".join(tokens(text))


# ---------------------------------------------------------------------------- sources

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|!?\[([^\]]*)\]\[[^\]]*\]", re.S)
_TAG = re.compile(r"<[^>]+>")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^#{1,6}\s+(.*)$")
_TABLE_RULE = re.compile(r"^\s*\|?[\s:|-]+\|[\s:|-]*$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def _inline(text: str) -> str:
    """Markdown's inline markup taken off: a link's or an image's text without its
    address, tags, entities."""
    text = _LINK.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)
    parts = re.split(r"(`[^`]*`)", text)  # code spans keep their angle brackets
    return "".join(p if p.startswith("`") else html.unescape(_TAG.sub(" ", p))
                   for p in parts)


def _add(units: list[Unit], text: str, required: bool = True) -> None:
    t = joined(text)
    if t:
        units.append(Unit(t, required and t.count(" ") + 1 >= LONG))


def markdown_units(text: str) -> list[Unit]:
    """The units of a Markdown document: each line of a paragraph, each list item, each
    table row and each line of code; headings allowed, not required."""
    units: list[Unit] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            for line in _inline("\n".join(para)).split("\n"):
                _add(units, _ITEM.sub("", line))
            para.clear()

    fenced = False
    for line in _COMMENT.sub("", text).splitlines():
        if _FENCE.match(line):
            flush()
            fenced = not fenced
            continue
        if fenced:
            _add(units, line)
        elif not line.strip() or _TABLE_RULE.match(line):
            flush()
        elif m := _HEADING.match(line):
            flush()
            _add(units, _inline(m.group(1)), required=False)
        elif line.lstrip().startswith("|"):
            flush()
            _add(units, _inline(line))
        elif _ITEM.match(line):
            flush()
            para.append(line)
        else:
            para.append(line)
    flush()
    return units


_ROLE = re.compile(r":[\w:.-]+:`~?([^`<]*?)(?:\s*<([^>]*)>)?`")


def _rendered_docstring(doc: str) -> str:
    """A docstring as Sphinx shows it: a role's target as its text (``~a.b.c``: ``c``)."""
    def role(m: re.Match[str]) -> str:
        target = m.group(1)
        if m.group(0).split("`", 1)[1].startswith("~"):
            target = target.rsplit(".", 1)[-1]
        return target

    return _ROLE.sub(role, doc)


def _doc_comment(lines: list[str], stmt: ast.stmt) -> list[str]:
    """The ``#:`` comment lines right above an assignment: the documentation autodoc
    shows for a module's or a class's attribute."""
    out, i = [], stmt.lineno - 2
    while i >= 0 and lines[i].lstrip().startswith("#:"):
        out.append(lines[i].lstrip()[2:])
        i -= 1
    return out[::-1]


def _assigned(stmt: ast.stmt) -> list[str]:
    """The names an assignment binds (``a = ...``, ``a: int = ...``, ``a, b = ...``)."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        parts = target.elts if isinstance(target, ast.Tuple) else [target]
        return [t.id for t in parts if isinstance(t, ast.Name)]
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    return []


def _signature(obj: object, member: bool) -> str:
    """A callable's parameters and return as autodoc shows them (defaults evaluated; a
    member's ``self`` or ``cls`` left out), ``""`` when it has none to show."""
    try:
        sig = inspect.signature(obj)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""
    params = list(sig.parameters.values())
    if member and params and params[0].name in ("self", "cls"):
        sig = sig.replace(parameters=params[1:])
    return str(sig)


def _decorated(node: ast.AST, name: str) -> bool:
    return any(isinstance(d, ast.Name) and d.id == name
               for d in getattr(node, "decorator_list", ()))


def module_sources(module: str) -> tuple[Source, Source, list[str], list[str]]:
    """A module's two documents, its docstrings as its API page shows them and its code as
    its source page shows it; the names it documents (public functions, classes, their
    methods and properties, and the attributes autodoc documents: those with a ``#:``
    comment), and the labels the general index gives them ("in module dedup.sketch",
    "dedup.sketch.TextSketch method"): each name's own entry, not the site's furniture.

    An attribute's value is shown as autodoc shows it (Sphinx's ``object_description`` of
    the imported value), allowed and not required: the truth's own text is what the
    source says in words."""
    from importlib import import_module

    from sphinx.util.inspect import object_description

    code = (ROOT / (module.replace(".", "/") + ".py")).read_text()
    lines = code.splitlines()
    tree = ast.parse(code)
    docs = Source(f"{module} (docstrings)")
    names: list[str] = []
    labels: list[str] = [module, f"{module} module", f"in module {module}",
                         f"class in {module}"]
    live = import_module(module)

    def documented(text: str) -> None:
        for line in _rendered_docstring(inspect.cleandoc(text)).splitlines():
            _add(docs.units, line.replace(">>>", " ").replace("...", " "))

    def visit(node: ast.AST, depth: int, owner: object, path: str) -> None:
        doc = ast.get_docstring(node, clean=True) if isinstance(
            node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) else None
        if doc:
            documented(doc)
        method = isinstance(node, ast.ClassDef)
        for child in ast.iter_child_nodes(node):
            bound = _assigned(child) if isinstance(child, ast.stmt) else []
            comment = _doc_comment(lines, child) if bound and depth < 2 else []
            for name in bound if comment else ():
                if name.startswith("_"):
                    continue
                names.append(name)
                documented("\n".join(comment))
                value = getattr(owner, name, None)
                annotation = getattr(child, "annotation", None)
                shown = (f"{name if method else f'{path}.{name}'}"
                         + (f": {ast.unparse(annotation)}" if annotation else "")
                         + (f" = {object_description(value)}" if value is not None else ""))
                _add(docs.units, f"{shown} [source]", required=False)
                if method:
                    labels.append(f"{path} attribute")
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and not child.name.startswith("_") and depth < 2:
                obj = getattr(owner, child.name, None)
                if ast.get_docstring(child):
                    names.append(child.name)
                    # its signature as autodoc shows it: the names, parameters, annotations,
                    # and viewcode's link to its source
                    if isinstance(child, ast.ClassDef):
                        sig = ["class", f"{path}.{child.name}{_signature(obj, False)}"]
                    else:
                        kind = ("property" if _decorated(child, "property") else
                                "classmethod" if _decorated(child, "classmethod") else
                                "static" if _decorated(child, "staticmethod") else "")
                        shown = (_signature(obj.fget, True).partition("->")[1:]
                                 if isinstance(obj, property) else [_signature(obj, method)])
                        # a member is shown by its name, a module's function by its path
                        sig = [kind, child.name if method else f"{path}.{child.name}",
                               *shown]
                        if method:
                            labels.append(f"{path} " + {
                                "property": "property", "classmethod": "class method",
                                "static": "static method"}.get(kind, "method"))
                    _add(docs.units, " ".join([*sig, "[source]"]), required=False)
                visit(child, depth + 1, obj, f"{path}.{child.name}")

    visit(tree, 0, live, module)
    source = Source(f"{module} (code)")
    for line in code.splitlines():
        _add(source.units, line)
    return docs, source, names, labels


# ---------------------------------------------------------------------------- builders

def ensure_generators() -> None:
    """Install the generators into this interpreter's environment when missing."""
    missing = []
    for module in ("sphinx", "myst_parser", "mkdocs", "pelican", "markdown"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        print(f"installing the site generators ({', '.join(missing)} missing) ...",
              file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *GENERATORS],
                       check=True)


def _read_site(out: Path, built: Built, kind_of) -> Built:
    for path in sorted(out.rglob("*.html")):
        rel = path.relative_to(out).as_posix()
        kind = kind_of(rel)
        if kind:
            built.pages[rel] = path.read_text(encoding="utf-8", errors="replace")
            built.kind[rel] = kind
    return built


def _docs_sources() -> list[Source]:
    out = []
    for path in sorted(DOCS.glob("*.md")):
        out.append(Source(path.stem, markdown_units(path.read_text())))
    return out


SPHINX_CONF = '''
import sys
sys.path.insert(0, {root!r})
project = "simcrawl"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.viewcode"]
source_suffix = {{".rst": "restructuredtext", ".md": "markdown"}}
html_theme = "alabaster"
html_theme_options = {{"description": "A web crawler that recognises near-duplicate pages "
                                      "while it crawls."}}
myst_heading_anchors = 3
suppress_warnings = ["myst.header", "myst.xref_missing", "toc.not_included", "myst.xref_ambiguous"]
'''


def build_sphinx(work: Path) -> Built:
    """The project's docs and API with Sphinx and alabaster (the module docstring)."""
    src, out = work / "sphinx-src", work / "sphinx-site"
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    src.mkdir(parents=True)
    (src / "conf.py").write_text(SPHINX_CONF.format(root=str(ROOT)))
    for path in DOCS.glob("*.md"):
        shutil.copy(path, src / path.name)
    api = src / "api"
    api.mkdir()
    built = Built("sphinx")
    built.sources = _docs_sources()
    all_names: list[str] = []
    all_labels: list[str] = []
    for module in API_MODULES:
        title = f"``{module}``"
        (api / f"{module}.rst").write_text(
            f"{title}\n{'=' * len(title)}\n\n.. automodule:: {module}\n   :members:\n")
        docs, code, names, labels = module_sources(module)
        built.sources += [docs, code]
        all_names += names
        all_labels += labels
    stems = sorted(p.stem for p in DOCS.glob("*.md"))
    (src / "index.rst").write_text(
        "simcrawl\n========\n\n.. toctree::\n   :maxdepth: 2\n\n"
        + "".join(f"   {s}\n" for s in stems)
        + "".join(f"   api/{m}\n" for m in API_MODULES)
        + "\n* :ref:`genindex`\n* :ref:`modindex`\n* :ref:`search`\n")
    subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", str(src), str(out)],
                   check=True, stderr=subprocess.DEVNULL)
    built.names["genindex.html"] = all_names
    built.names["py-modindex.html"] = list(API_MODULES)
    built.names["_modules/index.html"] = list(API_MODULES)
    # what these pages say beside their names: their headings, the letters they are
    # sorted under, and each entry's label; allowed, not required
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    built.labels["genindex.html"] = ["Index", *letters, *all_labels]
    built.labels["py-modindex.html"] = ["Python Module Index", *letters, "dedup"]
    built.labels["_modules/index.html"] = ["All modules for which code is available"]

    def kind(rel: str) -> str | None:
        if rel in ("genindex.html", "py-modindex.html", "search.html"):
            return rel[:-5]
        if rel == "_modules/index.html":
            return "source index"
        if rel.startswith("_modules/"):
            return "module source"
        if rel.startswith("api/"):
            return "api"
        if rel.startswith("_"):
            return None
        return "index" if rel == "index.html" else "doc"

    return _read_site(out, built, kind)


def build_mkdocs(work: Path, theme: str = "mkdocs") -> Built:
    """The project's docs with MkDocs and one of its own themes."""
    src, out = work / f"mkdocs-{theme}-src", work / f"mkdocs-{theme}-site"
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    (src / "docs").mkdir(parents=True)
    for path in DOCS.glob("*.md"):
        shutil.copy(path, src / "docs" / path.name)
    shutil.copytree(DOCS / "images", src / "docs" / "images")
    readme = (ROOT / "README.md").read_text()
    (src / "docs" / "index.md").write_text(readme)
    (src / "mkdocs.yml").write_text(
        f"site_name: simcrawl\nsite_description: A web crawler that recognises near-duplicate "
        f"pages while it crawls.\ntheme: {theme}\nuse_directory_urls: false\n"
        "markdown_extensions: [tables, fenced_code, toc]\n")
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(src / "mkdocs.yml"),
                    "-d", str(out)], check=True, stderr=subprocess.DEVNULL)
    built = Built(f"mkdocs ({theme})")
    built.sources = _docs_sources() + [Source("README", markdown_units(readme))]

    def kind(rel: str) -> str | None:
        if rel in ("search.html", "404.html"):
            return rel[:-5]
        if "/" in rel:
            return None
        return "home" if rel == "index.html" else "doc"

    return _read_site(out, built, kind)


# ------------------------------------------------------------------------------ blog

#: The threads' template: a question and its answers, each with its votes and its author's
#: card, in the markup of a question-and-answer site, over notmyidea's base.
THREAD_TEMPLATE = """{% extends "base.html" %}
{% block title %}{{ article.title|striptags }}{% endblock %}
{% block content %}
<section id="content" class="body">
<div id="question-header"><h1 itemprop="name"><a href="{{ SITEURL }}/{{ article.url }}" class="question-hyperlink">{{ article.title }}</a></h1>
<div class="question-stats">Asked <time>{{ article.locale_date }}</time> · Viewed 1,204 times</div></div>
{% set parts = article.content.split('<!-- answer -->') %}
{% set votes = article.votes.split(',') %}
{% set who = article.answerers.split(',') %}
<div id="question" class="question">
 <div class="post-layout">
  <div class="votecell"><button class="vote-up">Up vote</button><div class="js-vote-count">{{ votes[0] }}</div><button class="vote-down">Down vote</button></div>
  <div class="postcell"><div class="s-prose js-post-body" itemprop="text">{{ parts[0] }}</div>
   <div class="post-taglist">{% for tag in article.tags %}<a href="{{ SITEURL }}/{{ tag.url }}" class="post-tag">{{ tag }}</a> {% endfor %}</div>
   <div class="post-signature owner"><div class="user-info"><div class="user-action-time">asked {{ article.locale_date }}</div>
    <div class="user-details"><a href="{{ SITEURL }}/{{ article.author.url }}">{{ article.author }}</a><div class="-flair"><span class="reputation-score">1,031</span></div></div></div></div>
  </div>
 </div>
</div>
<div id="answers"><div id="answers-header"><h2>{{ parts|length - 1 }} Answers</h2>
 <div class="sort">Sorted by: <a href="?tab=votes">Highest score</a> <a href="?tab=active">Date modified</a></div></div>
{% for part in parts[1:] %}
 <div id="answer-{{ loop.index }}" class="answer js-answer">
  <div class="post-layout">
   <div class="votecell"><button class="vote-up">Up vote</button><div class="js-vote-count">{{ votes[loop.index] }}</div><button class="vote-down">Down vote</button></div>
   <div class="answercell"><div class="s-prose js-post-body" itemprop="text">{{ part }}</div>
    <div class="post-menu"><a href="#answer-{{ loop.index }}">Share</a> <a href="#">Improve this answer</a> <a href="#">Follow</a></div>
    <div class="post-signature"><div class="user-info"><div class="user-action-time">answered {{ article.locale_date }}</div>
     <div class="user-details"><a href="#">{{ who[loop.index0] }}</a><div class="-flair"><span class="reputation-score">{{ 100 * loop.index }}</span></div></div></div></div>
   </div>
  </div>
 </div>
{% endfor %}
</div>
</section>
{% endblock %}
"""

AUTHORS = ("Ada Byron", "Ben Lee", "Chen Wei")


def _sections() -> list[tuple[str, str, str]]:
    """Each second-level section of the docs: (document, heading, Markdown body)."""
    out = []
    for path in sorted(DOCS.glob("*.md")):
        if path.stem == "benchmarks":  # tables of figures, 12,000 words: one is enough
            continue
        parts = re.split(r"^## +(.+)$", path.read_text(), flags=re.M)
        for heading, body in zip(parts[1::2], parts[2::2]):
            body = body.strip()
            if body:
                out.append((path.stem, heading.strip(), body))
    return out


def _paragraphs(body: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", body) if p.strip()]


def build_pelican(work: Path) -> Built:
    """The blog with Pelican and notmyidea (the module docstring)."""
    src, out = work / "pelican-src", work / "pelican-site"
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    content, templates = src / "content", src / "templates"
    content.mkdir(parents=True)
    templates.mkdir()
    (templates / "thread.html").write_text(THREAD_TEMPLATE)
    built = Built("pelican")
    sections = _sections()
    day = 0

    def write(slug: str, title: str, body: str, *, author: str, category: str,
              tags: list[str], summary: str | None = None, extra: str = "") -> None:
        nonlocal day
        day += 1
        meta = (f"Title: {title}\nDate: 2026-{1 + day // 28:02d}-{1 + day % 28:02d} 10:00\n"
                f"Author: {author}\nCategory: {category}\nSlug: {slug}\n")
        if tags:
            meta += f"Tags: {', '.join(tags)}\n"
        if summary:
            meta += f"Summary: {summary}\n"
        (content / f"{slug}.md").write_text(meta + extra + "\n" + body + "\n")
        source = Source(slug, markdown_units(body), title)
        if summary:
            source.units += markdown_units(summary)
        for label in (title, author, category, *tags):  # the item's own facts
            source.units.append(Unit(joined(label), False))
        built.sources.append(source)

    # tags of one, two, three and many items of unequal length
    tag_plan = {0: ["solo"], 1: ["pair"], 2: ["pair", "trio"], 5: ["trio"], 9: ["trio"]}
    for n, (doc, heading, body) in enumerate(sections):
        paras = _paragraphs(body)
        first = paras[0] if not _FENCE.match(paras[0]) and not paras[0].startswith("|") else None
        tags = [*tag_plan.get(n, []), "many" if n % 3 == 0 else "docs"]
        write(f"s{n}-{joined(heading).replace(' ', '-')[:40]}", heading, body,
              author=AUTHORS[n % 3], category=doc, tags=tags,
              summary=" ".join(first.split()) if first and len(paras) > 1 else None)
    # one-sentence notes, short and long, some alone in their tag
    sentences = [s for _d, _h, body in sections for p in _paragraphs(body)
                 if not p.startswith(("|", "`", "-", "*", "#", "<")) and p[0].isalpha()
                 for s in re.split(r"(?<=[.!?])\s+", " ".join(p.split()))
                 if 6 <= len(s.split()) <= 60]
    for n, sentence in enumerate(sentences[:: max(1, len(sentences) // 24)][:24]):
        tags = ["note-alone"] if n == 0 else ["notes", "solo-note"] if n == 1 else \
            ["notes", f"note-pair-{n // 2}"] if n < 8 else ["notes"]
        write(f"note-{n}", f"Note {n + 1}", sentence, author=AUTHORS[(n + 1) % 3],
              category="notes", tags=tags)
    # question-and-answer threads: a section's first paragraph asked, and as many answers
    # as the section has more paragraphs (two to four), answer k the k-th paragraph of the
    # k-th section after it (its last when shorter). A thread says what no article says
    # whole, as a forum's threads do: answers cut from the question's own article had
    # made it an excerpt of that article, a copy of it or not by how many paragraphs the
    # article had.
    threads = [(h, _paragraphs(b)) for _d, h, b in sections if len(_paragraphs(b)) >= 3]
    for n, (heading, paras) in enumerate(threads[:8]):
        others = [threads[(n + k) % len(threads)][1] for k in range(1, min(5, len(paras)))]
        answers = [other[min(k, len(other) - 1)] for k, other in enumerate(others, 1)]
        body = "\n\n<!-- answer -->\n\n".join([paras[0], *answers])
        votes = ",".join(str(v) for v in [12, *range(len(answers) * 3, 0, -3)])
        who = ",".join(AUTHORS[(n + i) % 3] for i in range(len(answers)))
        write(f"thread-{n}", f"How does simcrawl handle this: {heading}?", body,
              author=AUTHORS[n % 3], category="questions", tags=["questions"],
              extra=f"Template: thread\nVotes: {votes}\nAnswerers: {who}\n")
    (src / "pelicanconf.py").write_text(textwrap.dedent(f"""
        AUTHOR = "Ada Byron"
        SITENAME = "Field notes on simcrawl"
        SITEURL = ""
        PATH = {str(content)!r}
        TIMEZONE = "UTC"
        DEFAULT_LANG = "en"
        THEME_TEMPLATES_OVERRIDES = [{str(templates)!r}]
        DEFAULT_PAGINATION = 5
        RELATIVE_URLS = True
        FEED_ALL_ATOM = None
        CATEGORY_FEED_ATOM = None
        LINKS = (("Pelican", "https://getpelican.com/"), ("Python", "https://www.python.org/"))
        SOCIAL = (("Mastodon", "#"), ("GitHub", "#"))
        MARKDOWN = {{"extension_configs": {{"markdown.extensions.extra": {{}},
                     "markdown.extensions.codehilite": {{"css_class": "highlight"}}}},
                     "output_format": "html5"}}
        """))
    subprocess.run([sys.executable, "-m", "pelican", str(content), "-o", str(out), "-s",
                    str(src / "pelicanconf.py"), "-q"], check=True)

    def kind(rel: str) -> str | None:
        top = rel.split("/")[0]
        if rel.startswith("thread-"):
            return "thread"
        if rel.startswith("note-"):
            return "note"
        if rel.startswith("s") and rel[1:2].isdigit():
            return "article"
        if top in ("tag", "category", "author"):
            return top
        if rel in ("archives.html", "tags.html", "categories.html", "authors.html"):
            return rel[:-5]
        if rel.startswith("index"):
            return "index"
        return None

    return _read_site(out, built, kind)


BUILDERS = {"sphinx": build_sphinx, "mkdocs": build_mkdocs,
            "mkdocs-readthedocs": lambda work: build_mkdocs(work, "readthedocs"),
            "pelican": build_pelican}
