"""URL rules in Redis: learned from the match records of every process of a crawl, kept
for its later crawls, and asked before a link is requested (the rules themselves, free of
I/O, are :mod:`dedup.url_rules`).

A link whose host has rules that hold is turned into its *key* (:func:`dedup.url_rules.apply`).
The first URL with a key *claims* it: a stored page (its own URL), or else the first link
sent. A later link with the same key is predicted to be the claimant's page and is not
requested: if the claimant is decided, it is recorded at once as a copy of the claimant's
original (kind ``url_rule``); if not, it is *held* until the claimant is, and then recorded
(or sent, when the claimant never gets decided: :meth:`RedisUrlRules.release`). A share of
predictions (:func:`dedup.url_rules.explores`) is sent anyway; one whose page is not a copy
of the claimant's original is evidence against its rules, which then hold no more, and
every URL they kept from being requested is sent again (:meth:`RedisUrlRules.take_resend`).

Keys (``ns`` the namespace; ``p`` is ``ns:ur:{host}``, the host a hash tag, so that a Redis
Cluster keeps a host's keys on one node):

- ``p:support``, ``p:against``, ``p:saved``: hashes, rule (:meth:`Rule.text`) -> its pairs,
  the evidence against it, the requests it kept from being sent;
- ``p:pages``: hash, URL -> ``o<TAB>page id`` (a stored original) or
  ``c<TAB>original URL<TAB>original id`` (a copy);
- ``p:img:<rule>``: hash, a stored original's URL with the rule applied -> that URL (two
  originals with one image are evidence against the rule);
- ``p:holding``: the holding rules, one a line (the claims' generation);
- ``p:claims:<digest of the holding rules>``: hash, key -> the URL that claimed it;
- ``p:held:<claimant>``: list of ``URL<TAB>depth<TAB>rules<RS>carry`` waiting for the
  claimant (``carry``: the caller's request, when it is not the spider's plain one; RS
  the ASCII record separator, which neither holds);
- ``p:waiting``: set of the host's claimants with links held for them;
- ``p:mirrors``: set of the hosts whose ``host_alias`` rules name this host (its
  originals judge those rules too);
- ``p:by:<rule>``: set of the links (``URL<TAB>depth<TAB>carry``) recorded as copies
  through the rule;
- ``ns:ur:hosts`` (hosts with rules, or with links held), ``ns:ur:resend`` (a list of
  ``URL<TAB>depth<TAB>carry`` to send again).

A link's screen is one Lua script a host (:data:`_SCREEN`): the claim, the claimant's
state and the prediction's record, in one round trip for every link of the host in the
batch. Only a link of a mirror host, whose claimant or rules are another host's, takes a
second and third.

Every write is a plain command on a host's keys, or a set-if-absent, and each check
follows the write it races with (a URL is written before a generation is read; a rule's
evidence is counted before the URLs it kept are read), so that processes deciding at once
lose at worst a saving, never a page.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
import xxhash

from dedup.config import check_namespace
from dedup.errors import ServiceUnavailable
from dedup.url_rules import (
    CONFIDENCE,
    EXPLORE,
    MIN_SUPPORT,
    Rule,
    apply,
    explain,
    explores,
    holding_of,
    host_of,
)

log = logging.getLogger(__name__)

#: Pages a host's stored URLs are read in, when a rule is judged on all of them.
SCAN = 1000

#: Seconds a process takes a host without a holding rule at its word before it reads the
#: host's rules again (a request to it is sent without a read meanwhile: most hosts have
#: no rule, and a read a request cost the crawl a sixth of its pages a second). A host
#: that gains a rule is predicted for by this process that much later: a saving missed,
#: never a page, since a request sent is decided as any other.
REFRESH = 0.2

#: Seconds the claims of a host's rules before a change are kept (a process that read the
#: rules before still claims there, for at most :data:`REFRESH` seconds).
OLD_CLAIMS = 600

#: The screen of a batch of one host's links (``KEYS[1]``: the host's claims of its
#: holding rules; ``ARGV``: the host's key prefix, the host, then six fields a link: URL,
#: key, whether to record a prediction here (``1``: not explored, and the link, its rules
#: and its claimant all of this host), the held entry, the rules' texts a line each, the
#: link as a rule's set of recorded links keeps it).
#: Returns a string a link: empty (it claims its key: send it), else
#: ``claimant<TAB>here<TAB>against<TAB>state``: ``here`` whether the claimant is of this
#: host (its ``state`` read: its ``p:pages`` value, empty while it is not decided),
#: ``against`` whether a rule recorded here has evidence against it (send it again).
_SCREEN = r"""
local claims, p, host = KEYS[1], ARGV[1], ARGV[2]
local out = {}
for b = 3, #ARGV, 6 do
  local url, key, record, entry, rules = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4]
  local member = ARGV[b + 5]
  redis.call('HSETNX', claims, key, url)
  local claimant = redis.call('HGET', claims, key)
  if claimant == url then
    out[#out + 1] = ''
  else
    local netloc = string.lower(string.match(claimant, '^[^:/?#]+://([^/?#]*)') or '')
    local here, state, against = netloc == host, '', 0
    if here then
      state = redis.call('HGET', p .. ':pages', claimant) or ''
      if record == '1' and state ~= '' then
        for rule in string.gmatch(rules, '[^\n]+') do
          redis.call('SADD', p .. ':by:' .. rule, member)
          redis.call('HINCRBY', p .. ':saved', rule, 1)
          if tonumber(redis.call('HGET', p .. ':against', rule) or '0') > 0 then
            against = 1
          end
        end
      elseif record == '1' then
        redis.call('RPUSH', p .. ':held:' .. claimant, entry)
        redis.call('SADD', p .. ':waiting', claimant)
      end
    end
    out[#out + 1] = claimant .. '\t' .. (here and '1' or '0') .. '\t' .. against .. '\t' .. state
  end
end
return out
"""


@dataclass
class Held:
    """A link predicted to be the page of another URL (its ``claimant``): ``original_url``
    and ``original_id`` are the claimant's original once the claimant is decided (``None``
    while it is not), ``rules`` what took the link there, ``explore`` whether it is sent
    anyway to check them."""

    url: str
    claimant: str
    rules: list[Rule]
    depth: int = 0
    original_url: str | None = None
    original_id: str | None = None
    explore: bool = False
    carry: str = ""

    def sent(self) -> str:
        """The link as a list of links to send again keeps it (:func:`parse_sent`)."""
        return sent_entry(self.url, self.depth, self.carry)

    @property
    def decided(self) -> bool:
        return self.original_url is not None


@dataclass
class RuleRow:
    """One rule as the store keeps it (``simcrawl rules``, the report)."""

    rule: Rule
    support: int
    against: int
    saved: int
    holds: bool


@dataclass
class _Host:
    support: dict[str, int] = field(default_factory=dict)
    against: dict[str, int] = field(default_factory=dict)
    stored: str = ""  # the holding rules as the store last wrote them
    holding: list[Rule] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(r.text() for r in self.holding)


#: A link to send again: its URL, depth, and what its request carries (opaque here: the
#: caller's serialized request when it is not the spider's plain one, else "").
Link = tuple[str, int, str]


def sent_entry(url: str, depth: int, carry: str = "") -> str:
    return f"{url}\t{depth}\t{carry}"


def parse_sent(entry: str) -> Link:
    """A link :func:`sent_entry` wrote (a bare URL, or ``URL<TAB>depth``, as earlier
    versions kept them, too)."""
    url, _, rest = entry.partition("\t")
    depth, _, carry = rest.partition("\t")
    return url, int(depth) if depth.isdigit() else 0, carry


def _digest(text: str) -> str:
    return xxhash.xxh64_hexdigest(text.encode())


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisUrlRules:
    """A namespace's URL rules in Redis (see the module docstring).

    Args:
        client: Redis (or a Redis Cluster client).
        namespace: the index's key prefix.
        min_support, confidence: when a rule holds (:func:`dedup.url_rules.holding_of`).
        explore: the share of predictions sent anyway (:func:`dedup.url_rules.explores`).
        refresh: seconds a host seen without a holding rule is taken to have none
            (:meth:`unruled`; :data:`REFRESH`).
    """

    def __init__(self, client: Any, namespace: str, min_support: int = MIN_SUPPORT,
                 confidence: float = CONFIDENCE, explore: float = EXPLORE,
                 refresh: float = REFRESH) -> None:
        check_namespace(namespace)
        if min_support < 1:
            raise ValueError(f"a rule's support must be at least 1, got {min_support}")
        if not 0 < confidence <= 1:
            raise ValueError(f"a rule's confidence is a share in (0, 1], got {confidence}")
        if not 0 <= explore <= 1:
            raise ValueError(f"the exploration share is in [0, 1], got {explore}")
        self.client, self.namespace = client, namespace
        self.min_support, self.confidence, self.explore = min_support, confidence, explore
        self.refresh = refresh
        self._screen = client.register_script(_SCREEN)
        self._unruled: dict[str, float] = {}  # host -> until when it has no holding rule
        self._read: dict[str, tuple[float, _Host]] = {}  # host -> (when read, its rules)

    def unruled(self, url: str, lapsed: bool = False) -> bool:
        """Whether ``url``'s host had no holding rule when last read, less than
        ``refresh`` seconds ago (no I/O: a request to it is sent without asking); with
        ``lapsed``, however long ago (a request to it is sent while the caller looks
        again, :meth:`look`: the crawl never waits for a host that had no rule)."""
        until = self._unruled.get(host_of(url))
        return until is not None and (lapsed or time.monotonic() < until)

    def look(self, hosts: Iterable[str]) -> None:
        """Read the hosts' rules again (what :meth:`unruled` answers from).

        Raises:
            ServiceUnavailable: Redis failed.
        """
        self._hosts(hosts)

    # ------------------------------------------------------------------ keys
    def _p(self, host: str) -> str:
        return f"{self.namespace}:ur:{{{host}}}"

    def _shared(self, name: str) -> str:
        return f"{self.namespace}:ur:{name}"

    def _run(self, what: str, fill: Any) -> list[Any]:
        """One pipeline (plain commands: a cluster routes each by its key)."""
        try:
            pipe = self.client.pipeline(transaction=False)
            fill(pipe)
            return list(pipe.execute())
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis failed {what}: {exc}", service="Redis") from exc

    def _hosts(self, hosts: Iterable[str]) -> dict[str, _Host]:
        """Each host's counts and holding rules, read now."""
        names = sorted(set(hosts))
        replies = self._run("reading URL rules", lambda pipe: self._read_hosts(pipe, names)) \
            if names else []
        return self._parse_hosts(names, replies)

    def _read_hosts(self, pipe: Any, names: list[str]) -> None:
        for h in names:
            pipe.hgetall(self._p(h) + ":support")
            pipe.hgetall(self._p(h) + ":against")
            pipe.get(self._p(h) + ":holding")

    def _parse_hosts(self, names: list[str], replies: list[Any]) -> dict[str, _Host]:
        out = {}
        for i, h in enumerate(names):
            support, against, stored = replies[3 * i:3 * i + 3]
            host = _Host({_s(k): int(v) for k, v in support.items()},
                         {_s(k): int(v) for k, v in against.items()},
                         _s(stored) if stored is not None else "")
            host.holding = holding_of(h, host.support, host.against, self.min_support,
                                      self.confidence)
            out[h] = host
            now = time.monotonic()
            if len(self._read) > 100_000:
                self._read.clear()
            self._read[h] = (now, host)
            if host.holding or self.refresh <= 0:
                self._unruled.pop(h, None)
            else:
                if len(self._unruled) > 100_000:  # hosts seen long ago
                    self._unruled.clear()
                self._unruled[h] = now + self.refresh
        return out

    def _recent(self, hosts: Iterable[str]) -> dict[str, _Host]:
        """Each host's rules as read less than ``refresh`` seconds ago, else read now (a
        screen's view: a rule dropped meanwhile is caught when its prediction is
        recorded, :meth:`_record`, and the request is sent again)."""
        now, out, stale = time.monotonic(), {}, []
        for h in set(hosts):
            seen = self._read.get(h)
            if seen is not None and now - seen[0] < self.refresh:
                out[h] = seen[1]
            else:
                stale.append(h)
        out.update(self._hosts(stale))
        return out

    @staticmethod
    def _key(url: str, host: str, hosts: dict[str, _Host]) -> tuple[str, str, list[Rule]]:
        """A URL's key (``host`` its host), the host whose claims hold it (a mirror's
        links are claimed on the host it mirrors, keyed by that host's rules too) and the
        rules that took the URL there."""
        fired: list[Rule] = []
        key = apply(hosts[host].holding, url, fired)
        target = next((r.arg for r in fired if r.kind == "host_alias"), host)
        if target != host and target in hosts:
            key = apply(hosts[target].holding, key, fired)
        return key, target, fired

    # ------------------------------------------------------------------ screening
    def screen(self, links: Sequence[tuple[str, int] | Link]) -> list[Held | None]:
        """For each link (``(URL, depth)``, or with what its request carries, kept to send
        it again: :data:`Link`) about to be requested: ``None`` (send it), or
        the :class:`Held` it is predicted to be. A prediction that is not explored is
        recorded here: a decided one's saving is counted (the caller records its match),
        an undecided one waits for its claimant (:meth:`decided`, :meth:`release`).
        One round trip a host of the links (:data:`_SCREEN`): a batch costs little more
        than one link.

        Raises:
            ServiceUnavailable: Redis failed.
        """
        names = [host_of(link[0]) for link in links]
        hosts = self._recent(names)
        aliases = {r.arg for h in hosts.values() for r in h.holding if r.kind == "host_alias"}
        if aliases - set(hosts):
            hosts.update(self._recent(aliases - set(hosts)))
        out: list[Held | None] = [None] * len(links)
        by_target: dict[str, list[tuple[int, Held, str, bool]]] = {}
        for i, (link, host) in enumerate(zip(links, names)):
            if hosts[host].holding:
                u, d = link[0], link[1]
                key, target, rules = self._key(u, host, hosts)
                held = Held(u, "", rules, d, explore=explores(u, self.explore),
                            carry=link[2] if len(link) > 2 else "")  # type: ignore[misc]
                here = not held.explore and target == host \
                    and all(r.host == host for r in rules)
                by_target.setdefault(target, []).append((i, held, key, here))
        if not by_target:
            return out
        for target in by_target:
            if target in hosts and hosts[target].stored != hosts[target].text:
                self._regenerate(target, hosts[target])
        elsewhere: list[Held] = []  # predictions whose claimant or rules are another host's
        again: list[str] = []
        for target, group in by_target.items():
            args: list[str] = [self._p(target), target]
            for _, held, key, here in group:
                args += [held.url, key, "1" if here else "0", self._entry(held),
                         "\n".join(r.text() for r in held.rules), held.sent()]
            try:
                replies = self._screen(keys=[self._claims(target, hosts)], args=args)
            except redis.RedisError as exc:
                raise ServiceUnavailable(f"Redis failed screening links: {exc}",
                                         service="Redis") from exc
            for (i, held, _, here), reply in zip(group, replies):
                if not reply:
                    continue  # it claims its key: sent
                claimant, local, against, state = _s(reply).split("\t", 3)
                held.claimant = claimant
                out[i] = held
                if local == "1":
                    held.original_url, held.original_id = self._state_of(claimant, state) \
                        or (None, None)
                if local != "1" or (not here and not held.explore):
                    elsewhere.append(held)
                elif against == "1":
                    again.append(held.sent())
        if again:
            self._run("sending predicted copies again", lambda pipe: pipe.rpush(
                self._shared("resend"), *again))
        unread = [h for h in elsewhere if h.original_url is None]
        for held, status in zip(unread, self._status([h.claimant for h in unread])):
            if status is not None:
                held.original_url, held.original_id = status
        self._record([h for h in elsewhere if not h.explore])
        return out

    @staticmethod
    def _state_of(url: str, value: str) -> tuple[str, str] | None:
        """A decided URL's original (URL, page id) from its ``p:pages`` value: itself
        for an original; ``None`` for an empty value (not decided)."""
        if not value:
            return None
        kind, *rest = value.split("\t")
        return (url, rest[0]) if kind == "o" else (rest[0], rest[1])

    def _claims(self, host: str, hosts: dict[str, _Host]) -> str:
        return f"{self._p(host)}:claims:{_digest(hosts[host].text)}"

    def _regenerate(self, host: str, state: _Host) -> None:
        """The host's holding rules changed: write them, then claim the new keys of every
        URL the host has decided (originals first), then of the URLs that claimed a key
        under the rules before and are not decided yet (requests on their way: a link of
        their page that comes now is still theirs, not a second request). A URL decided
        meanwhile reads the new rules after it is written, so it is claimed by one of the
        two. The claims of the rules before expire (:data:`OLD_CLAIMS`)."""
        text = state.text
        self._run("writing URL rules", lambda pipe: pipe.set(self._p(host) + ":holding", text))
        before = f"{self._p(host)}:claims:{_digest(state.stored)}" if state.stored else None
        state.stored = text
        claims = f"{self._p(host)}:claims:{_digest(text)}"
        scanned = self._scan(host)
        decided = {u for u, _ in scanned}
        pending = [u for u in self._hscan(before, values=True) if u not in decided
                   and host_of(u) == host] if before else []
        urls = [u for u, v in scanned if v.startswith("o")] + \
            [u for u, v in scanned if not v.startswith("o")] + sorted(pending)
        for at in range(0, len(urls), SCAN):
            part = urls[at:at + SCAN]
            self._run("claiming stored URLs", lambda pipe, part=part: [
                pipe.hsetnx(claims, apply(state.holding, u), u) for u in part])
        if before:
            self._run("letting old claims expire", lambda pipe: pipe.expire(before, OLD_CLAIMS))

    def _scan(self, host: str) -> list[tuple[str, str]]:
        """The host's decided URLs with their ``p:pages`` values."""
        pairs = self._hscan(self._p(host) + ":pages")
        return list(zip(pairs[::2], pairs[1::2]))

    def _hscan(self, key: str, values: bool = False) -> list[str]:
        """A hash read in pages: its fields and values in turn, or its values alone."""
        try:
            out: list[str] = []
            for k, v in self.client.hscan_iter(key, count=SCAN):
                out += [_s(v)] if values else [_s(k), _s(v)]
            return out
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis failed reading {key}: {exc}",
                                     service="Redis") from exc

    def _status(self, urls: Sequence[str]) -> list[tuple[str, str] | None]:
        """Each URL's original (URL, page id) if it is decided: itself for an original."""
        replies = self._run("reading decided URLs", lambda pipe: [
            pipe.hget(self._p(host_of(u)) + ":pages", u) for u in urls])
        return [self._state_of(url, _s(value) if value is not None else "")
                for url, value in zip(urls, replies)]

    def _record(self, held: list[Held]) -> None:
        """Record predictions that are not sent: a decided one is counted as a saving
        (and its URL kept under each rule, to be sent again if one is dropped: the
        evidence against the rule is read after the URL is kept, in the same pipeline, so
        a rule dropped meanwhile is seen by one side or the other); an undecided one
        waits on its claimant."""
        if not held:
            return
        checks: list[tuple[Held, Rule]] = []

        def fill(pipe: Any) -> None:
            for h in held:
                if h.decided:
                    for r in h.rules:  # under the rule's host, where it is judged
                        pipe.sadd(f"{self._p(r.host)}:by:{r.text()}", h.sent())
                        pipe.hincrby(self._p(r.host) + ":saved", r.text(), 1)
                else:
                    cp = self._p(host_of(h.claimant))
                    pipe.rpush(f"{cp}:held:{h.claimant}", self._entry(h))
                    pipe.sadd(cp + ":waiting", h.claimant)
                    pipe.sadd(self._shared("hosts"), host_of(h.claimant))
            for h in held:
                for r in h.rules if h.decided else ():
                    pipe.hget(self._p(r.host) + ":against", r.text())
                    checks.append((h, r))

        replies = self._run("recording predicted copies", fill)
        replies = replies[len(replies) - len(checks):]
        again = {h.url: h for (h, _), v in zip(checks, replies) if v is not None and int(v) > 0}
        if again:
            self._run("sending predicted copies again", lambda pipe: pipe.rpush(
                self._shared("resend"), *[h.sent() for h in again.values()]))

    @staticmethod
    def _entry(h: Held) -> str:
        return f"{h.url}\t{h.depth}\t" + "|".join(r.whole() for r in h.rules) + f"\x1e{h.carry}"

    @staticmethod
    def _parse(entry: str) -> tuple[str, int, list[Rule], str]:
        url, depth, rest = entry.split("\t", 2)
        rules, _, carry = rest.partition("\x1e")  # none before this version
        return url, int(depth), [Rule.parse(part) for part in rules.split("|") if part], carry

    # ------------------------------------------------------------------ learning
    def decided(self, originals: Sequence[tuple[str, str]],
                copies: Sequence[tuple[str, str, str]]) -> list[Held]:
        """Pages stored: ``originals`` (URL, page id) and ``copies`` (URL, original URL,
        original id). The stored URLs judge the host's rules, the copies' pairs teach
        them, and the links held for these URLs are returned decided (to be recorded as
        copies), except those whose rules no longer hold, which are sent again.

        Raises:
            ServiceUnavailable: Redis failed.
        """
        if not originals and not copies:
            return []

        urls = [u for u, _ in originals] + [u for u, _, _ in copies]
        names = sorted({host_of(u) for u in urls})

        def write(pipe: Any) -> None:  # the URLs, the links held for them, their hosts
            for url, page_id in originals:
                pipe.hset(self._p(host_of(url)) + ":pages", url, f"o\t{page_id}")
            for url, original_url, original_id in copies:
                pipe.hset(self._p(host_of(url)) + ":pages", url,
                          f"c\t{original_url}\t{original_id}")
            for u in urls:
                key = f"{self._p(host_of(u))}:held:{u}"
                pipe.lrange(key, 0, -1)
                pipe.delete(key)
                pipe.srem(self._p(host_of(u)) + ":waiting", u)
            self._read_hosts(pipe, names)
            for h in names:
                pipe.smembers(self._p(h) + ":mirrors")

        replies = self._run("recording decided URLs", write)[len(urls):]
        held = {u: [_s(e) for e in replies[3 * n]] for n, u in enumerate(urls)}
        hosts = self._parse_hosts(names, replies[3 * len(urls):3 * len(urls) + 3 * len(names)])
        mirrors = {h: sorted(_s(m) for m in ms)
                   for h, ms in zip(names, replies[3 * len(urls) + 3 * len(names):]) if ms}
        if mirrors:
            self._judge_mirrors(originals, mirrors)
        pairs = [explain(url, original) or explain(original, url)
                 for url, original, _ in copies]  # either way: the two have one key
        new_rules = self._learn([r for rules in pairs for r in rules or ()])
        if new_rules or any(hosts[host_of(u)].support for u, _ in originals):
            self._judge(originals, hosts, new_rules)
            hosts = self._hosts(names)  # after the evidence of these pages
        elif any(pairs):
            hosts = self._hosts(names)  # the pairs' counts
        self._claim_decided(urls, hosts)
        resolved = {url: (url, page_id) for url, page_id in originals}
        resolved.update({url: (o, oid) for url, o, oid in copies})
        return self._resolve(resolved, held, hosts)

    def _learn(self, rules: list[Rule]) -> list[Rule]:
        """Count the pairs' rules; the rules seen for the first time are returned."""
        if not rules:
            return []

        def fill(pipe: Any) -> None:
            for r in rules:
                pipe.hincrby(self._p(r.host) + ":support", r.text(), 1)
            for h in {r.host for r in rules}:
                pipe.sadd(self._shared("hosts"), h)
            for r in rules:
                if r.kind == "host_alias":  # the host it names judges it too
                    pipe.sadd(self._p(r.arg) + ":mirrors", r.host)

        replies = self._run("counting URL rules' pairs", fill)
        return sorted({r for r, n in zip(rules, replies) if int(n) == 1}, key=str)

    def _judge_mirrors(self, originals: Sequence[tuple[str, str]],
                       mirrors: dict[str, list[str]]) -> None:
        """Judge the ``host_alias`` rules that name the originals' hosts (``mirrors``:
        host -> the hosts whose alias rules name it): an original whose path the mirror
        holds as an original of its own is evidence against the mirror's rule (the
        mirror's side judges it when the mirror's page comes second, :meth:`_judge`)."""
        checks = [(Rule(m, "host_alias", host_of(url)),
                   urlunsplit(urlsplit(url)._replace(netloc=m)))
                  for url, _ in originals for m in mirrors.get(host_of(url), ())]
        if not checks:
            return
        replies = self._run("judging mirror hosts' rules", lambda pipe: [
            pipe.hget(self._p(rule.host) + ":pages", mirrored) for rule, mirrored in checks])
        self.contradict(rule for (rule, _), value in zip(checks, replies)
                        if value is not None and _s(value).startswith("o"))

    def _judge(self, originals: Sequence[tuple[str, str]], hosts: dict[str, _Host],
               new_rules: list[Rule]) -> None:
        """Judge rules on stored originals: each known rule of a stored page's host on the
        page, and each new rule on every original of its host stored so far (a rule
        counted before it scans, a page written before it is judged: every pair is judged
        by one side). A rule that turns two originals into one URL, or one into another,
        gets evidence against it."""
        checks: list[tuple[Rule, str]] = []
        for url, _ in originals:
            host = host_of(url)
            for text in hosts[host].support:
                try:
                    checks.append((Rule.of(host, text), url))
                except ValueError:
                    continue
        for rule in new_rules:
            checks += [(rule, url) for url, value in self._scan(rule.host)
                       if value.startswith("o")]
        for at in range(0, len(checks), SCAN):
            part = checks[at:at + SCAN]

            def fill(pipe: Any, part: list[tuple[Rule, str]] = part) -> None:
                for rule, url in part:
                    image = apply([rule], url)
                    img = f"{self._p(rule.host)}:img:{rule.text()}"
                    pipe.hsetnx(img, image, url)
                    pipe.hget(img, image)
                    if rule.kind == "host_alias":  # the mirror's own page of the path
                        pipe.hget(self._p(rule.arg) + ":pages", image)
                    else:
                        pipe.hget(self._p(rule.host) + ":pages", image)

            replies = self._run("judging URL rules", fill)
            against = []
            for n, (rule, url) in enumerate(part):
                owner, other = replies[3 * n + 1], replies[3 * n + 2]
                image = apply([rule], url)
                if _s(owner) != url or (image != url and other is not None
                                        and _s(other).startswith("o")):
                    against.append(rule)
            self.contradict(against)

    def contradict(self, rules: Iterable[Rule]) -> int:
        """Evidence against ``rules`` (a page they would take for another): each holds no
        more, and the URLs it kept from being requested are sent again. Returns how many
        URLs are to be sent again."""
        rules = sorted(set(rules), key=str)
        if not rules:
            return 0
        counts = self._run("counting evidence against URL rules", lambda pipe: [
            pipe.hincrby(self._p(r.host) + ":against", r.text(), 1) for r in rules])
        first = [r for r, n in zip(rules, counts) if int(n) == 1]
        if not first:
            return 0
        replies = self._run("reading URLs kept by dropped rules", lambda pipe: [
            pipe.smembers(f"{self._p(r.host)}:by:{r.text()}") for r in first])
        urls = sorted({_s(u) for members in replies for u in members})  # links to send
        log.info("URL rules dropped (a page contradicts them): %s; %d requests they kept "
                 "are sent again", ", ".join(map(str, first)), len(urls))

        def fill(pipe: Any) -> None:
            if urls:
                pipe.rpush(self._shared("resend"), *[sent_entry(*parse_sent(u)) for u in urls])
            for r in first:
                pipe.delete(f"{self._p(r.host)}:by:{r.text()}")

        self._run("sending predicted copies again", fill)
        return len(urls)

    def _claim_decided(self, urls: list[str], hosts: dict[str, _Host]) -> None:
        ruled = [u for u in urls if host_of(u) in hosts and hosts[host_of(u)].holding]
        for host in {host_of(u) for u in ruled}:
            if hosts[host].stored != hosts[host].text:
                self._regenerate(host, hosts[host])  # claims every decided URL
        rest = [u for u in ruled if hosts[host_of(u)].stored == hosts[host_of(u)].text]
        if rest:
            self._run("claiming decided URLs", lambda pipe: [
                pipe.hsetnx(self._claims(host_of(u), hosts), apply(hosts[host_of(u)].holding, u),
                            u) for u in rest])

    def _resolve(self, resolved: dict[str, tuple[str, str]], held: dict[str, list[str]],
                 hosts: dict[str, _Host]) -> list[Held]:
        """The links ``held`` for the decided URLs (taken from their lists): decided now,
        when their rules still hold (recorded, as :meth:`_record` does), else sent again."""
        parsed = {u: [self._parse(e) for e in entries] for u, entries in held.items()}
        unread = {r.host for entries in parsed.values() for _, _, rules, _ in entries
                  for r in rules} - set(hosts)
        hosts = {**hosts, **self._hosts(unread)} if unread else hosts  # one read for all
        out, again = [], []
        for u, entries in parsed.items():
            for url, depth, rules, carry in entries:
                if all(r in hosts[r.host].holding for r in rules):
                    original_url, original_id = resolved[u]
                    out.append(Held(url, u, rules, depth, original_url, original_id,
                                    carry=carry))
                else:
                    again.append(sent_entry(url, depth, carry))
        if again:
            self._run("sending held links", lambda pipe: pipe.rpush(self._shared("resend"),
                                                                    *again))
        self._record(out)
        return out

    # ------------------------------------------------------------------ checks
    def check(self, url: str, claimant: str, rules: Sequence[Rule],
              copy_of: tuple[str | None, str | None] | None) -> bool | None:
        """An explored prediction's page is decided: ``copy_of`` is the original it copies
        (its URL and page id, either may be unknown; ``None``: it was stored as an
        original). Returns ``True`` (it is what its rules said), ``False`` (it is not: the
        rules are dropped) or ``None`` (its claimant is not decided yet: no judgement)."""
        status = self._status([claimant])[0]
        if status is None:
            return None
        if copy_of is not None:
            original_url, original_id = copy_of
            if (original_url is not None and original_url in (status[0], claimant)) \
                    or (original_id is not None and original_id == status[1]):
                return True
        self.contradict(rules)
        return False

    # ------------------------------------------------------------------ sending again
    def take_resend(self, count: int = 1000) -> list[Link]:
        """Links to request again (a rule that kept them was dropped), taken from the
        list: one process sends each."""
        replies = self._run("taking URLs to send again", lambda pipe: pipe.lpop(
            self._shared("resend"), count))
        return [parse_sent(_s(entry)) for entry in replies[0] or []]

    def _waiting(self) -> list[tuple[str, list[str]]]:
        """Each host (of ``ns:ur:hosts``) with the claimants its links are held for."""
        try:
            hosts = sorted(_s(h) for h in self.client.smembers(self._shared("hosts")))
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis failed reading held links: {exc}",
                                     service="Redis") from exc
        replies = self._run("reading held links", lambda pipe: [
            pipe.smembers(self._p(h) + ":waiting") for h in hosts]) if hosts else []
        return [(h, sorted(_s(m) for m in members))
                for h, members in zip(hosts, replies) if members]

    def waiting(self) -> int:
        """How many claimants have links held for them."""
        return sum(len(claimants) for _, claimants in self._waiting())

    def release(self) -> list[Link]:
        """Every held link whose claimant is not decided (the crawl went idle without it:
        its fetch failed, it was skipped or filtered), taken to be sent."""
        out = []
        for host, claimants in self._waiting():
            p = self._p(host)
            for claimant in claimants:
                key = f"{p}:held:{claimant}"
                replies = self._run("taking held links", lambda pipe, key=key, p=p,
                                    claimant=claimant: (pipe.lrange(key, 0, -1),
                                                        pipe.delete(key),
                                                        pipe.srem(p + ":waiting", claimant)))
                for entry in replies[0]:
                    url, depth, _, carry = self._parse(_s(entry))
                    out.append((url, depth, carry))
        return out

    # ------------------------------------------------------------------ listing
    def rows(self) -> list[RuleRow]:
        """Every rule of every host, with its counts (hosts in name order)."""
        try:
            hosts = sorted(_s(h) for h in self.client.smembers(self._shared("hosts")))
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis failed reading URL rules: {exc}",
                                     service="Redis") from exc
        state = self._hosts(hosts)
        saved = self._run("reading URL rules' savings", lambda pipe: [
            pipe.hgetall(self._p(h) + ":saved") for h in hosts])
        out = []
        for h, s in zip(hosts, saved):
            s = {_s(k): int(v) for k, v in s.items()}
            for text, n in sorted(state[h].support.items()):
                try:
                    rule = Rule.of(h, text)
                except ValueError:
                    continue
                out.append(RuleRow(rule, n, state[h].against.get(text, 0), s.get(text, 0),
                                   rule in state[h].holding))
        return out

    def clear(self) -> int:
        """Forget every rule and what they learned from (the namespace's URL rules start
        again); returns the keys removed."""
        try:
            keys = list(self.client.scan_iter(match=f"{self.namespace}:ur:*", count=1000))
            for at in range(0, len(keys), 500):
                for key in keys[at:at + 500]:
                    self.client.delete(key)  # one key a command: a cluster routes each
            return len(keys)
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis failed clearing URL rules: {exc}",
                                     service="Redis") from exc
