"""A whole-store verb on the embedded MongoDB refuses, before it reads anything, a store it
cannot hold in memory, saying where the embedded server stops serving; on a store that
fits it works as before. SecantusDB builds a query's whole result before its first batch,
so without the check a store too large for the machine failed after minutes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dedup.adapters.servers.embedded_limits import (
    READ_BYTES_PER_DOC,
    StoreTooLarge,
    check_whole_read,
)
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo
from dedup.adapters.mongo.reads import MongoReads

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
PAGES = 200


def verb(data: Path, uri: str, redis_url: str, *args: str, memory: str | None = None
         ) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    env = {**os.environ, "MONGO_URI": uri, "REDIS_URL": redis_url, "SIMCRAWL_DATA": str(data)}
    env.pop("SIMCRAWL_EMBEDDED_MEMORY", None)
    if memory:
        env["SIMCRAWL_EMBEDDED_MEMORY"] = memory
    return subprocess.run([sys.executable, "-m", "crawler.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_whole_store_verbs_refuse_a_store_the_embedded_server_cannot_hold(tmp_path: Path) -> None:
    with EmbeddedServices(tmp_path / "data") as services:
        uri, redis_url = services.mongo_uri or "", services.redis_url or ""
        db = connect_mongo(uri)["simcrawl"]
        db.pages.insert_many([{"url": f"http://site.test/{i}", "host": "site.test",
                               "text": "words " * 800} for i in range(PAGES)])
        db.fingerprints.insert_many([{"_id": p["_id"], "simhash": i, "short": False}
                                     for i, p in enumerate(db.pages.find({}, {"_id": 1}))])
        db.matches.insert_one({"url": "http://copy.test/0", "host": "copy.test",
                               "original_url": "http://site.test/0", "kind": "exact"})
        assert MongoReads(db).is_embedded()
        # a cap one byte short of what the verb's heaviest whole read takes
        out = tmp_path / "pages.jsonl"
        for heaviest, args in (("pages", ("export", "pages", "--format", "jsonl", "-o", str(out))),
                               ("pages", ("report", "-o", str(tmp_path / "report"))),
                               ("pages", ("clusters",)), ("pages", ("rebuild-index",)),
                               ("fingerprints", ("calibrate",))):
            cap = str(PAGES * READ_BYTES_PER_DOC[heaviest] - 1)
            started = time.monotonic()
            refused = verb(tmp_path / "data", uri, redis_url, *args, memory=cap)
            assert refused.returncode == 1, (args, refused.stderr)
            said = refused.stderr.strip().splitlines()[-1]
            assert f"simcrawl {args[0]}: the embedded MongoDB (SecantusDB)" in said, said
            assert "SIMCRAWL_EMBEDDED_MEMORY allows" in said and "Use a real MongoDB" in said
            assert time.monotonic() - started < 60
        assert not out.exists()  # refused before anything was written
        assert not (tmp_path / "report").exists()
        # the same verbs on a store that fits
        done = verb(tmp_path / "data", uri, redis_url, "export", "pages", "--format", "jsonl",
                    "-o", str(out), memory=str(PAGES * READ_BYTES_PER_DOC["pages"] + 1))
        assert done.returncode == 0, done.stderr
        assert len(out.read_text().splitlines()) == PAGES
        assert verb(tmp_path / "data", uri, redis_url, "report", "-o",
                    str(tmp_path / "report")).returncode == 0


def test_a_bad_memory_cap_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    with EmbeddedServices(tmp_path / "data", redis=False) as services:
        db = connect_mongo(services.mongo_uri or "")["simcrawl"]
        db.pages.insert_one({"url": "http://site.test/", "host": "site.test"})
        monkeypatch.setenv("SIMCRAWL_EMBEDDED_MEMORY", "lots")
        with pytest.raises(ValueError, match="SIMCRAWL_EMBEDDED_MEMORY: not a size"):
            check_whole_read(MongoReads(db), ("pages",), "simcrawl export")
        # the command says it in one line, with the usage error's exit status
        said = verb(tmp_path / "data", services.mongo_uri or "", "", "report", "-o",
                    str(tmp_path / "report"), memory="lots")
        assert said.returncode == 2, said.stderr
        assert said.stderr.strip().splitlines()[-1].startswith(
            "error: SIMCRAWL_EMBEDDED_MEMORY: not a size") and "Traceback" not in said.stderr
        # a small cap is said in the units that show it
        monkeypatch.setenv("SIMCRAWL_EMBEDDED_MEMORY", "1000")
        with pytest.raises(StoreTooLarge, match=r"more than the 1\.0 KB"):
            check_whole_read(MongoReads(db), ("pages",), "simcrawl export")


def test_the_store_keeps_its_sizes_so_they_are_read_at_once(tmp_path: Path) -> None:
    """The whole-store verbs and the choice of database read the collections' sizes from
    one document, kept by every write: a count on SecantusDB reads the whole collection
    (1 s a 100,000 pages), and so does a lookup no index serves."""
    from bson import ObjectId

    from dedup.adapters.mongo import PageStore, stored_sizes
    from dedup.store.records import MatchRecord, fingerprint_row

    with EmbeddedServices(tmp_path / "data", redis=False) as services:
        client = connect_mongo(services.mongo_uri or "")
        store = PageStore(client, "sized")
        store.ensure_indexes()  # a new store: counted from its first write
        ids = [str(ObjectId()) for _ in range(5)]
        pages = [{"_id": i, "url": f"http://s.test/{n}", "host": "s.test"} for n, i in
                 enumerate(ids)]
        pages[0]["source"] = "novels"
        fps = [fingerprint_row(i, n, checksum=f"{n:032x}", tokens=50, short=False,
                               algorithm="test") for n, i in enumerate(ids)]
        assert store.save_pages(pages, fps) == 5
        assert store.save_pages(pages[:2], fps[:2]) == 0  # stored already: not counted
        copies = [MatchRecord(url=f"http://c.test/{n}", host="c.test", original_id=ids[1],
                              original_url=pages[1]["url"], original_host="s.test", distance=1,
                              kind="simhash").row(crawl_id=None) for n in range(3)]
        store.save_matches(copies)
        store.save_matches(copies[:1])  # seen again: one record per URL
        assert store.sizes() == {"pages": 5, "registered": 1, "fingerprints": 5, "matches": 3}
        store.forget_copies(["http://c.test/2"])
        store.remove_page(ids[0])
        store.forget_pages([ids[1]])  # and the two records naming it
        counted = {"pages": 3, "registered": 0, "fingerprints": 3, "matches": 0}
        assert store.sizes() == counted
        db = client["sized"]
        assert {n: db[n].count_documents({}) for n in ("pages", "fingerprints", "matches")} \
            == {k: v for k, v in counted.items() if k != "registered"}
        # a crawl keeps them until its record is written, every few seconds and at its end
        lazy = PageStore(client, "sized", lazy_sizes=True)
        lazy.save_pages([{"_id": str(ObjectId()), "url": "http://s.test/late", "host": "s.test"}])
        assert store.sizes()["pages"] == 3
        lazy.save_crawl("c1", {"pid": 1})
        assert store.sizes()["pages"] == 4
        # a store not counted from its start is counted by reading it (rebuild-index's audit)
        other = client["older"]
        other.pages.insert_many([{"url": f"http://o.test/{n}"} for n in range(4)])
        assert stored_sizes(other) is None
        PageStore(client, "older").audit()
        assert stored_sizes(other) == {"pages": 4, "registered": 0, "fingerprints": 0,
                                       "matches": 0, "excerpts": 0}
