"""The shared frontier while its Redis is down (a real redis-server killed and started
again on its port): links to queue and requests to settle wait in the process, in order,
and reach Redis once it answers, each once; nothing raises into Scrapy."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import scrapy
from scrapy.utils.test import get_crawler

from crawler.frontier import INFLIGHT_ID, FrontierWaits, SharedFrontier, frontier_keys
from crawler.scheduler import Scheduler
from crawler.spiders.site import SiteSpider
from crawler.wiring import parts_of
from dedup.errors import ServiceUnavailable
from dedup.adapters.servers.services import EmbeddedServer, connect_redis, cut_short

pytestmark = pytest.mark.integration


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[tuple[EmbeddedServer, EmbeddedServer]]:
    redis_server, mongo = EmbeddedServer("redis", tmp_path), EmbeddedServer("mongo", tmp_path)
    redis_server.start()
    mongo.start()
    yield redis_server, mongo
    redis_server.stop()
    mongo.stop()


def built_frontier(servers: tuple[EmbeddedServer, EmbeddedServer], namespace: str,
                   **settings: Any) -> tuple[Any, SiteSpider, SharedFrontier]:
    """A crawl's shared frontier on ``namespace``, not opened: (the crawler, its spider,
    the frontier)."""
    redis_server, mongo = servers
    crawler = get_crawler(SiteSpider, settings_dict={
        "REDIS_URL": redis_server.url, "MONGO_URI": mongo.url, "DEDUP_NAMESPACE": namespace,
        "DEDUP_DATABASE": namespace, "DEDUP_EXTRACT_WORKERS": 0, "SIMCRAWL_FRONTIER": "redis",
        "EXTENSIONS_BASE": {}, **settings})
    spider = SiteSpider(start_urls="https://a.example/")
    frontier = Scheduler.from_crawler(crawler)  # the crawl's shared frontier
    assert isinstance(frontier, SharedFrontier)
    return crawler, spider, frontier


def open_frontier(servers: tuple[EmbeddedServer, EmbeddedServer], namespace: str
                  ) -> tuple[Any, SiteSpider, SharedFrontier]:
    """A crawl's shared frontier on ``namespace``, open, its loops driven by hand: (the
    crawler, its spider, the frontier)."""
    crawler, spider, frontier = built_frontier(servers, namespace)
    frontier.open_on_redis(spider)  # what open does in a thread (no reactor runs here)
    frontier.start_loops()
    for loop in (frontier._recovery, frontier._catching_up):  # driven by hand here
        loop.stop()
    return crawler, spider, frontier


def test_what_the_frontier_sends_during_an_outage_waits_and_arrives_once(servers) -> None:  # type: ignore[no-untyped-def]
    redis_server, _ = servers
    crawler, spider, frontier = open_frontier(servers, "fo")
    keys = frontier_keys("fo")
    client = connect_redis(redis_server.url)
    links = [scrapy.Request(f"https://a.example/{n}", callback=spider.parse) for n in range(5)]
    try:
        assert frontier.enqueue_request(links[0])
        taken = frontier.next_request()
        assert taken.url == links[0].url and client.hlen(f"{keys['inflight']}:{frontier.owner}")
        port = redis_server.port or 0
        redis_server.kill()
        # the page's links and then its settlement, while Redis is down: nothing raises
        assert all(frontier.enqueue_request(r) for r in links[1:])
        frontier.settle([taken.meta[INFLIGHT_ID]])
        assert frontier.next_request() is None  # nothing can be taken: wait
        assert frontier.has_pending_requests()  # and never idle meanwhile
        assert len(frontier.waiting) == 4 and len(frontier.unsettled) == 1
        assert not frontier.catch_up()  # still down
        assert len(frontier.waiting) == 4 and len(frontier.unsettled) == 1  # none doubled
        redis_server.port = port
        redis_server.start()
        # the calls wait for a probe (a thread, one a second) to find Redis answering
        deadline = time.monotonic() + 30
        while not frontier.catch_up() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not frontier.waiting and not frontier.unsettled
        assert client.zcard(keys["queue"]) == 4  # each link queued once
        assert client.hlen(f"{keys['inflight']}:{frontier.owner}") == 0  # settled after them
        assert not frontier.enqueue_request(links[2])  # and seen once: a repeat is filtered
        assert crawler.stats.get_value("dedup/retries/frontier") >= 1
    finally:
        parts_of(crawler).close()


def test_a_request_taken_for_this_process_by_a_lost_reply_goes_back_to_the_queue(
        servers) -> None:  # type: ignore[no-untyped-def]
    # A take whose reply was lost (a timeout while a partition dropped it; the script
    # ran all the same, or late) records a request in flight for this process that it
    # never got: the shared crawl never ended (a chaos run on a cluster). Idle, the
    # process puts such a request back at its second look; one it holds stays.
    redis_server, _ = servers
    crawler, spider, frontier = open_frontier(servers, "lr")
    keys = frontier_keys("lr")
    inflight = f"{keys['inflight']}:{frontier.owner}"
    client = connect_redis(redis_server.url)
    try:
        for n in range(2):
            assert frontier.enqueue_request(
                scrapy.Request(f"https://a.example/{n}", callback=spider.parse))
        held = frontier.next_request()
        # the second take's reply is lost: the script ran, the process has nothing
        lost = frontier._pop(keys=[keys["queue"], inflight])
        assert lost is not None and client.hlen(inflight) == 2
        assert frontier.work_left()  # first look: in flight somewhere
        assert client.hlen(inflight) == 2 and client.zcard(keys["queue"]) == 0
        assert frontier.work_left()  # second look: put back, queued again
        assert client.hlen(inflight) == 1 and client.zcard(keys["queue"]) == 1
        assert crawler.stats.get_value("frontier/reclaimed") == 1
        again = frontier.next_request()
        assert again.url == "https://a.example/1" and held.url == "https://a.example/0"
        frontier.settle([held.meta[INFLIGHT_ID], again.meta[INFLIGHT_ID]])
        assert not frontier.work_left() and not frontier.reclaim_orphans()
    finally:
        parts_of(crawler).close()


def test_a_redis_that_hangs_holds_one_probe_not_every_call(servers) -> None:  # type: ignore[no-untyped-def]
    # A frozen server (as a partition that drops its packets) answers nothing: each call
    # would wait for the client's 5 s timeout, in the reactor's thread. After the first
    # one, the calls wait in the process while one probe at a time asks Redis, and the
    # crawl goes on when it answers. The call that timed out was run when the server
    # woke: its link is queued once, not lost (its dupefilter step done, the link was
    # found "seen" when offered again, and dropped, when the two were two calls).
    redis_server, _ = servers
    crawler, spider, frontier = open_frontier(servers, "hang")
    client = connect_redis(redis_server.url)
    links = [scrapy.Request(f"https://a.example/{n}", callback=spider.parse) for n in range(6)]
    pid = redis_server.pid
    assert pid
    try:
        assert frontier.enqueue_request(links[0])
        os.kill(pid, signal.SIGSTOP)
        try:
            assert frontier.enqueue_request(links[1])  # waits for the client's timeout
            assert frontier.outage.since is not None  # an outage, said once
            timed_out = crawler.stats.get_value("dedup/retries/frontier")
            for request in links[2:]:
                assert frontier.enqueue_request(request)
                assert frontier.next_request() is None
                assert frontier.has_pending_requests()
            # nor is the queue's length (the crawl record's counters, every few seconds):
            # unknown while Redis is out, where it held the reactor for 5 s each time
            with pytest.raises(FrontierWaits):
                len(frontier)
            # the calls were not sent: no more timeouts than the first and the probes
            assert len(frontier.waiting) == 5 and frontier.outage._probing
            assert crawler.stats.get_value("dedup/retries/frontier") == timed_out
        finally:
            os.kill(pid, signal.SIGCONT)
        deadline = time.monotonic() + 30
        while not frontier.catch_up() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert frontier.outage.since is None and not frontier.waiting
        assert client.zcard(frontier_keys("hang")["queue"]) == 6  # each link, once
        assert not frontier.enqueue_request(links[1])  # seen
    finally:
        parts_of(crawler).close()


def test_a_process_that_opens_while_redis_hangs_waits_for_it(servers) -> None:  # type: ignore[no-untyped-def]
    # A process started (by hand, or by an operator after a crash) while a partition cuts
    # Redis off met the outage in the frontier's opening and failed to start ("Timeout
    # reading from ..."), with tracebacks from its close: a chaos run had no process
    # crawling for 15 s. It waits as a crawling process does, and opens when Redis
    # answers; the links its repair offered meanwhile are queued then.
    redis_server, _ = servers
    crawler, spider, frontier = built_frontier(servers, "opening")
    pid = redis_server.pid
    assert pid
    opened: list[Any] = []
    os.kill(pid, signal.SIGSTOP)
    try:
        thread = threading.Thread(
            target=lambda: opened.append(frontier.open_on_redis(spider) or "open"))
        thread.start()
        time.sleep(7)  # past the client's 5 s timeout: the outage is on
        assert not opened and frontier.outage.since is not None
    finally:
        os.kill(pid, signal.SIGCONT)
    try:
        thread.join(timeout=30)
        assert opened == ["open"] and frontier.outage.since is None
        assert crawler.stats.get_value("dedup/retries/frontier") >= 1
        frontier.start_loops()
        for loop in (frontier._recovery, frontier._catching_up):
            loop.stop()
        assert frontier.enqueue_request(scrapy.Request("https://a.example/x",
                                                       callback=spider.parse))
        assert frontier.next_request().url == "https://a.example/x"
    finally:
        parts_of(crawler).close()


def test_a_process_that_cannot_reach_redis_to_open_gives_up_past_the_limit(
        servers) -> None:  # type: ignore[no-untyped-def]
    # DEDUP_RETRY_SECONDS bounds the wait at the start as during the crawl: then the
    # crawl does not start, with the service named (exit status 3), and its close, which
    # runs all the same, raises nothing.
    redis_server, _ = servers
    crawler, spider, frontier = built_frontier(servers, "noopen", DEDUP_RETRY_SECONDS=2)
    port = redis_server.port
    redis_server.kill()
    try:
        began = time.monotonic()
        with pytest.raises(ServiceUnavailable, match="Redis"):
            frontier.open_on_redis(spider)
        assert time.monotonic() - began < 10
        assert frontier.outage.gave_up and not frontier.is_open
        frontier.close("shutdown")  # nothing was taken: nothing to put back, no error
    finally:
        redis_server.port = port
        redis_server.start()
        parts_of(crawler).close()


def test_giving_up_on_a_redis_that_hangs_ends_the_calls_out_at_once(servers) -> None:  # type: ignore[no-untyped-def]
    # The calls out when a crawl gives up on a frozen Redis each waited the client's 5 s
    # in a thread of the reactor's pool, and the process's exit joins those threads. Cut
    # short, they fail at once, and a later call waits 1 s, not 5; the client works
    # again when the server does.
    redis_server, _ = servers
    client = connect_redis(redis_server.url)
    client.set("k", "v")
    pid = redis_server.pid
    assert pid
    ended: list[tuple[str, float]] = []

    def call() -> None:
        began = time.monotonic()
        try:
            client.get("k")
            ended.append(("answered", time.monotonic() - began))
        except Exception as exc:  # noqa: BLE001 - what the call met is the finding
            ended.append((type(exc).__name__, time.monotonic() - began))

    os.kill(pid, signal.SIGSTOP)
    try:
        calls = [threading.Thread(target=call) for _ in range(3)]
        for thread in calls:
            thread.start()
        time.sleep(0.5)  # the three are waiting for a reply
        cut_short(client, 1.0)
        for thread in calls:
            thread.join(timeout=10)
        assert [what for what, _ in ended] == ["ConnectionError"] * 3
        assert all(took < 4 for _, took in ended), ended  # not the client's 5 s
        call()
        assert ended[-1][0] == "TimeoutError" and ended[-1][1] < 4, ended
    finally:
        os.kill(pid, signal.SIGCONT)
    assert client.get("k") == b"v"
