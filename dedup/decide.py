"""The crawl's decision rules: a page's evidence and its candidates' evidence in, a
verdict out. No client, no I/O: :class:`dedup.deduplicator.Deduplicator` gathers the
evidence from the index, the checksum registry and the page facts (each behind an
interface, in memory or on the servers) and applies these rules.

Order of the checks (docs/fingerprints.md):

1. **Revisit**: the URL is stored already (a re-crawl): compared with its own stored
   checksum, *unchanged* or *changed*; never a duplicate of itself (:func:`revisit`).
2. **Template only**: the page's text is nothing but its host's learned template lines
   (:func:`leave_out_template`); otherwise those lines are left out of its fingerprints.
3. **Exact copy**: the normalised text's checksum is owned by another admitted page
   (:func:`exact_or_next`). A short text's registration is its whole decision.
4. **Pinyin copy**: a Chinese page whose text (or pinyin windows) is mostly a registered
   original's; a smaller overlap is an excerpt and the page is kept (:func:`registered`).
5. **Near copy**: a candidate within the index's k is the original when the page's own
   text is ``verify_containment`` in the candidate's and the candidate's is not mostly
   other text (one way: :func:`text_check`; where either is a listing, the same items
   both ways), measured on the candidate's text sketch, which every process reads from
   the index with the candidate (:mod:`dedup.sketch`); only where a page has no text do
   the fingerprints decide (within ``trust_distance`` and the second opinion agrees). On
   the page's site, one text with a few edits is a copy whatever the titles
   (:func:`one_text`); what the texts leave open the site settles: a candidate under
   another title or description is another document, and where neither tells, so is one
   whose text and the page's each hold a passage of their own (:func:`own_passages`).
   Candidates are asked closest first, the page's declared canonical first of all
   (:func:`choose_original`).
6. Otherwise the page is **new** and admitted.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dedup.config import (
    DEFAULT_CONTAINMENT,
    DEFAULT_MAIN_CONTENT,
    DEFAULT_PINYIN_MIN_RUN,
    DEFAULT_PINYIN_MIN_SHARE,
    DEFAULT_TRUST_DISTANCE,
    DEFAULT_VERIFY_DISTANCE,
)
from dedup.ids import url_key
from dedup.index import Match
from dedup.overlap import SHINGLE_TOKENS, THIN_TOKENS, shared_text
from dedup.page import Page
from dedup.pinyin import PinyinScore
from dedup.simhash import (
    DEFAULT_CJK_NGRAM,
    DEFAULT_DROP_NUMBERS,
    DEFAULT_MIN_TOKENS,
    fingerprint,
    hamming,
)
from dedup.sketch import TITLE_OVERLAP, TextSketch, line_values, shingle_values
from dedup.templates import block_keys, strip

# A page is a copy of a registered original found by its pinyin windows when this share
# of its text is the original's (``DEDUP_MAIN_CONTENT``, :data:`DEFAULT_MAIN_CONTENT`):
# the original is its main content. Less is a quotation: the page is kept and an excerpt
# recorded.

#: The shortest passage (characters) of a page recorded as an excerpt of a registered
#: original.
EXCERPT_CHARS = 30


#: A text of fewer distinct shingles than this is thin (:data:`THIN_TOKENS` tokens).
THIN_SHINGLES = THIN_TOKENS - SHINGLE_TOKENS + 1

#: Two texts of which one is thin are copies only when they are nearly one text: the
#: shingles they share are at least this share of all the shingles of both (their
#: resemblance), not only of the thin one's. A thin text is a line or two of its own
#: beside a site's furniture; two stubs of one site share the furniture and differ in
#: their lines, so the thin one is mostly in the other (containment 0.8 and more) while
#: their resemblance is the furniture's share of both (docs/fingerprints.md, "Stub pages").
THIN_RESEMBLANCE = 0.9

#: A page is a copy only of a candidate whose own text is at least this share the
#: page's (the text check's second way, :func:`text_check`): a candidate that is mostly
#: other text is another document that holds the page (a listing or a home page showing
#: it whole, a page quoting it, a stub page with the article and more). Measured on the
#: development pairs with their whole texts, both orders of each (docs/fingerprints.md,
#: "One way"): of the 1,229 copies (of 1,260) whose own text is 0.8 and more in the
#: candidate's, the candidate's is the copy's at 0.5 and more for all but 6 (their
#: originals carry their site's furniture, two to seven times the article, until the
#: site's template is learned).
ORIGINAL_SHARE = 0.5

#: A line of at least this many tokens can be a passage of a page's own
#: (:func:`own_passages`): a sentence, not a date or a menu entry.
PASSAGE_TOKENS = 8

#: The fewest shingles that show a passage of its own each way (:func:`own_passages`):
#: of the page's line, sampled and none in the candidate; of the candidate's sample, not
#: in the page. One shingle alone can be an edit or a chance match of 16 bits.
PASSAGE_EVIDENCE = 2

#: Lines of a page found in part in a candidate of its site (:func:`one_text`) that show
#: one text with edits: one such line can be a line that differs on every page of a site
#: (a byline with its date, a "Tags:" line).
EDITED_LINES = 2

#: ... and the share of the page's text in the candidate's that shows one text with a few
#: edits, which the site's titles and descriptions do not overrule: a rewrite of a
#: site's page whose furniture lifts its containment over the text check's 0.8 (0.83 on
#: near-dup-dev-2, told apart by its description) is not one; "Article N" pages that
#: repeat a body with 3 of its 250 words changed (0.96) are.
ONE_TEXT = 0.9

#: The fewest shingles the text check judges on (unless either text has fewer, all
#: of them then): below it a sketch's estimate errs by more than 0.1 too often.
MIN_SAMPLE = 20

# A candidate within the trust distance (``DEDUP_TRUST_DISTANCE``,
# :data:`DEFAULT_TRUST_DISTANCE`) whose second opinion agrees is a copy by its
# fingerprints; the others need the text check.

#: Words per feature of the second-opinion simhash (``DEDUP_VERIFY_DISTANCE``).
VERIFY_SHINGLE = 2

#: Decision kinds.
NEW, EXACT, NEAR, PINYIN, UNCHANGED, CHANGED = ("new", "exact", "simhash", "pinyin",
                                                "unchanged", "changed")
#: A page whose text is all its host's template text: not fingerprinted, not admitted.
TEMPLATE_ONLY = "template_only"


def second_opinion(text: str, drop_numbers: bool = DEFAULT_DROP_NUMBERS,
                   min_tokens: int = DEFAULT_MIN_TOKENS, cjk_ngram: int = DEFAULT_CJK_NGRAM
                   ) -> int:
    """The second-opinion simhash of a text (features: :data:`VERIFY_SHINGLE` words)."""
    return fingerprint(text, shingle=VERIFY_SHINGLE, drop_numbers=drop_numbers,
                       min_tokens=min_tokens, cjk_ngram=cjk_ngram).simhash


@dataclass
class Excerpt:
    """A passage of a kept page that is a registered original's (a quotation).

    Attributes:
        original_id: the registered original.
        characters: length of the longest passage of the page that is the original's.
        span: its ``(start, end)`` character offsets in the page's normalised text.
        share: the share of the page's text that is the original's.
        pinyin: the pinyin windows' score against the original.
        original_url, original_host, source: the original's, when known.
    """

    original_id: str
    characters: int
    span: tuple[int, int]
    share: float
    pinyin: PinyinScore | None = None
    original_url: str | None = None
    original_host: str | None = None
    source: str | None = None


#: Why a copy is kept as the original of the page stored before it: that page declared
#: the copy's URL canonical, or the copy says it was published earlier.
TURN_CANONICAL, TURN_PUBLISHED = "canonical", "published"

#: How much earlier a copy must say it was published to be the original
#: (:func:`turned_round`).
EARLIER_BY = dt.timedelta(days=1)


@dataclass(frozen=True)
class Turn:
    """A match turned round (:func:`turned_round`): the page stored before, recorded now
    as a copy of the page decided, with how the two compare.

    Attributes:
        reason: :data:`TURN_CANONICAL` or :data:`TURN_PUBLISHED`.
        url, host: the page stored before.
        kind, distance, containment: the match (``exact`` or ``simhash``), as it was
            found the other way round.
    """

    reason: str
    url: str
    host: str
    kind: str
    distance: int
    containment: float | None = None


@dataclass
class Decision:
    """What to do with a page.

    Attributes:
        kind: ``new``, ``exact``, ``simhash`` (near copy), ``pinyin`` (copy of a
            registered original by pinyin windows), ``unchanged``, ``changed`` or
            ``template_only``.
        page_id: the page's id (for a revisit: the stored page's id).
        original_id: the page it copies (exact / near copies).
        distance: Hamming distance to the original (0 for exact copies).
        original_url: the original's URL when known.
        original_host: the original's host when known.
        source: the registered original's source name, when the original is one.
        pinyin: for a pinyin copy, the share of windows, run and span.
        containment: for a near copy judged by its text, the share of the copy's own
            text's three-token shingles found in the original's (``None``: judged by fingerprints);
            for a pinyin copy, the share of the page's shingles that are the original's.
        excerpt: for a page that is kept but quotes a registered original, which one and
            how much (:class:`Excerpt`).
        canonical_link: for a copy, ``declared`` when the copy declares its original
            canonical (that page was preferred among the candidates).
        turn: for a page kept as the original of the page stored before it (the match
            turned round, :func:`turned_round`): that page, now its copy. The decision is
            ``new`` and takes over that page's id (its index entries and its copies).
    """

    kind: str
    page_id: str
    original_id: str | None = None
    distance: int = 0
    original_url: str | None = None
    original_host: str | None = None
    source: str | None = None
    pinyin: PinyinScore | None = None
    containment: float | None = None
    excerpt: Excerpt | None = None
    canonical_link: str | None = None
    turn: Turn | None = None

    @property
    def dropped(self) -> bool:
        """Whether the page is a copy (its item and outlinks are dropped)."""
        return self.kind in (EXACT, NEAR, PINYIN)


@dataclass(frozen=True)
class Rules:
    """The thresholds of the decision (built from :class:`dedup.config.DedupConfig` by
    :meth:`from_config`; the defaults are the crawl's).

    Attributes:
        trust_distance: a candidate within this distance whose second opinion agrees is
            the original by its fingerprints.
        verify_distance: the second opinions (simhashes on word pairs) must be within this
            distance for such a match, when both pages have one (``None``: not asked).
        verify_containment: the text check of the other candidates: the original when
            this share of the page's own text's shingles is in it (``None``: off, such
            candidates are never copies).
        original_share: ... and when at least this share of the candidate's own text is
            the page's (:data:`ORIGINAL_SHARE`).
        thin_resemblance: where either text is thin, the resemblance the two need
            (:data:`THIN_RESEMBLANCE`).
        one_text, edited_lines: on one site, the share of the page's text in the
            candidate's and the lines found in part that show one text with edits
            (:data:`ONE_TEXT`, :data:`EDITED_LINES`; :func:`one_text`).
        passage_tokens, passage_evidence: a line that can be a passage of a page's own,
            and the shingles that show one (:data:`PASSAGE_TOKENS`,
            :data:`PASSAGE_EVIDENCE`; :func:`own_passages`).
        min_sample: the fewest of the page's shingles the text check judges on
            (:data:`MIN_SAMPLE`).
        title_overlap: on one site, the share of their words (shared over all, word by
            word) two titles or two descriptions need to name one document
            (:data:`dedup.sketch.TITLE_OVERLAP`).
        main_content: a Chinese page copies a registered original its pinyin windows
            found when this share of its text is the original's; less is an excerpt.
        pinyin_min_share, pinyin_min_run: the same by windows alone (share of the page's
            windows), and the run of windows that makes an excerpt without the texts.
        fingerprint_options: how the crawl fingerprints (``shingle``, ``drop_numbers``,
            ``min_tokens``, ``cjk_ngram``), to fingerprint a page again without its
            template lines.
    """

    trust_distance: int = DEFAULT_TRUST_DISTANCE
    verify_distance: int | None = DEFAULT_VERIFY_DISTANCE
    verify_containment: float | None = DEFAULT_CONTAINMENT
    original_share: float = ORIGINAL_SHARE
    thin_resemblance: float = THIN_RESEMBLANCE
    one_text: float = ONE_TEXT
    edited_lines: int = EDITED_LINES
    passage_tokens: int = PASSAGE_TOKENS
    passage_evidence: int = PASSAGE_EVIDENCE
    min_sample: int = MIN_SAMPLE
    title_overlap: float = TITLE_OVERLAP
    main_content: float = DEFAULT_MAIN_CONTENT
    pinyin_min_share: float = DEFAULT_PINYIN_MIN_SHARE
    pinyin_min_run: int = DEFAULT_PINYIN_MIN_RUN
    fingerprint_options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: Any) -> Rules:
        """The rules a :class:`dedup.config.DedupConfig` sets (the trust distance at
        most its k)."""
        return cls(trust_distance=min(config.trust_distance, config.max_distance),
                   verify_distance=config.verify_distance if config.verify_distance >= 0
                   else None,
                   verify_containment=config.containment, main_content=config.main_content,
                   pinyin_min_share=config.pinyin_min_share,
                   pinyin_min_run=config.pinyin_min_run,
                   fingerprint_options=dict(config.fingerprint_options))


# ------------------------------------------------------------------------------- rules

def revisit(page: Page, stored_id: str, stored_checksum: str | None) -> Decision:
    """A URL stored before: *unchanged* when its text's checksum is the stored one's,
    else *changed*; the stored page's id either way."""
    return Decision(UNCHANGED if stored_checksum == page.checksum else CHANGED, stored_id)


def kept_verdict(page: Page, verdict: Any) -> Decision:
    """A URL an earlier crawl recorded as a copy (a :class:`dedup.facts.CopyVerdict`),
    fetched again with the same text: the same verdict. A re-crawl keeps every earlier
    verdict unless the page changed, whatever the order in which processes meet pages."""
    return Decision(verdict.kind, page.page_id, verdict.original_id, verdict.distance,
                    containment=verdict.containment)


def leave_out_template(page: Page, template: frozenset[int] | set[int],
                       rules: Rules) -> Decision | None:
    """Leave the host's template lines out of ``page``'s fingerprints (in place: its
    ``simhash`` and ``verify`` become the rest's, ``rest`` the text the text check reads;
    ``text`` stays whole); a page that is nothing else
    is :data:`TEMPLATE_ONLY` (the returned decision). A page done once is left as is."""
    if page.templated or not page.text or page.short:
        return None
    page.templated = True
    if page.blocks is None:
        page.blocks = block_keys(page.text)
    if not template:
        return None
    rest, removed = strip(page.text, page.blocks, template)
    if not removed:
        return None
    options = dict(rules.fingerprint_options)
    fp = fingerprint(rest, **options)
    if not fp.tokens and not page.whole:  # nothing but the site's own text
        return Decision(TEMPLATE_ONLY, page.page_id)
    page.simhash, page.rest, page.template_lines = fp.simhash, rest, removed
    if not fp.tokens:  # its reading is its site's template alone: judged on its whole
        page.short = page.by_whole = True  # visible text, exactly (never a copy of
        return None  # another page of the template, as a reading alike would make it)
    if fp.short:  # a short text of its own beside the template: judged as a short text
        page.short = True  # (by its whole text's checksum: the same page's copy only)
        return None
    if page.verify is not None:
        options.pop("shingle", None)
        page.verify = second_opinion(rest, **options)
    return None


def exact_or_next(page: Page, owner: str | None) -> Decision | None:
    """The registry's answer: an exact copy of the page that owns the text; a short text
    that now owns itself is new (its registration is its whole decision); ``None``: a
    long text nobody owns goes on to the near check."""
    if owner is not None and owner != page.page_id:
        return Decision(EXACT, page.page_id, owner, 0)
    if page.short:
        return Decision(NEW, page.page_id)
    return None


def follow(page: Page, leader: Page, verdict: Decision) -> Decision:
    """A page of a batch with the same (long) text as an earlier one, its leader: a copy
    of what the leader copies, skipped with it, or an exact copy of it."""
    if verdict.kind == TEMPLATE_ONLY:
        return Decision(TEMPLATE_ONLY, page.page_id)
    if verdict.dropped:  # a copy of a copy is a copy of the same original
        return Decision(verdict.kind, page.page_id, verdict.original_id, verdict.distance,
                        pinyin=verdict.pinyin)
    return Decision(EXACT, page.page_id, leader.page_id, 0)


def registered(page: Page, found: Sequence[tuple[str, PinyinScore]],
               originals: Mapping[str, np.ndarray], rules: Rules
               ) -> tuple[Decision | None, Excerpt | None]:
    """Whether a Chinese page copies a registered original its pinyin windows ``found``
    (most matching windows first; ``originals``: the shingles of those whose text is at
    hand): a copy when the original is the page's main content (``main_content`` of its
    text, or ``pinyin_min_share`` of its windows); else an excerpt when a passage of at
    least :data:`EXCERPT_CHARS` characters is the original's (or, without the texts, a
    run of ``pinyin_min_run`` windows)."""
    quoted: Excerpt | None = None
    for original, s in found:
        if page.text and original in originals:
            share, chars, span = shared_text(page.own_text, originals[original])
            if share >= rules.main_content or s.share >= rules.pinyin_min_share:
                return Decision(PINYIN, page.page_id, original, 0, pinyin=s,
                                containment=round(share, 4)), None
            if quoted is None and chars >= EXCERPT_CHARS:
                quoted = Excerpt(original, chars, span, round(share, 4), s)
        elif s.share >= rules.pinyin_min_share:
            return Decision(PINYIN, page.page_id, original, 0, pinyin=s), None
        elif quoted is None and s.run >= rules.pinyin_min_run:
            quoted = Excerpt(original, s.span[1] - s.span[0] + 1, s.span,
                             round(s.share, 4), s)
    return None, quoted


def declared_first(page: Page, found: list[Match], declared_id: str | None
                   ) -> list[Match]:
    """Put first among ``found`` the stored page ``page`` declares canonical, when that
    page is a candidate (a declaration alone makes no copy); otherwise closest first."""
    if declared_id is None or not any(m.page_id == declared_id for m in found):
        return found
    return sorted(found, key=lambda m: m.page_id != declared_id)  # stable otherwise


def trusted(page: Page, m: Match, verifiers: Mapping[str, int], rules: Rules) -> bool:
    """Whether candidate ``m`` is the original by fingerprints alone: within the trust
    distance, and its second opinion (``verifiers``: the candidates' that are known)
    agrees when both pages have one."""
    if m.distance > rules.trust_distance:
        return False
    return rules.verify_distance is None or page.verify is None \
        or m.page_id not in verifiers \
        or hamming(verifiers[m.page_id], page.verify) <= rules.verify_distance


def text_check(values: np.ndarray, sketch: TextSketch, rules: Rules, listing: bool = False
               ) -> float | None:
    """The text check of a candidate, one way: the share of the page's own text
    (``values``, its shingles in full) that is in the candidate, measured on a sample of
    at least ``min_sample`` (:data:`MIN_SAMPLE`) of the page's shingles against the candidate's sketch,
    when it reaches ``verify_containment`` and the candidate is not mostly other text
    (at least ``original_share`` of its sketch is the page's); else ``None``.

    A page that holds the candidate and much more of its own (a listing, a home page
    with full posts, an archive, a page quoting an article) is not its copy: its own
    text is not in the candidate. Nor is a page the copy of a candidate that holds it
    and more of its own than of the page's: the candidate is then another document that
    contains it (docs/fingerprints.md, "One way").

    Where either is a listing (``listing``: the page; the candidate's sketch says
    whether it is one), the two are copies only when they show the same items: the
    candidate's text is then ``verify_containment`` in the page's too. So a listing is
    not the copy of one of its items, nor an item the copy of a listing that shows it
    beside others (docs/fingerprints.md, "Listings")."""
    if rules.verify_containment is None:  # the text check is off
        return None
    inside, held, sample = sketch.shares(values)
    if not sample or sample < min(rules.min_sample, len(values), sketch.count):
        return None
    return shares_pass(inside, held, len(values), sketch.count, rules,
                       listing or sketch.listing)


def shares_pass(inside: float, held: float, count: int, other: int, rules: Rules,
                listing: bool = False) -> float | None:
    """The text check's rule on the two shares, however they were measured (on a
    candidate's sketch in the crawl, on both whole texts in ``simcrawl calibrate``): the
    share ``inside`` of a page's ``count`` shingles that is in a candidate of ``other``,
    and the share ``held`` of the candidate's that is the page's. The candidate is the
    original when ``inside`` reaches ``verify_containment`` and ``held`` reaches
    ``original_share`` (``verify_containment`` where either is a listing: the same
    items), and, where either text is thin, their resemblance reaches
    ``thin_resemblance``. Returns ``inside`` rounded, or ``None``."""
    threshold = rules.verify_containment
    if threshold is None:
        return None
    least = threshold if listing else rules.original_share
    if inside < threshold or held < least:
        return None
    if min(count, other) < THIN_SHINGLES \
            and resemblance(inside, count, other) < rules.thin_resemblance:
        return None
    return round(inside, 4)


def passage_lines(text: str, tokens: int = PASSAGE_TOKENS) -> list[np.ndarray]:
    """The :func:`dedup.sketch.shingle_values` of each line of ``text`` of at least
    ``tokens`` tokens (``Rules.passage_tokens``: the lines :func:`own_passages` reads)."""
    return line_values(text, tokens)


def own_passages(lines: Sequence[np.ndarray], values: np.ndarray, sketch: TextSketch,
                 evidence: int = PASSAGE_EVIDENCE) -> bool:
    """Whether a page and a candidate each hold a passage the other lacks altogether,
    and share every other line whole: two documents under one template (two stubs of a
    site, a sentence of their own each beside the same furniture), where a copy differs
    from its original by edits spread over its lines, or by lines only one of the two
    has.

    ``lines``: the page's own text's :func:`passage_lines`; ``values``: the shingles of
    its whole text (with its template lines: the candidate's sketch may hold them). On
    the candidate's sample (its sketch keeps every value up to its largest): a line of
    the page is its own when at least ``evidence`` (:data:`PASSAGE_EVIDENCE`) of its
    shingles are
    sampled and none is the candidate's; a line with some but not all found is edited,
    and then the texts are not told apart; the candidate has a passage of its own when
    ``evidence`` of its sample are not the page's."""
    if sketch.shift or not len(sketch.low):  # a version-1 sketch: not asked
        return False
    own = False
    for line in lines:
        found, sampled = sketch.sample_found(line)
        if not found:
            own = own or sampled >= evidence
        elif found < sampled:
            return False
    return own and sketch.missing_from(values) >= evidence


def item_values(items: Sequence[str], values: np.ndarray) -> list[np.ndarray]:
    """What a listing's reading holds of each of its ``items`` (their texts,
    :func:`dedup.listing.listing_items`): the item's shingle values that are among the
    page's own text's (``values``), sorted, as :func:`other_items` reads them."""
    return [np.intersect1d(shingle_values(item), values, assume_unique=True)
            for item in items]


def other_items(items: Sequence[np.ndarray], sketch: TextSketch,
                evidence: int = PASSAGE_EVIDENCE) -> bool:
    """Whether a listing and a listing it is a candidate of show other items, though
    each text is mostly in the other (two pages of a blog's listings that share four of
    their five posts): the candidate shows another number of items than the page's
    ``items`` (each as :func:`item_values` reads it; its sketch says, from version 5), or
    one of the page's items is mostly not in the candidate (at least
    ``evidence`` of its sampled shingles and more than half of them not found). A
    listing is a copy only of a listing of the same items (docs/fingerprints.md,
    "Listings"); between two layouts of one listing an item's text is the same but for
    the shingles across its fields. An item is judged on what the page's reading holds
    of it."""
    if sketch.items and sketch.items != len(items):
        return True
    if sketch.shift or not len(sketch.low):  # a version-1 sketch: not asked
        return False
    for read in items:
        found, sampled = sketch.sample_found(read)
        if 2 * found < sampled and sampled - found >= evidence:
            return True
    return False


def resemblance(inside: float, count: int, other: int) -> float:
    """Shared shingles over all shingles of two texts: a page of ``count`` distinct
    shingles, ``inside`` of them in a candidate of ``other``."""
    shared = inside * count
    return shared / max(1.0, count + other - shared)


def one_text(lines: Sequence[np.ndarray], values: np.ndarray, sketch: TextSketch,
             share: float, described_alike: bool = False, rules: Rules | None = None
             ) -> bool:
    """Whether a page and a candidate of its site show one text, whatever their titles:
    at least :data:`ONE_TEXT` of the page's text is in the candidate's (``share``, the
    text check's), the page has no passage of its own (no line of at least
    :data:`PASSAGE_TOKENS` tokens with :data:`PASSAGE_EVIDENCE` of its shingles sampled
    and none found in the candidate), and either at least :data:`EDITED_LINES` of its
    lines are found in part (one text with words changed here and there), or at least
    :data:`ONE_TEXT` of the candidate's text is the page's too (one text both ways: a
    repost whose heading is another title, with the post's own heading below it) and
    either the sample saw every passage line of the page (:data:`PASSAGE_EVIDENCE` of
    the shingles of each) or the site describes both in the same words
    (``described_alike``, :meth:`dedup.sketch.TextSketch.described_alike`). Two
    documents of a site differ by whole passages (their own lines beside the same
    furniture). A sample that has not seen every line may have missed a short passage of
    the page's own (a stub's sentence beside long furniture), so then that way needs
    what the site says: a description is drawn from a page's content, where a title is
    chosen (a repost, a variant or a doorway page has its own), and two stubs whose
    extraction found only the furniture (the site's list of recent posts) are described
    apart. (The same own text under another title is an exact copy:
    the checksum leaves the title line out, :func:`dedup.reading.fingerprint_text`.)

    ``lines``: the page's own text's :func:`passage_lines`; ``values``: its own text's
    :func:`dedup.sketch.shingle_values`; ``rules``: the thresholds (``Rules.one_text``,
    ``edited_lines``, ``passage_evidence``; the crawl's when not given)."""
    rules = rules or Rules()
    if sketch.shift or not len(sketch.low) or share < rules.one_text:  # version 1: not asked
        return False
    edited, seen = 0, bool(lines)
    for line in lines:
        found, sampled = sketch.sample_found(line)
        if not found and sampled >= rules.passage_evidence:
            return False
        edited += 0 < found < sampled
        seen = seen and sampled >= rules.passage_evidence
    return edited >= rules.edited_lines or (seen or described_alike) \
        and sketch.missing_from(values) <= (1 - rules.one_text) * len(sketch.low)


def choose_original(page: Page, found: Sequence[Match], verifiers: Mapping[str, int],
                    sketches: Mapping[str | bytes, TextSketch], rules: Rules,
                    values: np.ndarray | None = None
                    ) -> tuple[Match, float | None] | None:
    """The candidate ``page`` copies, and the texts' containment (``None``: judged by
    fingerprints), or ``None``: no candidate passes and the page is new. Candidates are
    asked in turn, in the order given (closest first):

    * when both pages have a text (``sketches``: the candidates' text sketches, which the
      index keeps with their fingerprints, by the match's sketch bytes, else by page id;
      a candidate may come with the sketch of a copy dropped for it, and is the original
      when the page copies that copy) and the text check is on, the text decides,
      at every distance: the candidate is the original when the page's own text's
      shingles are ``verify_containment`` in its text, and its own text is not mostly
      other text (:func:`text_check`);
    * on the page's site, the texts decide what they show: one text (:func:`one_text`)
      is a copy whatever the titles; what they leave open the site's titles and
      descriptions settle: a candidate under another title, or under its title with
      another description, is another document
      (:meth:`dedup.sketch.TextSketch.other_document`), and so is one whose title does
      not tell it apart, when neither is described and each text holds a passage of its
      own that the other lacks altogether (:func:`own_passages`);
    * otherwise (a page without text, an original registered by its fingerprint alone,
      the text check off) the fingerprints decide: within ``trust_distance``, with the
      second opinion agreeing (:func:`trusted`), unless the site's titles or
      descriptions say another document.

    ``values``: the page's own text's :func:`dedup.sketch.shingle_values` (computed here
    when not given).
    """
    lines: list[np.ndarray] | None = None  # the page's passage lines, when asked
    items: list[np.ndarray] | None = None  # what it reads of its items, when asked
    whole: np.ndarray | None = None  # the shingles of its whole text, when asked
    for m in found:
        sketch = sketches.get(m.sketch) if m.sketch else None
        if sketch is None:
            sketch = sketches.get(m.page_id or "")
        if sketch is None or not page.text or rules.verify_containment is None:
            if sketch is not None and sketch.other_document(
                    page.host, page.title, page.description, rules.title_overlap):
                continue
            if trusted(page, m, verifiers, rules):
                return m, None
            continue
        if values is None:
            values = shingle_values(page.own_text)
        share = text_check(values, sketch, rules, page.listing)
        if share is None:
            continue
        if page.items and sketch.listing:
            if items is None:
                items = item_values(page.items, values)
            if other_items(items, sketch, rules.passage_evidence):
                continue
        if sketch.on_site(page.host):
            if lines is None:
                lines = passage_lines(page.own_text, rules.passage_tokens)
            alike = sketch.described_alike(page.host, page.description, rules.title_overlap)
            if one_text(lines, values, sketch, share, alike, rules):
                return m, share
            if sketch.other_document(page.host, page.title, page.description,
                                     rules.title_overlap):
                continue
            if sketch.undescribed_on_site(page.host, page.description):
                if whole is None:  # the candidate's sketch may hold its template lines
                    whole = shingle_values(page.text)
                if own_passages(lines, whole, sketch, rules.passage_evidence):
                    continue
        return m, share
    return None


def near_or_new(page: Page, chosen: tuple[Match, float | None] | None,
                batch_checksums: Mapping[str, str], declared_id: str | None,
                excerpt: Excerpt | None = None) -> Decision:
    """The verdict of the near check: new (with its excerpt, if any) when no candidate
    passed; an exact copy of a page of the same batch with the same text; else a near
    copy, ``declared`` when the page declared its original canonical."""
    if chosen is None:
        return Decision(NEW, page.page_id, excerpt=excerpt)
    match, share = chosen
    if match.distance == 0 and batch_checksums.get(match.page_id or "") == page.checksum:
        return Decision(EXACT, page.page_id, match.page_id, 0)
    return Decision(NEAR, page.page_id, match.page_id, match.distance, containment=share,
                    canonical_link="declared" if declared_id is not None
                    and declared_id == match.page_id else None)


def turned_round(page: Page, decision: Decision, original_canonical: str | None,
                 original_published: dt.datetime | None) -> str | None:
    """Why a copy is the original of the page it copies, stored before it, when the pages
    say so (``None``: they do not, and the page stored first stays the original):

    * :data:`TURN_CANONICAL`: that page declared this page's URL canonical
      (``original_canonical``, in :func:`dedup.ids.url_key` form);
    * :data:`TURN_PUBLISHED`: this page says it was first published at least
      :data:`EARLIER_BY` before that page says it was (``original_published``), both in
      their metadata. Less is no evidence: a date without a time is read as its
      midnight, and a time without its offset as UTC, so two dates of one day can be
      either way round.

    Only an exact or near copy of a crawled page turns: not a copy that declares its
    original canonical itself (the pages disagree), not a copy of a registered original
    (a source is the original by registration), and not a copy of its own URL."""
    if decision.kind not in (EXACT, NEAR) or decision.original_id is None \
            or decision.canonical_link or decision.source \
            or (decision.original_url and url_key(decision.original_url) == url_key(page.url)):
        return None
    if original_canonical and original_canonical == url_key(page.url):
        return TURN_CANONICAL
    if page.published is not None and original_published is not None \
            and page.published <= original_published - EARLIER_BY:
        return TURN_PUBLISHED
    return None


def turn(page: Page, decision: Decision, reason: str) -> Decision:
    """The decision of a copy turned round (:func:`turned_round`): the page is ``new``,
    under its original's id, and that page (named by the copy's decision) is its copy."""
    assert decision.original_id is not None and decision.original_url is not None
    return Decision(NEW, decision.original_id, turn=Turn(
        reason, decision.original_url, decision.original_host or "", decision.kind,
        decision.distance, decision.containment))
