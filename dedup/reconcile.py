"""Reconciling a finished crawl with the batch search (``simcrawl clusters``): which pairs
of admitted pages within k the inline decision missed, and the clusters of the store.

No I/O here: the caller reads the stored pages
(:meth:`dedup.adapters.mongo.maintenance.Maintenance.stored_pages`) and the hosts' template
lines, and writes what :func:`judge` and :func:`clusters_of` return.

**Which pairs are misses.** Every pair of admitted pages within k is judged again by the
crawl's own rule (:func:`dedup.decide.choose_original`): the later page (by crawl time) is
a copy of the earlier one when its own text is in the earlier one's (one way, the
earlier not mostly other text; listings only of the same items), measured on the
earlier page's stored text sketch, or, for a page without text, by the fingerprints
(the trust distance, the second opinion agreeing); else the earlier page is the later
one's copy by the same rule (the crawl could not drop it: it came first), and the pair is
one document all the same, named by the page crawled first (:attr:`Copy.held`). A pair
within k that the rule keeps apart both ways (two stubs of one template, a rewrite,
another document of the same site, a listing and one of its items) was kept on purpose
and is not a miss; the summary counts such pairs. The misses are what the inline
decision could not see when it decided: a candidate admitted at the same moment by
another process, a group whose members are not all within k of each other, a copy found
only after its site's template was learned, a copy whose extra text is its site's
furniture not yet learned met after the page it holds.

**Candidates.** The pairs within k (the batch search) and the pairs the crawl's text
anchors join (:func:`anchor_pairs`): the crawl finds a copy under another template by its
anchors when its fingerprint is more than k away, and the batch judges the same
candidates.

**Clusters.** The connected components of the judged copies: a cluster's id is its
*original*, the member crawled first (the earliest ``fetched_at``, then the smaller page
id), and every other member is recorded as a ``batch`` copy of its closest earlier
neighbour. A page in no pair is its own cluster.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from dedup.decide import Rules, choose_original
from dedup.index import Match
from dedup.index.core import ANCHOR_MATCHES, ANCHOR_READ
from dedup.overlap import token_pattern
from dedup.page import Page
from dedup.sketch import TextSketch
from dedup.templates import block_keys, strip
from dedup.text import normalize

#: Crawl time of a page that has none (a registered original): before every crawl.
_NEVER = dt.datetime.min.replace(tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class StoredPage:
    """What the store keeps of an admitted page that the judgement reads."""

    page_id: str
    url: str
    host: str = ""
    fetched_at: dt.datetime | None = None
    title: str | None = None
    description: str | None = None
    text: str | None = None
    sketch: bytes | None = None
    verify: int | None = None

    @property
    def crawled(self) -> tuple[dt.datetime, str]:
        """The order of crawl time (then page id, for equal times)."""
        at = self.fetched_at or _NEVER
        if at.tzinfo is None:
            at = at.replace(tzinfo=dt.timezone.utc)
        return at, self.page_id


@dataclass(frozen=True)
class Copy:
    """A pair judged one document: ``copy`` (crawled later) copies ``original``, or, with
    ``held``, ``original`` (crawled first, so the crawl could not drop it) copies the
    text of ``copy``, which holds it with furniture the crawl had not learned when it
    decided; the page crawled first stays the original either way. ``containment``: the
    share of the copying page's own text found in the other's."""

    original: str
    copy: str
    distance: int
    containment: float | None
    held: bool = False


def _listing(sketch: bytes | None) -> bool:
    """Whether a stored page's text sketch says it is a listing (``False``: no sketch)."""
    if not sketch:
        return False
    try:
        return TextSketch.from_bytes(sketch).listing
    except ValueError:
        return False


def judge(a: StoredPage, b: StoredPage, distance: int, rules: Rules,
          templates: Mapping[str, frozenset[int] | set[int]] | None = None) -> Copy | None:
    """Judge one pair within k by the crawl's rule, both ways: the later page against the
    earlier page's stored sketch, else the earlier page against the later's; each page's
    text without its host's learned template lines (``templates``: by host), as the
    crawl leaves them out. The second way is what the crawl could not ask: a page
    admitted first whose own text is in a page crawled after it, which holds it with its
    site's furniture not yet learned when it was decided (one way, the later page's own
    text is then not in the earlier's). Which of the two the crawl met first then does
    not change the record: either way the pair is one document, named by the page
    crawled first. ``None``: kept apart."""
    earlier, later = sorted((a, b), key=lambda p: p.crawled)
    lines = templates or {}
    for page_of, candidate, held in ((later, earlier, False), (earlier, later, True)):
        chosen = _copies(page_of, candidate, distance, rules,
                         lines.get(page_of.host, frozenset()))
        if chosen is not None:
            return Copy(earlier.page_id, later.page_id, distance, chosen[1], held=held)
    return None


def _copies(page_of: StoredPage, candidate: StoredPage, distance: int, rules: Rules,
            template: frozenset[int] | set[int]) -> tuple[Match, float | None] | None:
    """:func:`dedup.decide.choose_original` of one stored page against another's stored
    sketch (``template``: the first page's host's learned template lines)."""
    text = page_of.text or ""
    page = Page(url=page_of.url, host=page_of.host, text=text, title=page_of.title,
                description=page_of.description, verify=page_of.verify,
                page_id=page_of.page_id, listing=_listing(page_of.sketch),
                tokens=len(token_pattern().findall(normalize(text))))
    if text and template:
        rest, removed = strip(text, block_keys(text), template)
        if removed:
            page.rest = rest
    sketches: dict[str | bytes, TextSketch] = {}
    if candidate.sketch:
        try:
            sketches[candidate.sketch] = TextSketch.from_bytes(candidate.sketch)
        except ValueError:
            pass  # an unreadable sketch: judged as a page without text
    verifiers = {candidate.page_id: candidate.verify} if candidate.verify is not None else {}
    found = [Match(0, candidate.page_id, distance,
                   candidate.sketch if candidate.sketch in sketches else None)]
    return choose_original(page, found, verifiers, sketches, rules)


@dataclass
class Cluster:
    """A cluster of two or more pages: its original and every member (sorted ids)."""

    original: str
    members: list[str]


def clusters_of(components: Mapping[str, str], crawled: Mapping[str, tuple[dt.datetime, str]]
                ) -> list[Cluster]:
    """Clusters from connected components (``page id -> component label``, any label),
    each named by its original: the member crawled first (``crawled``: each member's
    :attr:`StoredPage.crawled`)."""
    groups: dict[str, list[str]] = {}
    for page_id, label in components.items():
        groups.setdefault(label, []).append(page_id)
    out = [Cluster(min(members, key=lambda p: crawled[p]), sorted(members))
           for members in groups.values() if len(members) > 1]
    return sorted(out, key=lambda c: (-len(c.members), c.original))


def batch_copies(copies: Iterable[Copy]) -> dict[str, Copy]:
    """One record per copied page: the judged pair naming its closest earlier page (the
    smallest distance, then the larger containment, then the smaller page id)."""
    best: dict[str, Copy] = {}
    for c in copies:
        held = best.get(c.copy)
        if held is None or (c.distance, -(c.containment or 0.0), c.original) < \
                (held.distance, -(held.containment or 0.0), held.original):
            best[c.copy] = c
    return best


def union_find(edges: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Connected components of an edge list in memory: ``node -> smallest node of its
    component`` (the in-process engine; the Spark engine finds them with
    ``dedup.spark.job.components``)."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {x: root(x) for x in parent}


def anchor_pairs(anchors: Mapping[str, Sequence[int]]) -> set[tuple[str, str]]:
    """The pairs of pages the crawl's text anchors make candidates of each other, over a
    whole store: two pages sharing ``ANCHOR_MATCHES`` of a page's anchors that are evidence
    (an anchor that more than ``ANCHOR_READ`` other pages share is a common phrase, passed
    over), or one when that page has only one (:mod:`dedup.index.core`). These find what
    the crawl found beyond k (a copy under another template, whose fingerprints differ by
    more than k), so the batch judges the same candidates the crawl did.

    Args:
        anchors: each page's anchors (:attr:`dedup.sketch.TextSketch.anchors`).

    Returns:
        ``(a, b)`` page id pairs, ``a < b``.
    """
    filed: dict[int, list[str]] = {}
    for page_id, values in anchors.items():
        for value in set(values):
            filed.setdefault(value, []).append(page_id)
    usable: Counter[str] = Counter()
    shared: Counter[tuple[str, str]] = Counter()
    for pages in filed.values():
        if len(pages) > ANCHOR_READ + 1:
            continue
        usable.update(pages)
        shared.update(combinations(sorted(pages), 2))
    return {(a, b) for (a, b), n in shared.items()
            if n >= min(ANCHOR_MATCHES, usable[a]) or n >= min(ANCHOR_MATCHES, usable[b])}
