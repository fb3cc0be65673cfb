"""Where the embedded MongoDB (SecantusDB) stops serving, and the check that says so before
a whole-store read starts rather than after minutes.

SecantusDB builds a query's whole result, every document decoded, before it sends the
first batch, and holds it until the cursor is drained. A verb that reads a collection
whole (``export``, ``report``, ``clusters``, ``rebuild-index``) therefore needs server
memory in proportion to the collection: :data:`READ_BYTES_PER_DOC`, measured by
``bench/bench_embedded_store.py`` on what a crawl stores. A real MongoDB streams a cursor
from its indexes and has no such limit; this check applies to SecantusDB only (its
``buildInfo`` says ``secantusVersion``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from dedup.setting_names import value

#: Server memory a whole read of a collection takes, bytes per document, as a crawl
#: stores them (pages with about 4,600 characters of text, fingerprints with their text
#: sketch, match records with the copy's text): ``bench/bench_embedded_store.py`` measured
#: 12.6-13.8, 1.5-1.7 and 14.2-18.0 KiB at 30,000-300,000 pages (2026-11-27), rounded up.
#: A collection not named costs :data:`OTHER_BYTES_PER_DOC`.
READ_BYTES_PER_DOC = {"pages": 14 * 1024, "fingerprints": 2 * 1024, "matches": 18 * 1024,
                      "excerpts": 18 * 1024}
OTHER_BYTES_PER_DOC = 4 * 1024

#: Server memory a page written holds until SecantusDB restarts (its index writes; with
#: its fingerprint and a third of a match record): the same benchmark, 3.0 KiB a page over
#: 200,000 pages written (10.0 over the first 30,000, while its cache fills).
WRITE_BYTES_PER_PAGE = 3 * 1024

#: The environment variable that caps the memory a whole read may take on the embedded
#: MongoDB (a size such as ``8GiB``; default: what the machine has available).
MEMORY_ENV = "SIMCRAWL_EMBEDDED_MEMORY"

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Parse ``"64GB"``, ``"512 MiB"``, ``"1000000"`` into bytes.

    >>> parse_size("8GiB"), parse_size("1.5 kb"), parse_size("300")
    (8589934592, 1500, 300)
    """
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r} (try 512MB or 8GiB)")
    number, unit = float(match.group(1)), (match.group(2) or "").lower()
    base = 1024 if "i" in unit else 1000
    power = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}[unit[:1] if unit[:1] != "b" else ""]
    return int(number * base ** power)


class StoreTooLarge(RuntimeError):
    """A whole read of the store would take more memory than the machine has (exit
    status 1: the work failed, before it started)."""


def available_memory() -> int:
    """Memory a whole read on the embedded MongoDB may take, in bytes: ``$SIMCRAWL_EMBEDDED_
    MEMORY`` when set, else what this machine can give a process now (``MemAvailable``),
    else its total.

    Raises:
        ValueError: ``$SIMCRAWL_EMBEDDED_MEMORY`` is not a size.
    """
    if value(MEMORY_ENV):
        try:
            return parse_size(value(MEMORY_ENV))
        except ValueError as exc:
            raise ValueError(f"{MEMORY_ENV}: {exc}") from None
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            fields = dict(line.split(":", 1) for line in info)
        return int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def read_memory(counts: dict[str, int]) -> int:
    """Server memory a whole read of each collection in ``counts`` (documents) takes on
    SecantusDB, one after another: the largest of them."""
    return max((n * READ_BYTES_PER_DOC.get(name, OTHER_BYTES_PER_DOC)
                for name, n in counts.items()), default=0)


def serves_pages(memory: int) -> int:
    """Pages whose whole read (``export pages``) ``memory`` bytes hold."""
    return memory // READ_BYTES_PER_DOC["pages"]


def embedded_serves(memory: int | None = None) -> int:
    """Pages a crawl on the embedded MongoDB can write and then read whole (``export
    pages``) while its server runs, within ``memory`` bytes (default
    :func:`available_memory`)."""
    have = available_memory() if memory is None else memory
    return have // (WRITE_BYTES_PER_PAGE + READ_BYTES_PER_DOC["pages"])


def check_whole_read(reads: Any, collections: Iterable[str], verb: str,
                     memory: int | None = None) -> None:
    """Refuse, before it starts, a whole read of ``collections`` of a database (its
    :class:`dedup.store.reads.StoreReads`) that
    the embedded server cannot hold in ``memory`` bytes (default: what this machine has
    available now). Nothing is checked on a real MongoDB.

    Raises:
        StoreTooLarge: the message names the collection, the memory it would take, the
            memory there is, how many pages that serves, and what to do.
    """
    from dedup.tables import human_bytes

    if not reads.is_embedded():
        return
    # the store's counts, read at once (a count reads the whole collection)
    counts = {name: reads.estimated(name) for name in collections}
    need = read_memory(counts)
    have = available_memory() if memory is None else memory
    if need <= have:
        return
    name = max(counts, key=lambda c: counts[c] * READ_BYTES_PER_DOC.get(c, OTHER_BYTES_PER_DOC))
    where = f"{MEMORY_ENV} allows" if value(MEMORY_ENV) else "this machine has available"
    raise StoreTooLarge(
        f"{verb}: the embedded MongoDB (SecantusDB) builds a query's whole result in memory "
        f"before answering: reading the {counts[name]:,} documents of '{reads.name}.{name}' "
        f"would take about {human_bytes(need)}, more than the {human_bytes(have)} "
        f"{where} (whole reads of about {serves_pages(have):,} pages fit). Use a real "
        "MongoDB (MONGO_URI; docker compose runs one): it streams the read.")
