"""Template text per host: blocks that recur on many distinct pages of a site.

trafilatura keeps some of a site's own text with the article: "You may also like",
newsletter prompts, copyright lines, comment-thread furniture. The same copy under another
site's template keeps other such text, which moves its simhash. A block (a line of the
extracted text, normalised: its tokens joined by one space) is *template text* of a host
once it has appeared on ``min_pages`` distinct admitted pages of that host and on at least
``share`` of the host's admitted pages (:data:`TEMPLATE_SHARE`: furniture is on nearly
every page of a site, while a post's summary shows on a handful of its listings, and a
note of one sentence on its tag, category, author and index pages would otherwise be
learned as its site's template and its page skipped); the decision
then leaves it out of the page's fingerprints (:meth:`dedup.deduplicator.Deduplicator.decide`),
and a page whose text is all template text is not fingerprinted at all
(``template_only``).

Only admitted pages with a text of their own teach (:func:`teaches`): a copy (dropped)
or a revisit never counts, so an article repeated on a mirror-heavy site does not become
its template; and a copy the decision missed, admitted, brings no line its host has not
shown (or too few: :data:`OWN_CHARS`), so it does not count either. A line is furniture
when pages with other texts repeat it, not when copies of one page do. The host's
``pages`` are the pages that taught. The counts live in Redis,
shared by every crawl process on the namespace: one sorted set per host,
``{namespace}:tpl:{host}`` (member: the block's XXH3-64, score: pages seen; the member
``pages``: the host's admitted pages), trimmed to
the ``keep`` most frequent blocks whenever it holds twice that many, and expiring
``ttl`` seconds after the host's last admitted page. Every batch reads its hosts'
learned blocks afresh (one pipelined round trip), so a decision sees what every process
has taught so far, not what this process read some seconds ago: a 30-second cache made
the decision depend on which process made it and when (with three crawl processes, a
copy fingerprinted with its template lines left out and its original without them were
no longer candidates of each other). ``refresh`` > 0 brings such a cache back.

Cold start: the first pages of a host are fingerprinted with their template text, before
anything is learned. That never makes them farther from their copies than without
learning: a later copy, fingerprinted without its own template, differs from them by one
template instead of two, and the text check compares the texts themselves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from dedup.simhash import line_keys, normalize

#: Distinct admitted pages of a host on which a block must appear to be template text
#: (``DEDUP_TEMPLATE_PAGES``; 0 = off).
DEFAULT_MIN_PAGES = 5

#: The least share of a host's admitted pages a block must appear on to be template text.
TEMPLATE_SHARE = 0.5

#: The member of a host's counts that counts its admitted pages (the blocks are numbers).
PAGES = "pages"

#: The characters of its own text (normalised) an admitted page needs to teach its host's
#: template (:func:`teaches`): about eight words. The grown set's stubs of ten words
#: (bench/quality_grown.py) hold 34 characters and more, a tenth of them under 48. With
#: the short text's 30 tokens (``DEDUP_MIN_TOKENS``), or with 50 characters, stubs taught
#: nothing, a site's template was learned later and one more of 132 later stubs under one
#: title was said a copy; with 10 tokens or 40 characters every development figure holds
#: and near-dup-dev-3's missed copies still teach nothing (docs/fingerprints.md).
OWN_CHARS = 40

#: Blocks kept per host (the most frequent), and the TTL of a host's counts (30 days).
KEEP = 512
TTL = 30 * 86_400

def line_weights(text: str) -> list[int]:
    """The weight of each line of ``text`` (the lines of :func:`block_keys`) in a page's
    own text (:func:`teaches`): its characters, normalised (counting its tokens took
    a regular expression over the text, 0.28 ms a page)."""
    return [len(line) for line in normalize(text).split("\n")]


def teaches(keys: Sequence[int | None], weights: Sequence[int],
            seen: Callable[[int], bool], own_chars: int = OWN_CHARS) -> bool:
    """Whether an admitted page teaches its host's template: whether it has a text of its
    own, ``own_chars`` characters (or half of its characters, for a short page; each
    line's ``weights``: :func:`line_weights`) on lines its host has not ``seen`` on a page
    that taught.

    A line is furniture when pages with other texts repeat it, not when copies of one
    page do: a copy the decision missed (a thin page's small edit, a boilerplate variant)
    brings no line of its own, and six of them taught their lines to a host as its
    template, so the page they copied and its host's other pages with that text were
    skipped as ``template_only``."""
    own = sum(n for key, n in zip(keys, weights) if key is not None and not seen(key))
    return own > 0 and own >= min(own_chars, sum(weights) / 2)


def lesson(host: str, text: str, keys: Sequence[int | None] | None = None
           ) -> tuple[str, Sequence[int | None], list[int]]:
    """What an admitted page of ``host`` gives :meth:`TemplateStore.learn`: its lines'
    keys (``keys`` if already computed) and weights (:func:`line_weights`)."""
    return host, block_keys(text) if keys is None else keys, line_weights(text)


def block_key(line: str) -> int | None:
    """The key of one block (a line of extracted text): XXH3-64 of its normalised tokens
    joined by one space; ``None`` for a line without tokens."""
    return block_keys(line.replace("\n", " "))[0]


def block_keys(text: str) -> list[int | None]:
    """:func:`block_key` of each line of ``text``, in order."""
    return line_keys(normalize(text))


def strip(text: str, keys: Sequence[int | None], template: frozenset[int] | set[int]
          ) -> tuple[str, int]:
    """``text`` without its template lines (``keys``: its :func:`block_keys`), and how
    many lines were left out."""
    kept = [line for line, key in zip(text.split("\n"), keys) if key not in template]
    return "\n".join(kept), len(keys) - len(kept)


def template_blocks(counts: Iterable[tuple[int, float]], pages: float, min_pages: int,
                    share: float) -> frozenset[int]:
    """The template blocks of a host: of its blocks and the admitted pages each was seen
    on (``counts``), those seen on ``min_pages`` and on ``share`` of its ``pages``."""
    least = max(min_pages, share * pages)
    return frozenset(block for block, n in counts if n >= least)


class TemplateStore(Protocol):
    """What the decision needs of the learned template text: :class:`MemoryTemplates`
    in one process, :class:`HostTemplates` in Redis for every process of a crawl."""

    def known(self, hosts: Iterable[str]) -> dict[str, frozenset[int]]:
        """Each host's template blocks (those seen on ``min_pages`` admitted pages and on
        ``share`` of them)."""

    def learn(self, pages: Iterable[tuple[str, Sequence[int | None], Sequence[int]]]
              ) -> None:
        """Count the distinct blocks of the admitted pages (``(host, block keys, weight of
        each block)``, in order) that :func:`teaches` says teach."""


class MemoryTemplates:
    """Learned template blocks per host, in this process (the same counts as
    :class:`HostTemplates`: distinct admitted pages per block and per host, the ``keep``
    most frequent blocks kept once a host holds twice that many; nothing expires)."""

    def __init__(self, min_pages: int = DEFAULT_MIN_PAGES, keep: int = KEEP,
                 share: float = TEMPLATE_SHARE, own_chars: int = OWN_CHARS) -> None:
        if min_pages < 1:
            raise ValueError(f"min_pages must be at least 1, got {min_pages}")
        self.min_pages, self.keep, self.share = min_pages, keep, share
        self.own_chars = own_chars
        self.counts: dict[str, Counter[int]] = {}
        self.pages: Counter[str] = Counter()

    def known(self, hosts: Iterable[str]) -> dict[str, frozenset[int]]:
        """See :meth:`TemplateStore.known`."""
        return {h: template_blocks(self.counts.get(h, Counter()).items(), self.pages[h],
                                   self.min_pages, self.share) for h in set(hosts)}

    def learn(self, pages: Iterable[tuple[str, Sequence[int | None], Sequence[int]]]
              ) -> None:
        """See :meth:`TemplateStore.learn`."""
        for host, keys, weights in pages:
            counts = self.counts.setdefault(host, Counter())
            if not teaches(keys, weights, counts.__contains__, self.own_chars):
                continue
            distinct = {k for k in keys if k is not None}
            counts.update(distinct)
            self.pages[host] += 1
            if len(counts) > 2 * self.keep:  # Redis's ZREMRANGEBYRANK of the least
                self.counts[host] = Counter(dict(counts.most_common(self.keep)))
