"""URL rules learned from the crawl's own match records: which URLs of a host are copies
of another URL before they are fetched (the learning and the prediction, free of I/O).

simcrawl decides a page after downloading it; most copies inside one site are the same page
under other URLs (session ids, tracking parameters, print and mobile views, directory
aliases, a mirror host), as DustBuster ("Do not crawl in the DUST", Bar-Yossef, Keidar and
Schonfeld, WWW 2007) found. Every copy the crawl drops leaves a pair ``(copy URL,
original URL)``; a :class:`Rule` is one transformation that turns the copy's URL into the
original's:

- ``drop_param``: a query parameter removed (``?ref=``, ``?utm_source=``);
- ``any_value``: a query parameter's value ignored (both URLs have it);
- ``path_param``: a path parameter removed (``;jsessionid=...``);
- ``drop_prefix``: a first path segment removed (``/m/``, ``/amp/``, ``/print/``);
- ``drop_suffix``: a last path segment removed (``index.html``, ``amp``, ``print``);
- ``slash``: a trailing slash added or removed;
- ``lower_case``: the path's letter case;
- ``host_alias``: the same path on another host (``www.``, a mirror).

A pair is explained when the transformations its URLs differ by, applied together, turn
the copy's URL into the original's; each of them gains the pair as support. A rule
*holds* on its host once it has ``min_support`` pairs (:data:`MIN_SUPPORT`) and nothing
against it: two stored originals of the host that it would take for one page (one
turned into the other, or both into one URL) are evidence that the part it changes
changes the page (an ``id``, a ``page``, a ``q``), and the rule never holds.

A URL's *key* (:meth:`UrlRules.key`) is the URL with the host's holding rules applied
(each ``any_value`` parameter's value blanked): two URLs with one key are predicted to be
one page. Prediction (:meth:`UrlRules.predict`) names the stored original whose key a
requested URL has, and the rules that took it there. :class:`UrlRules` keeps a crawl's
rules in memory (the model, and the benchmark's); the store every process of a crawl
shares is :mod:`dedup.adapters.redis_url_rules`, over the same functions: :func:`explain`,
:func:`apply`, :func:`holding_of`, :func:`explores`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import xxhash

from dedup.config import DEFAULT_URL_RULES_SUPPORT

#: Pairs a rule needs before it holds (and nothing against it): ``DEDUP_URL_RULES_SUPPORT``,
#: declared in :mod:`dedup.config`.
MIN_SUPPORT = DEFAULT_URL_RULES_SUPPORT

#: Rule kinds, in the order a key applies them.
KINDS = ("host_alias", "path_param", "drop_prefix", "drop_suffix", "slash", "lower_case",
         "drop_param", "any_value")

#: The share of predicted requests sent anyway, to check their rules (MaybeDont fetches 5%).
EXPLORE = 0.05

#: A rule's confirmations over its checks (its pairs, and the pages that were against it)
#: it needs to hold: 1.0, none against (a rule a page contradicts is dropped at once).
CONFIDENCE = 1.0

#: A blanked value (``any_value``): no URL has it.
_ANY = "\x00"


@dataclass(frozen=True)
class Rule:
    """One transformation of a host's URLs: ``kind`` (:data:`KINDS`) with its ``arg``
    (the parameter, the segment, the other host; ``""`` for ``slash`` and
    ``lower_case``)."""

    host: str
    kind: str
    arg: str = ""

    def __str__(self) -> str:
        return f"{self.host}: {self.kind}" + (f" {self.arg}" if self.arg else "")


    def text(self) -> str:
        """The rule without its host, as the store keeps it (:meth:`of`)."""
        return f"{self.kind}\t{self.arg}"

    def whole(self) -> str:
        """The rule with its host, as a request or a held link carries it
        (:meth:`parse`)."""
        return f"{self.host} {self.text()}"

    @classmethod
    def parse(cls, whole: str) -> Rule:
        """The rule :meth:`whole` wrote.

        Raises:
            ValueError: not a rule's text.
        """
        host, _, text = whole.partition(" ")
        return cls.of(host, text)

    @classmethod
    def of(cls, host: str, text: str) -> Rule:
        """The rule :meth:`text` wrote, on ``host``.

        Raises:
            ValueError: not a rule's text.
        """
        kind, _, arg = text.partition("\t")
        if kind not in KINDS:
            raise ValueError(f"not a URL rule: {text!r}")
        return cls(host, kind, arg)


def host_of(url: str) -> str:
    """The host a URL's rules are kept under (its network location, lower case)."""
    return urlsplit(url).netloc.lower()


def holding_of(host: str, support: dict[str, int], against: dict[str, int],
               min_support: int = MIN_SUPPORT, confidence: float = CONFIDENCE) -> list[Rule]:
    """The rules of ``host`` that hold, in the order a key applies them: ``min_support``
    pairs, and a confidence (pairs over pairs and evidence against) of at least
    ``confidence`` (at 1.0, nothing against). ``support`` and ``against`` map a rule's
    :meth:`Rule.text` to its counts."""
    out = []
    for text, n in support.items():
        bad = against.get(text, 0)
        if n >= min_support and (not bad if confidence >= 1.0
                                 else n / (n + bad) >= confidence):
            try:
                out.append(Rule.of(host, text))
            except ValueError:
                continue  # written by a later simcrawl: not this one's to apply
    return sorted(out, key=lambda r: (KINDS.index(r.kind), r.arg))


def explores(url: str, share: float = EXPLORE) -> bool:
    """Whether a predicted request for ``url`` is sent anyway, to check its rules: the
    same answer in every process and every crawl (a hash of the URL, not a draw)."""
    return share > 0 and xxhash.xxh64_intdigest(url.encode()) % 10_000 < share * 10_000


@dataclass
class _Url:
    scheme: str
    host: str
    path: str
    params: list[tuple[str, str]]

    @classmethod
    def of(cls, url: str) -> _Url:
        parts = urlsplit(url)
        return cls(parts.scheme.lower(), parts.netloc.lower(), parts.path or "/",
                   parse_qsl(parts.query, keep_blank_values=True))

    def text(self) -> str:
        return urlunsplit((self.scheme, self.host, self.path,
                           urlencode(sorted(self.params)), ""))


def _path_params(path: str) -> tuple[str, list[str]]:
    """A path without its ``;name=value`` parameters, and their names."""
    names, kept = [], []
    for segment in path.split("/"):
        bare, *extra = segment.split(";")
        names += [e.split("=", 1)[0] for e in extra if e]
        kept.append(bare)
    return "/".join(kept), names


def _segments(path: str) -> list[str]:
    return [s for s in path.split("/") if s]


def explain(copy: str, original: str) -> list[Rule] | None:
    """The rules whose transformations, together, turn the URL ``copy`` into ``original``
    (each keyed to the copy's host), or ``None``: they differ otherwise (or not at all)."""
    a, b = _Url.of(copy), _Url.of(original)
    if a.scheme not in ("http", "https") or a.text() == b.text():
        return None
    rules: list[Rule] = []
    if a.host != b.host:
        if a.path != b.path or sorted(a.params) != sorted(b.params):
            return None
        return [Rule(a.host, "host_alias", b.host)]
    path, names = _path_params(a.path)
    rules += [Rule(a.host, "path_param", n) for n in sorted(set(names))]
    mine, theirs = _segments(path), _segments(b.path)
    if len(mine) == len(theirs) + 1 and mine[1:] == theirs:
        rules.append(Rule(a.host, "drop_prefix", mine[0]))
        path = "/" + "/".join(theirs) + ("/" if path.endswith("/") else "")
    elif len(mine) == len(theirs) + 1 and mine[:-1] == theirs:
        rules.append(Rule(a.host, "drop_suffix", mine[-1]))
        path = "/" + "/".join(theirs) + ("/" if theirs else "")
    if path != b.path and path.rstrip("/") == b.path.rstrip("/"):
        rules.append(Rule(a.host, "slash"))
        path = b.path
    if path != b.path and path.lower() == b.path.lower():
        rules.append(Rule(a.host, "lower_case"))
        path = b.path
    if path != b.path:
        return None
    mine_q, theirs_q = dict(a.params), dict(b.params)
    if len(mine_q) != len(a.params) or len(theirs_q) != len(b.params) \
            or set(theirs_q) - set(mine_q):
        return None  # a repeated parameter, or one only the original has
    for name in sorted(mine_q):
        if name not in theirs_q:
            rules.append(Rule(a.host, "drop_param", name))
        elif mine_q[name] != theirs_q[name]:
            rules.append(Rule(a.host, "any_value", name))
    return rules or None


def apply(rules: Iterable[Rule], url: str, fired: list[Rule] | None = None) -> str:
    """``url`` with ``rules`` applied (those of its host, in the order of :data:`KINDS`;
    an ``any_value`` parameter's value blanked). ``fired``, when given, gains each rule
    that changed the URL at its step (what took the URL to its key)."""
    u = _Url.of(url)
    by_kind: dict[str, set[str]] = defaultdict(set)
    for r in rules:
        if r.host == u.host:
            by_kind[r.kind].add(r.arg)
    if not by_kind:
        return u.text()
    host = u.host
    trace = fired.append if fired is not None else None

    def fire(kind: str, arg: str = "") -> None:
        if trace is not None:
            trace(Rule(host, kind, arg))

    if by_kind.get("host_alias"):
        u.host = min(by_kind["host_alias"])
        fire("host_alias", u.host)
    if by_kind.get("path_param"):
        kept = []
        for segment in u.path.split("/"):
            bare, *extra = segment.split(";")
            names = [e.split("=", 1)[0] for e in extra]
            for name in sorted({n for n in names if n in by_kind["path_param"]}):
                fire("path_param", name)
            kept.append(";".join([bare, *(e for e, n in zip(extra, names)
                                          if n not in by_kind["path_param"])]))
        u.path = "/".join(kept)
    segments = _segments(u.path)
    trailing = u.path.endswith("/")
    if segments and segments[0] in by_kind.get("drop_prefix", ()):
        fire("drop_prefix", segments[0])
        segments = segments[1:]
    if segments and segments[-1] in by_kind.get("drop_suffix", ()):
        fire("drop_suffix", segments[-1])
        segments, trailing = segments[:-1], True
    u.path = "/" + "/".join(segments) + ("/" if trailing and segments else "")
    if "slash" in by_kind:
        bare = u.path.rstrip("/") or "/"
        if bare != u.path:
            fire("slash")
        u.path = bare
    if "lower_case" in by_kind:
        lower = u.path.lower()
        if lower != u.path:
            fire("lower_case")
        u.path = lower
    if trace is not None:
        for name in sorted({k for k, _ in u.params}):
            if name in by_kind.get("drop_param", ()):
                fire("drop_param", name)
            elif name in by_kind.get("any_value", ()):
                fire("any_value", name)
    u.params = [(k, _ANY if k in by_kind.get("any_value", ()) else v)
                for k, v in u.params if k not in by_kind.get("drop_param", ())]
    return u.text()


@dataclass
class Prediction:
    """A requested URL predicted to be a stored page: ``original`` (its URL), and the
    ``rules`` of the host that took the URL there."""

    original: str
    rules: list[Rule]


class UrlRules:
    """Rules learned from the pairs of a crawl's match records, per host, in memory (see
    the module docstring).

    Args:
        min_support: pairs a rule needs before it holds (:data:`MIN_SUPPORT`).
    """

    def __init__(self, min_support: int = MIN_SUPPORT) -> None:
        self.min_support = min_support
        self.support: Counter[Rule] = Counter()
        self._rules: dict[str, set[Rule]] = defaultdict(set)  # host -> its rules
        self._aliases: dict[str, set[Rule]] = defaultdict(set)  # host -> aliases naming it
        self.against: Counter[Rule] = Counter()
        self._originals: dict[str, set[str]] = defaultdict(set)  # host -> URLs, as keyed
        self._keys: dict[str, dict[str, str]] = defaultdict(dict)  # host -> key -> URL
        self._images: dict[Rule, dict[str, str]] = {}  # rule -> its image -> a stored URL

    def add_original(self, url: str) -> None:
        """A page admitted (stored) under ``url``: prediction's target, and the evidence
        against a rule that would take it and another stored page for one."""
        u = _Url.of(url)
        text = u.text()
        if text in self._originals[u.host]:
            return
        before = self.holding(u.host)
        self._originals[u.host].add(text)
        for rule in self._rules[u.host]:
            self._see(rule, text)
        for rule in self._aliases[u.host]:
            self._see_alias(rule, text)
        if self.holding(u.host) != before:
            self._rekey(u.host)
        else:
            self._keys[u.host].setdefault(apply(before, text), text)

    def learn(self, copy: str, original: str) -> list[Rule]:
        """A match record's pair: the rules it supports (none when the URLs differ by
        more than these transformations)."""
        rules = explain(copy, original)
        if not rules:
            return []
        host = rules[0].host
        before = self.holding(host)
        for rule in rules:
            if rule not in self.support:  # judged on every stored page of its host
                self._rules[host].add(rule)
                if rule.kind == "host_alias":
                    self._aliases[rule.arg].add(rule)
                self._images[rule] = {}
                for url in self._originals[rule.host]:
                    self._see(rule, url)
                if rule.kind == "host_alias":
                    for url in self._originals[rule.arg]:
                        self._see_alias(rule, url)
            self.support[rule] += 1
        if self.holding(host) != before:
            self._rekey(host)
        return rules

    def _see(self, rule: Rule, url: str) -> None:
        """Judge ``rule`` on a stored page of its host: against it when it turns the page
        into another stored page, or the page and another into one URL."""
        images = self._images.setdefault(rule, {})
        originals = self._originals[rule.host]
        to = apply([rule], url)
        if to != url and (to in originals or rule.kind == "host_alias"
                          and to in self._originals[rule.arg]):
            self.against[rule] += 1
        elif to in images and images[to] != url:
            self.against[rule] += 1
        elif url in images and images[url] != url:  # another page turns into this one
            self.against[rule] += 1
        images.setdefault(to, url)

    def _see_alias(self, rule: Rule, url: str) -> None:
        """Judge a host alias on a stored page of the host it names: against it when the
        aliased host has its own stored page under that path."""
        back = _Url.of(url)
        back.host = rule.host
        if back.text() in self._originals[rule.host]:
            self.against[rule] += 1

    def holding(self, host: str) -> list[Rule]:
        """The rules that hold on ``host``: ``min_support`` pairs and none against (the
        rule of :func:`holding_of` at confidence 1, on the rules themselves: a link's
        check asks twice)."""
        return sorted((r for r in self._rules.get(host, ())
                       if self.support[r] >= self.min_support and not self.against[r]),
                      key=lambda r: (KINDS.index(r.kind), r.arg))

    def key(self, url: str) -> str:
        """``url`` as its host's holding rules see it (:func:`apply`)."""
        return apply(self.holding(_Url.of(url).host), url)

    def _rekey(self, host: str) -> None:
        rules = self.holding(host)
        targets = {r.arg for r in rules if r.kind == "host_alias"}
        keys: dict[str, str] = {}
        for url in self._originals[host]:
            keys.setdefault(apply(rules, url), url)
        self._keys[host] = keys
        for other in targets:  # a mirror's pages are keyed by their host's URLs
            self._keys[other] = {apply(self.holding(other), u): u
                                 for u in self._originals[other]}

    def predict(self, url: str) -> Prediction | None:
        """The stored page ``url`` is predicted to be, or ``None``: no holding rule of its
        host changes it, or what they make of it is no stored page's key. A URL that is
        stored itself is not predicted (it is a revisit)."""
        u = _Url.of(url)
        rules = self.holding(u.host)
        if not rules or u.text() in self._originals[u.host]:
            return None
        to = apply(rules, url)
        host = _Url.of(to).host
        target = self._keys[host].get(apply(self.holding(host), to)) if host != u.host \
            else self._keys[host].get(to)
        if target is None or target == u.text():
            return None
        used = [r for r in rules if apply([r], url) != u.text()]
        return Prediction(target, used)
