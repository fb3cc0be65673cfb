"""Registered originals: a content owner's texts (articles, novel chapters) loaded as
originals, so that the crawl drops pages that copy them and names the source.

Each file becomes a ``pages`` document (``url``: the file's ``file://`` URI; ``host``:
``registered``; ``source``: the name given), with its fingerprints (simhash and, for
Chinese text, the pinyin window codes) in ``fingerprints``, its simhash in the shared
index, its checksum in the exact-copy registry and its windows in the pinyin window
index. Registering the same file again changes nothing (and repairs the Redis entries if
a previous run stopped half-way).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import redis

from dedup.adapters.redis_registry import register_checksums
from dedup.config import DedupConfig
from dedup.decide import second_opinion
from dedup.files import SkipFile, read_document
from dedup.index import NearDuplicateIndex
from dedup.index.windows import WindowIndex
from dedup.page import Page
from dedup.reading import extraction
from dedup.pinyin import PinyinFingerprinter
from dedup.simhash import fingerprint
from dedup.store import PageRecords
from dedup.store.records import fingerprint_record, page_record

REGISTERED_HOST = "registered"


@dataclass
class RegisterResult:
    """What a registration did.

    Attributes:
        added: files registered now.
        unchanged: files registered before with the same text.
        changed: files registered before whose text differs now (kept as first
            registered: remove the page first to register the new text).
        skipped: ``(file, reason)`` of files not registered: no text, binary, too big, not a
            text or HTML document, unreadable.
    """

    added: int = 0
    unchanged: int = 0
    changed: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def register(files: Iterable[Path], source: str, pages: PageRecords, index: NearDuplicateIndex,
             windows: WindowIndex | None, client: redis.Redis, config: DedupConfig,
             batch: int = 200, progress: Callable[[int], None] | None = None
             ) -> RegisterResult:
    """Register ``files`` as originals of ``source`` (see the module docstring); pinyin
    windows (with ``config``'s ``DEDUP_PINYIN_*`` settings) when ``windows`` is given.

    Raises:
        ValueError: an empty source name.
        ServiceUnavailable: Redis or MongoDB failed (files registered so far stay
            registered; running the command again finishes the job).
    """
    if not source.strip():
        raise ValueError("the source name must not be empty")
    result = RegisterResult()
    fingerprinter = PinyinFingerprinter.from_config(config) if windows is not None else None
    pending: list[Path] = []
    for path in files:
        pending.append(path)
        if len(pending) >= batch:
            _register_batch(pending, source, pages, index, windows, client, config,
                            fingerprinter, result)
            if progress:
                progress(len(pending))
            pending = []
    if pending:
        _register_batch(pending, source, pages, index, windows, client, config, fingerprinter,
                        result)
        if progress:
            progress(len(pending))
    return result


def register_files(files: Iterable[Path], source: str, pages: PageRecords, client: redis.Redis,
                   config: DedupConfig, capacity: int | None = None,
                   progress: Callable[[int], None] | None = None) -> RegisterResult:
    """Register ``files`` as originals of ``source`` in the index of ``config.namespace``:
    opens (or plans, for ``capacity`` pages) the simhash index and the pinyin window index,
    keeps the index's layout in MongoDB, then runs :func:`register`. What ``simcrawl
    register`` and the web console's form both run.

    Raises:
        ValueError: an empty source name.
        IndexMismatchError: the existing index was built with other parameters.
        ServiceUnavailable: Redis or MongoDB failed.
    """
    from dedup.adapters.index import open_index, redis_store
    from dedup.adapters.redis_windows import open_window_index

    files = list(files)
    if not source.strip():
        raise ValueError("the source name must not be empty")
    pages.ensure_indexes()
    index = open_index(redis_store(client, config.namespace), k=config.max_distance,
                       capacity=capacity or config.capacity)
    windows, _ = open_window_index(config, client,
                                   capacity=capacity or max(100_000, len(files)))
    pages.save_layout(config.namespace, index.layout.describe())
    return register(files, source, pages, index, windows, client, config, progress=progress)


def _register_batch(paths: list[Path], source: str, pages: PageRecords,
                    index: NearDuplicateIndex, windows: WindowIndex | None,
                    client: redis.Redis, config: DedupConfig,
                    fingerprinter: PinyinFingerprinter | None, result: RegisterResult) -> None:
    rows = []
    for path in paths:
        try:
            text, method = read_document(path, extraction=extraction(config))
        except SkipFile as exc:
            result.skipped.append((str(path), str(exc)))
            continue
        except OSError as exc:
            result.skipped.append((str(path), f"unreadable: {exc.strerror or exc}"))
            continue
        fp = fingerprint(text, shingle=config.shingle, drop_numbers=config.drop_numbers,
                         min_tokens=config.min_tokens, cjk_ngram=config.cjk_ngram)
        if fp.tokens == 0:
            result.skipped.append((str(path), "no text"))
            continue
        verify = second_opinion(text, config.drop_numbers, config.min_tokens,
                                config.cjk_ngram) \
            if not fp.short and config.verify_distance >= 0 else None
        rows.append((path, Page(
            path.resolve().as_uri(), REGISTERED_HOST, fp.checksum_hex, fp.simhash, fp.short,
            fingerprinter.fingerprint(text) if fingerprinter is not None else None, verify,
            text=text, method=method, tokens=fp.tokens, title=path.stem,
            fetched_at=None)))  # never fetched: registered
    stored = pages.stored_urls(page.url for _, page in rows)
    docs, fps, index_rows = [], [], []
    for path, page in rows:
        if page.url in stored:
            page.page_id, checksum = stored[page.url]
            if checksum != page.checksum:
                result.changed.append(str(path))
                continue
            result.unchanged += 1
        else:
            result.added += 1
            docs.append(page_record(page, source=source,
                                      registered_at=dt.datetime.now(dt.timezone.utc)))
            fps.append(fingerprint_record(
                page, fingerprinter.describe() if fingerprinter is not None else None,
                source=source))
        index_rows.append(page)
    pages.save_pages(docs, fps)
    # Redis after MongoDB: every step below is idempotent, so a re-run repairs a half-done
    # registration.
    register_checksums(client, config.namespace,
                       [(page.checksum, page.page_id) for page in index_rows])
    long_rows = [page for page in index_rows if not page.short]
    if long_rows:
        owners = index.store.lookup([page.simhash for page in long_rows])
        index.add_many((page.simhash, page.page_id) for page, owner in zip(long_rows, owners)
                       if owner is None)
    if windows is not None:
        for page in index_rows:
            if page.pinyin is not None and page.pinyin.codes:
                windows.add(page.page_id, page.pinyin)
