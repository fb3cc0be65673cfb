"""Where the embedded MongoDB (SecantusDB) stops serving: the server memory a crawl's
writes hold and a whole-collection read takes, per document, against this machine's
memory (the limit) and a real MongoDB's (which streams a cursor and holds neither).

SecantusDB answers a query by building its whole result (every document decoded) before
the first batch goes out, and holds it until the cursor is drained; it also keeps what
inserts wrote to its indexes in memory until it restarts. Both grow with the store, so a
store past some size cannot be read whole (``export``, ``report``, ``clusters``,
``rebuild-index``) on a given machine. This benchmark stores what a crawl leaves (pages
with their text, fingerprints with their sketches, match records with their copy's text,
built from a real article by the crawl's own code), restarts the server (a store at rest,
as an operator's), reads each collection whole as those verbs do, and samples the
server's resident memory every 20 ms:

    python bench/bench_embedded_store.py [--docs 100000,300000] [--text-chars 4600]

It prints a table per size and collection (documents, time to the first batch, the
server memory the read took, per document), the write side (memory per page written,
held until a restart), how many pages this machine's memory serves, and one JSON line.
The per-document figures are the ones ``dedup.adapters.servers.embedded_limits`` uses to refuse a whole
read that cannot fit before it starts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dedup.config import DedupConfig
from dedup.reading import fingerprint_params, read_html
from dedup.adapters.servers.embedded_limits import READ_BYTES_PER_DOC, available_memory, embedded_serves
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo
from dedup.adapters.mongo import PageStore
from dedup.store.records import MatchRecord, fingerprint_record, page_record

#: One match record for this many pages stored (the development crawls drop about a
#: third of what they meet on sites with mirrors).
PAGES_PER_MATCH = 3
BATCH = 2000


def log(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def rss(pid: int) -> int:
    """The process's resident memory in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


@contextlib.contextmanager
def peak_memory(pid: int) -> Iterator[list[int]]:
    """The highest resident memory of ``pid`` while the ``with`` block runs, sampled every
    20 ms (read ``[0]`` after the block)."""
    peak, stop = [rss(pid)], threading.Event()

    def watch() -> None:
        while not stop.wait(0.02):
            peak[0] = max(peak[0], rss(pid))

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        stop.set()
        thread.join()
        peak[0] = max(peak[0], rss(pid))


def template(text_chars: int):  # type: ignore[no-untyped-def]
    """A page as the crawl reads it: the bundled real article, its text repeated or cut to
    ``text_chars`` characters (the development pages' mean main text is about 4,600)."""
    html = (ROOT / "crawler" / "examples" / "harbour-original.html").read_text("utf-8")
    page = read_html(html, "https://news.example/harbour", fingerprint_params(DedupConfig()))
    text = (page.text + "\n") * (text_chars // max(len(page.text), 1) + 1)
    return page, text[:text_chars]


def fill(store: PageStore, start: int, stop: int, text_chars: int) -> None:
    """Store pages ``start`` .. ``stop - 1`` with their fingerprints, and a match record
    for every :data:`PAGES_PER_MATCH`-th, as the crawl's pipeline writes them."""
    import dataclasses

    page, text = template(text_chars)
    for at in range(start, stop, BATCH):
        docs, fps, matches = [], [], []
        for i in range(at, min(at + BATCH, stop)):
            pid = f"{0x65f00000 + i:08x}{i:016x}"
            url = f"https://h{i % 997}.example/articles/{i}"
            one = dataclasses.replace(page, page_id=pid, url=url, host=f"h{i % 997}.example",
                                      text=text, simhash=(page.simhash * (i + 1)) % 2**64,
                                      checksum=f"{i:032x}")
            docs.append(page_record(one, crawl_id="bench", status=200, depth=2))
            fps.append(fingerprint_record(one))
            if i % PAGES_PER_MATCH == 0:
                matches.append(MatchRecord(url=f"https://mirror{i % 89}.example/{i}",
                                           host=f"mirror{i % 89}.example", original_id=pid,
                                           original_url=url, original_host=one.host, distance=2,
                                           kind="simhash", containment=0.93,
                                           text=text).row(crawl_id="bench", text_cap=10**6))
        store.save_pages(docs, fps)
        store.save_matches(matches)


def read_whole(db, name: str, pid: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Read collection ``name`` whole in one cursor, as the whole-store verbs do."""
    before = rss(pid)
    started = time.monotonic()
    with peak_memory(pid) as peak:
        cursor = db[name].find({}, batch_size=1000)
        first = next(cursor, None)
        to_first = time.monotonic() - started
        count = (first is not None) + sum(1 for _ in cursor)
    return {"docs": count, "first_batch_s": to_first, "seconds": time.monotonic() - started,
            "held_bytes": peak[0] - before, "per_doc": (peak[0] - before) / max(count, 1)}


def lookups(db) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Seconds of what every store verb asks before it reads (which database holds a
    crawl, and how large it is), which must not read the store whole."""
    from crawler.console.options import holds_crawl, require_crawl
    from dedup.adapters.mongo.reads import MongoReads

    out = {}
    reads = MongoReads(db)
    for name, ask in (("sizes", reads.sizes),
                      ("holds_crawl", lambda: holds_crawl(reads)),
                      ("require_crawl", lambda: require_crawl(reads)),
                      ("estimated_count", lambda: db.pages.estimated_document_count())):
        started = time.monotonic()
        ask()
        out[name] = time.monotonic() - started
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", default="100000,300000",
                        help="store sizes in pages, comma-separated, ascending")
    parser.add_argument("--text-chars", type=int, default=4600,
                        help="characters of main text a page (the development mean)")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.docs.split(","))
    print(f"cores: {os.cpu_count()}; memory available now: {available_memory() / 2**30:.1f} GiB")
    rows, writes, asked = [], [], []  # type: ignore[var-annotated]
    with tempfile.TemporaryDirectory(prefix="simcrawl-embedded-") as tmp:
        folder = Path(tmp)
        done = 0
        for size in sizes:
            svc = EmbeddedServices(folder, redis=False).start()
            try:
                pid = svc.servers["mongo"].pid or 0
                store = PageStore(connect_mongo(svc.mongo_uri), "bench")
                store.ensure_indexes()  # as the crawl's pipeline does
                before, started = rss(pid), time.monotonic()
                fill(store, done, size, args.text_chars)
                writes.append({"pages": size - done, "seconds": time.monotonic() - started,
                               "per_page": (rss(pid) - before) / (size - done)})
                log(f"{size:,} pages stored in total")
                done = size
            finally:
                svc.stop()
            for name in ("fingerprints", "matches", "pages"):
                # each read on a server just started on the store at rest: the memory it
                # takes is not hidden by what an earlier read freed
                svc = EmbeddedServices(folder, redis=False).start()
                try:
                    pid = svc.servers["mongo"].pid or 0
                    db = connect_mongo(svc.mongo_uri, op_timeout=None)["bench"]
                    row = read_whole(db, name, pid)
                    rows.append({"pages": size, "collection": name, **row})
                    if name == "pages":
                        asked.append({"pages": size, **lookups(db)})
                    log(f"{size:,} pages: {name} read whole")
                finally:
                    svc.stop()

    print("\nA whole read on SecantusDB (one cursor, batches of 1,000; server memory "
          "sampled every 20 ms)\n")
    print("| pages stored | collection | documents | first batch | whole read | "
          "server memory taken | per document | limit used by simcrawl |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['pages']:,} | {r['collection']} | {r['docs']:,} | "
              f"{r['first_batch_s']:.1f} s | {r['seconds']:.1f} s | "
              f"{r['held_bytes'] / 2**20:,.0f} MiB | {r['per_doc'] / 1024:.2f} KiB | "
              f"{READ_BYTES_PER_DOC[r['collection']] / 1024:.2f} KiB |")
    print("\nWrites (a page, its fingerprint and a third of a match record), memory the "
          "server holds until it restarts\n")
    print("| pages written | seconds | pages/s | server memory per page |")
    print("|---:|---:|---:|---:|")
    for w in writes:
        print(f"| {w['pages']:,} | {w['seconds']:.1f} | {w['pages'] / w['seconds']:,.0f} | "
              f"{w['per_page'] / 1024:.2f} KiB |")
    print("\nWhat the verbs ask first (seconds)\n")
    print("| pages stored | the store's sizes | holds a crawl? | require a crawl | "
          "estimated count (a scan) |")
    print("|---:|---:|---:|---:|---:|")
    for a in asked:
        print(f"| {a['pages']:,} | {a['sizes']:.3f} | {a['holds_crawl']:.3f} | "
              f"{a['require_crawl']:.3f} | {a['estimated_count']:.3f} |")
    largest = max(r["pages"] for r in rows)
    pages = next(r for r in rows if r["pages"] == largest and r["collection"] == "pages")
    serves = int(available_memory() / (pages["per_doc"] + writes[-1]["per_page"]))
    print(f"\nA crawl's pages written ({writes[-1]['per_page'] / 1024:.2f} KiB each, held) "
          f"and read whole ({pages['per_doc'] / 1024:.2f} KiB each): this machine's "
          f"{available_memory() / 2**30:.1f} GiB available serve about {serves:,} pages; "
          f"simcrawl's limits say {embedded_serves():,}. A real MongoDB streams a cursor "
          "from its indexes and holds neither.")
    print(json.dumps({"reads": rows, "writes": writes, "lookups": asked,
                      "serves_pages": serves}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
