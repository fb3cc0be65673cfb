"""One activity's view of an outage (crawler.outage.Outage, shared by the decisions, the
writes and the shared frontier): said once when it starts, counted, said once more with
the count and the service when it ends, and given up on (once) past its time."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from twisted.internet.defer import Deferred

from crawler.outage import Outage
from dedup.errors import ServiceUnavailable

log = logging.getLogger("test.outage")


def test_an_outage_is_said_once_counted_and_ended_naming_the_service(
        caplog: pytest.LogCaptureFixture) -> None:
    outage = Outage("the shared frontier", 60, log)
    with caplog.at_level(logging.WARNING, logger="test.outage"):
        for _ in range(5):
            assert outage.failed(ConnectionError("refused"), "Redis")  # keep trying
        outage.answered("the shared frontier goes on")
        outage.answered("said only once")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert lines[0].startswith("the shared frontier failed; the crawl waits and retries for "
                               "up to 60 s (DEDUP_RETRY_SECONDS): refused")
    assert lines[1].startswith("Redis answers again after ")
    assert lines[1].endswith("(5 attempts failed); the shared frontier goes on")
    assert outage.since is None and outage.failures == 0


def test_the_service_named_is_the_one_that_failed(caplog: pytest.LogCaptureFixture) -> None:
    outage = Outage("writing pages", 60, log)
    with caplog.at_level(logging.WARNING, logger="test.outage"):
        outage.failed(ServiceUnavailable("down", service="MongoDB"), "Redis")
        outage.failed(ServiceUnavailable("down", service="Redis"), "Redis")
        outage.answered("written")
    assert caplog.records[-1].getMessage().startswith("MongoDB and Redis answer again")


def test_past_its_time_the_caller_gives_up_and_it_is_said_once(
        caplog: pytest.LogCaptureFixture) -> None:
    outage = Outage("deciding pages", 0.05, log)
    outage.failed(ConnectionError("x"), "Redis")
    time.sleep(0.1)
    assert not outage.failed(ConnectionError("x"), "Redis")
    with caplog.at_level(logging.ERROR, logger="test.outage"):
        outage.give_up(ConnectionError("x"), "pages not decided are lost")
        outage.give_up(ConnectionError("x"), "pages not decided are lost")
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0].startswith("Redis has failed for 0 s")


def test_during_an_outage_one_attempt_probes_and_the_others_wait_and_give_up_on_time(
        ) -> None:
    # A probe blocked in a client's timeout (a Deferred that never fires) holds nobody
    # past the outage's limit: the probe's caller and the attempt waiting on it both give
    # up once the outage has lasted it, and the waiting one made no attempt of its own.
    async def main() -> None:
        outage = Outage("deciding pages", 0.3, log, wait=asyncio.sleep)
        assert await outage.turn() is False  # no outage: every attempt goes
        outage.failed(ServiceUnavailable("down", service="MongoDB"), "MongoDB")
        assert await outage.turn() is True  # the probe
        waiting = asyncio.ensure_future(outage.turn())
        with pytest.raises(ServiceUnavailable, match="down"):
            await outage.awaited(Deferred())
        assert await waiting is None  # give up, without an attempt
        assert outage.lasted >= 0.3

    asyncio.run(main())


def test_when_the_probe_succeeds_the_waiting_attempts_go_on() -> None:
    async def main() -> None:
        outage = Outage("writing pages", 60, log, wait=asyncio.sleep)
        outage.failed(ServiceUnavailable("down", service="MongoDB"), "MongoDB")
        assert await outage.turn() is True
        waiting = [asyncio.ensure_future(outage.turn()) for _ in range(3)]
        await asyncio.sleep(0.05)
        assert not any(w.done() for w in waiting)  # one attempt at a time
        answer: Deferred = Deferred()
        answer.callback("written")
        assert await outage.awaited(answer) == "written"
        outage.answered("written")
        outage.probed()
        assert await asyncio.gather(*waiting) == [False, False, False]

    asyncio.run(main())


def test_once_the_crawl_gives_up_on_a_service_every_activity_gives_up_on_it_at_once(
        caplog: pytest.LogCaptureFixture) -> None:
    # The shared frontier gave up on a frozen Redis; the decisions met it only then and
    # waited their own DEDUP_RETRY_SECONDS (2 s more) before the crawl could stop.
    given_up: set[str] = set()
    frontier = Outage("the shared frontier", 0.05, log, gave_up=given_up.update,
                      abandoned=given_up)
    deciding = Outage("deciding pages", 60, log, abandoned=given_up)
    writing = Outage("writing pages", 60, log, abandoned=given_up)
    frontier.failed(ConnectionError("timeout"), "Redis")
    time.sleep(0.1)
    frontier.give_up(ConnectionError("timeout"), "links lost")
    assert given_up == {"Redis"}
    with caplog.at_level(logging.ERROR, logger="test.outage"):
        assert not deciding.failed(ConnectionError("timeout"), "Redis")  # no 60 s wait
        assert deciding.overdue and asyncio.run(deciding.turn()) is None
        deciding.give_up(ConnectionError("timeout"), "pages lost")
    assert "(the crawl gave up on it)" in caplog.records[-1].getMessage()
    # another service's outage keeps its own time
    assert writing.failed(ServiceUnavailable("down", service="MongoDB"), "MongoDB")
    assert not writing.overdue
