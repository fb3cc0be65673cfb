"""Command line: ``python -m dedup {scan,fingerprint,find-all,plan} ...``.

Run ``python -m dedup --help`` or ``python -m dedup COMMAND --help`` for the options.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from . import batch, tables
from .config import DEFAULT_MAX_DISTANCE
from .errors import ServiceUnavailable, redact
from .files import MAX_BYTES, SkipFile, iter_files, read_document
from .services import DataDirError, stop_on_signals
from .simhash import DEFAULT_DROP_NUMBERS, DEFAULT_MIN_TOKENS, DEFAULT_SHINGLE, KERNEL, fingerprint

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)


class InputError(Exception):
    """Bad input that the user must fix; printed without a traceback."""


def parse_size(text: str) -> int:
    """Parse ``"64GB"``, ``"512 MiB"``, ``"1000000"`` into bytes."""
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (try 512MB or 8GiB)")
    number, unit = float(match.group(1)), (match.group(2) or "").lower()
    base = 1024 if "i" in unit else 1000
    power = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}[unit[:1] if unit[:1] != "b" else ""]
    return int(number * base ** power)


def parse_fingerprint(token: str) -> int:
    """Parse one fingerprint: 16 hex digits (optionally ``0x``-prefixed) or a decimal."""
    token = token.strip()
    if re.fullmatch(r"(0x)?[0-9a-fA-F]{16}", token):
        return int(token, 16)
    if token.lower().startswith("0x"):
        value = int(token, 16) if re.fullmatch(r"0x[0-9a-fA-F]{1,16}", token, re.IGNORECASE) else -1
    elif token.isdigit():
        value = int(token)
    else:
        raise ValueError("expected 16 hex digits or a decimal integer")
    if not 0 <= value < 1 << 64:
        raise ValueError("outside the unsigned 64-bit range")
    return value


def read_fingerprints(stream: TextIO, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Read one fingerprint per line (blank lines and ``#`` comments skipped).

    Returns:
        ``(fingerprints, line_numbers)`` as ``uint64`` and ``int64`` arrays.

    Raises:
        InputError: naming the file and line of the first bad value.
    """
    values: list[int] = []
    lines: list[int] = []
    for lineno, line in enumerate(stream, 1):
        token = line.split("#", 1)[0].strip()
        if not token:
            continue
        try:
            values.append(parse_fingerprint(token))
        except ValueError as exc:
            raise InputError(f"{name}:{lineno}: bad fingerprint {token[:40]!r}: {exc}") from None
        lines.append(lineno)
    return np.array(values, dtype=np.uint64), np.array(lines, dtype=np.int64)


def _iter_files(paths: list[Path]) -> Iterator[Path]:
    try:
        yield from iter_files(paths)
    except FileNotFoundError as exc:
        raise InputError(str(exc)) from None


# ----------------------------------------------------------------------------- commands

def cmd_scan(args: argparse.Namespace) -> int:
    paths = args.paths or [EXAMPLES]
    files = list(_iter_files(paths))
    if not files:
        raise InputError("no files to scan")
    started = time.perf_counter()
    rows = []
    skipped: list[tuple[Path, str]] = []
    for path, text, method in _documents(files, args.max_size, skipped):
        fp = fingerprint(text, shingle=args.shingle, drop_numbers=args.drop_numbers,
                         min_tokens=args.min_tokens)
        rows.append((path, method, fp))
    simhashes = np.array([fp.simhash for _, _, fp in rows], dtype=np.uint64)
    pairs = batch.find_all(simhashes, args.k)
    elapsed = time.perf_counter() - started
    by_checksum: dict[int, int] = {}
    out = sys.stdout
    print(f"{len(rows)} documents fingerprinted in {elapsed:.2f} s (kernel: {KERNEL})"
          + (f"; {len(skipped)} files skipped" if skipped else "") + "\n", file=out)
    for path, reason in skipped:
        print(f"skipped ({reason}): {path}", file=out)
    if skipped:
        print(file=out)
    print(f"{'simhash':<16}  {'tokens':>7}  {'text from':<11}  file", file=out)
    for path, method, fp in rows:
        note = "  (short: checksum only)" if fp.short else ""
        print(f"{fp.hex}  {fp.tokens:>7}  {method:<11}  {path}{note}", file=out)
    print(file=out)
    found = 0
    for i, (_, _, fp) in enumerate(rows):
        first = by_checksum.setdefault(fp.checksum, i)
        if first != i:
            found += 1
            print(f"exact duplicate   {rows[i][0]}  =  {rows[first][0]}", file=out)
    for i, j, dist in pairs:
        fi, fj = rows[i][2], rows[j][2]
        if fi.checksum == fj.checksum:
            continue
        if fi.short or fj.short:
            continue  # a short text is never a near duplicate on simhash alone
        found += 1
        print(f"near duplicate    {rows[j][0]}  ~  {rows[i][0]}  (distance {dist})", file=out)
    if not found:
        print("no duplicates found", file=out)
    return 0


def _documents(files: list[Path], max_mb: float, skipped: list[tuple[Path, str]]
               ) -> Iterator[tuple[Path, str, str]]:
    """``(path, text, method)`` of each file that is a document; the others go to
    ``skipped`` with their reason (binary, too big, not text, unreadable)."""
    for path in files:
        try:
            text, method = read_document(path, int(max_mb * 1e6))
        except SkipFile as exc:
            skipped.append((path, str(exc)))
            continue
        except OSError as exc:
            skipped.append((path, f"unreadable: {exc.strerror or exc}"))
            continue
        yield path, text, method


def cmd_fingerprint(args: argparse.Namespace) -> int:
    skipped: list[tuple[Path, str]] = []
    for path, text, method in _documents(list(_iter_files(args.paths)), args.max_size,
                                         skipped):
        fp = fingerprint(text, shingle=args.shingle, drop_numbers=args.drop_numbers,
                         min_tokens=args.min_tokens)
        print(json.dumps({"file": str(path), "simhash": fp.hex, "checksum": fp.checksum_hex,
                          "tokens": fp.tokens, "features": fp.features, "short": fp.short,
                          "text_from": method}, ensure_ascii=False))
    for path, reason in skipped:  # one JSON line each too, so nothing is silently lost
        print(json.dumps({"file": str(path), "skipped": reason}, ensure_ascii=False))
    return 0


def cmd_pinyin_reference(args: argparse.Namespace) -> int:
    from .pinyin import Reference

    files = list(_iter_files(args.paths))
    if not files:
        raise InputError("no files to read")
    try:
        skipped: list[tuple[Path, str]] = []
        ref = Reference.from_texts((text for _, text, _ in _documents(files, 16, skipped)),
                                   source=args.source or ", ".join(map(str, args.paths)))
    except ValueError as exc:
        raise InputError(str(exc)) from None
    out = args.output
    ref.save(out)
    top = " ".join(f"{k}={v:.3f}" for k, v in sorted(ref.frequency.items(),
                                                       key=lambda kv: -kv[1])[:8])
    print(f"{len(files) - len(skipped)} files, {ref.characters:,} Han characters; most "
          f"common initials: {top}\nwritten to {out}")
    for path, reason in skipped:
        print(f"  skipped ({reason}): {path}")
    return 0


def cmd_find_all(args: argparse.Namespace) -> int:
    if args.input == "-":
        values, lines = read_fingerprints(sys.stdin, "<stdin>")
    else:
        try:
            with open(args.input, encoding="utf-8", errors="replace") as fh:
                values, lines = read_fingerprints(fh, args.input)
        except OSError as exc:
            raise InputError(f"{args.input}: {exc.strerror}") from None
    started = time.perf_counter()
    if args.clusters:
        groups = batch.clusters(values, args.k)
        for group in groups:
            print(json.dumps({"size": len(group), "lines": [int(lines[i]) for i in group],
                              "fingerprints": [f"{int(values[i]):016x}" for i in group]}))
        count = len(groups)
        what = "clusters"
    else:
        pairs = batch.find_all(values, args.k)
        for i, j, dist in pairs:
            print(json.dumps({"a": f"{int(values[i]):016x}", "b": f"{int(values[j]):016x}",
                              "distance": int(dist), "lines": [int(lines[i]), int(lines[j])]}))
        count = len(pairs)
        what = "pairs"
    print(f"{len(values):,} fingerprints, {count:,} {what} within k = {args.k} "
          f"in {time.perf_counter() - started:.2f} s", file=sys.stderr)
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    chosen, plans = tables.plan(args.docs, args.k, args.memory, args.bytes_per_entry,
                                args.max_tables)
    print(tables.format_plans(chosen, plans, args.docs))
    return 0


# ------------------------------------------------------------------------------ parser

# ------------------------------------------------------------------ services commands
def _services(args: argparse.Namespace, op_timeout: float | None = 60.0
              ) -> tuple[Any, Any, Any]:
    """Connect to Redis and MongoDB (or start the embedded servers): returns
    ``(redis client, page store, embedded services or None)``."""
    from .services import connect_mongo, connect_redis, resolve
    from .store import PageStore

    redis_url, mongo_uri, services = resolve(args.redis_url, args.mongo_uri, args.data_dir)
    try:
        redis_client = connect_redis(redis_url)
        pages = PageStore(connect_mongo(mongo_uri, op_timeout=op_timeout), args.database,
                          redact(mongo_uri))
    except BaseException:
        if services is not None:
            services.stop()
        raise
    return redis_client, pages, services


def _rebuild_windows(redis_client: Any, namespace: str, pages: Any) -> tuple[int, int]:
    """Reload the registered originals' pinyin windows; ``(loaded, skipped)`` (skipped:
    computed with parameters other than the first original's)."""
    from .index.windows import RedisWindowStore, WindowIndex
    from .pinyin import PinyinFingerprint

    index: WindowIndex | None = None
    loaded = skipped = 0
    for page_id, codes, params in pages.iter_pinyin():
        if index is None:
            index = WindowIndex(RedisWindowStore(redis_client, namespace), params)
        if params != index.params:
            skipped += 1
            continue
        loaded += index.add(page_id, PinyinFingerprint(codes))
    return loaded, skipped


def cmd_rebuild_index(args: argparse.Namespace) -> int:
    from .registry import register_checksums
    from .index import IndexLayout, NearDuplicateIndex, RedisStore
    from .progress import Progress

    redis_client, pages, services = _services(args, op_timeout=None)  # one long scan
    try:
        store = RedisStore(redis_client, args.namespace)
        total = pages.estimated_fingerprints()
        old = store.read_layout() or pages.load_layout(args.namespace)
        if old is not None and args.capacity is None and args.k is None:
            layout = IndexLayout.from_description(old)  # the same index again
        else:
            previous = IndexLayout.from_description(old) if old is not None else None
            capacity = args.capacity or max(total, previous.capacity if previous else 1)
            k = args.k if args.k is not None else (previous.k if previous
                                                   else DEFAULT_MAX_DISTANCE)
            layout = IndexLayout.plan(capacity, k, table_limit=store.compact_limit())
        print(f"rebuild-index: about {total:,} fingerprints from {pages.url} "
              f"(database {pages.db.name!r}) into {store.describe()}; design "
              f"{layout.design.name}, {len(layout.tables)} tables, capacity "
              f"{layout.capacity:,}", file=sys.stderr)
        audit = pages.audit()
        before = {pid for _, pid in NearDuplicateIndex(store).entries()} \
            if store.read_layout() else set()
        store.clear()
        index = NearDuplicateIndex(store, layout=layout, batch_size=1024)
        pages.save_layout(args.namespace, layout.describe())
        progress = Progress("rebuild-index", total)
        started = time.monotonic()
        orphans = audit.fingerprints_without_page
        stored: set[str] = set()

        def rows() -> Iterator[tuple[int, str]]:  # streams; orphans are left out
            for fp, pid in pages.iter_fingerprints():
                if pid not in orphans:
                    stored.add(pid)
                    yield fp, pid

        added = index.add_many(rows(), progress=progress)
        progress.close()
        sums = register_checksums(redis_client, args.namespace, pages.iter_checksums())
        windows, other = _rebuild_windows(redis_client, args.namespace, pages)
        took = time.monotonic() - started
        print(f"rebuilt: {added:,} fingerprints, {sums:,} text checksums and the pinyin "
              f"windows of {windows:,} registered originals in {took:.1f} s "
              f"({added / max(took, 1e-9):,.0f}/s); index holds {len(index):,}")
        problems = audit.problems()
        if before:
            ghosts = sum(1 for pid in before if pid not in stored)
            lost = sum(1 for pid in stored if pid not in before)
            if ghosts:
                problems.append(f"the index held {ghosts:,} fingerprints of pages that are "
                                "not stored (admitted, never written): now gone from it")
            if lost:
                problems.append(f"the index lacked {lost:,} stored fingerprints (lost by "
                                "Redis): restored")
        for problem in problems:
            print(f"warning: {problem}", file=sys.stderr)
        print("the store and the index " + (f"disagreed in {len(problems)} ways (above); "
                                            "the index now follows the store"
                                            if problems else "agreed"))
        if other:
            print(f"warning: {other:,} registered originals have pinyin windows computed "
                  "with other parameters than the first one's; register them again",
                  file=sys.stderr)
        if index.over_capacity():
            print("warning: the index holds more than twice its capacity; rebuild with "
                  "--capacity for faster, smaller buckets", file=sys.stderr)
    finally:
        if services is not None:
            services.stop()
    return 0


def cmd_register(args: argparse.Namespace) -> int:
    from .config import DedupConfig
    from .index import IndexMismatchError
    from .progress import Progress
    from .register import register_files

    files = list(_iter_files(args.paths))
    if not files:
        raise InputError("no files to register")
    if not args.source.strip():
        raise InputError("--source must name the originals' owner or collection")
    config = DedupConfig(namespace=args.namespace, database=args.database)
    redis_client, pages, services = _services(args)
    try:
        progress = Progress("register", len(files))
        try:
            done = register_files(files, args.source, pages, redis_client, config,
                                  capacity=args.capacity, progress=progress)
        except IndexMismatchError as exc:
            raise InputError(str(exc)) from None
        progress.close()
    finally:
        if services is not None:
            services.stop()
    print(f"register {args.source!r}: {done.added:,} added, {done.unchanged:,} already "
          f"registered, {len(done.changed):,} changed since, {len(done.skipped):,} skipped")
    for path in done.changed:
        print(f"  changed (kept as first registered; remove its page to register the new "
              f"text): {path}")
    for path, reason in done.skipped:
        print(f"  skipped ({reason}): {path}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    from .index import NearDuplicateIndex, RedisStore

    redis_client, pages, services = _services(args)
    try:
        store = RedisStore(redis_client, args.namespace)
        if store.read_layout() is None:
            raise InputError(f"no index in {store.describe()}")
        index = NearDuplicateIndex(store)
        status = 0
        for fp_text in args.fingerprint:
            fp = parse_fingerprint(fp_text)
            done = index.remove(fp)
            print(f"fingerprint {fp:016x}: {'removed' if done else 'not in the index'}")
            status |= 0 if done else 1
        for page_id in args.page_ids:
            fp = pages.remove_page(page_id)
            done = fp is not None and index.remove(fp, page_id)
            where = f"fingerprint {fp:016x}" if fp is not None else "no fingerprint"
            print(f"page {page_id}: {'removed' if done else 'not in the index'} ({where})")
            status |= 0 if done else 1
    finally:
        if services is not None:
            services.stop()
    return status


def cmd_services(args: argparse.Namespace) -> int:
    from .services import DEFAULT_DATA_DIR, EmbeddedServices, stop_services

    folder = args.data_dir or os.environ.get("SIMCRAWL_DATA") or DEFAULT_DATA_DIR
    if args.action == "stop":
        stopped, users = stop_services(folder)
        print(f"stopped {', '.join(stopped) or 'nothing (no servers were running)'} in "
              f"{Path(folder).resolve()}" + (f"; {users} processes were still using them"
                                              if users else ""))
        return 0
    services = EmbeddedServices(folder)
    with stop_on_signals():
        try:
            services.start()
            print(f"REDIS_URL={services.redis_url}")
            print(f"MONGO_URI={services.mongo_uri}", flush=True)
            joined = not any(s.owned for s in services.servers.values())
            print(f"embedded services {'joined (already running)' if joined else 'running'}, "
                  f"data in {services.data_dir}; they stay up while this runs and other "
                  "processes use them; Ctrl-C leaves", file=sys.stderr, flush=True)
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0
        finally:
            services.stop()


def _service_options(parser: argparse.ArgumentParser) -> None:
    from .index import DEFAULT_NAMESPACE
    from .services import DEFAULT_DATA_DIR
    from .store import DEFAULT_DATABASE

    g = parser.add_argument_group("services (default: $REDIS_URL / $MONGO_URI, else embedded)")
    g.add_argument("--redis-url", help="Redis URL (default: $REDIS_URL)")
    g.add_argument("--mongo-uri", help="MongoDB URI (default: $MONGO_URI)")
    g.add_argument("--database", default=DEFAULT_DATABASE,
                   help=f"MongoDB database (default {DEFAULT_DATABASE})")
    g.add_argument("--namespace", default=DEFAULT_NAMESPACE,
                   help=f"Redis key prefix of the index (default {DEFAULT_NAMESPACE})")
    g.add_argument("--data-dir", default=None,
                   help=f"embedded servers' data folder (default $SIMCRAWL_DATA or "
                   f"./{DEFAULT_DATA_DIR})")


def _fingerprint_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-size", type=float, default=MAX_BYTES / 1e6, metavar="MB",
                        help=f"skip files larger than this (default {MAX_BYTES / 1e6:.0f} MB); "
                        "binary files and data files (.json, .csv, ...) are skipped too, "
                        "each listed with its reason")
    parser.add_argument("--shingle", type=int, default=DEFAULT_SHINGLE,
                        help=f"tokens per feature (default {DEFAULT_SHINGLE})")
    parser.add_argument("--drop-numbers", dest="drop_numbers", action="store_true",
                        default=DEFAULT_DROP_NUMBERS,
                        help="leave number-only tokens (counters, dates) out of the features "
                        "(default: keep them, as the crawl does: DEDUP_DROP_NUMBERS)")
    parser.add_argument("--keep-numbers", dest="drop_numbers", action="store_false",
                        help="keep number-only tokens (the default)")
    parser.add_argument("--min-tokens", type=int, default=DEFAULT_MIN_TOKENS,
                        help="texts with fewer tokens are matched by checksum only "
                             f"(default {DEFAULT_MIN_TOKENS})")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m dedup",
        description="simcrawl's fingerprint library: simhash near-duplicate detection.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("scan", help="fingerprint files and report duplicate pairs",
                       description="Fingerprint text and HTML files (folders recursively) "
                       "and report exact and near duplicates among them. With no paths, "
                       "scans the bundled examples.")
    p.add_argument("paths", nargs="*", type=Path, help="files or folders")
    p.add_argument("-k", type=int, default=3, help="largest Hamming distance (default 3)")
    _fingerprint_options(p)
    p.set_defaults(func=cmd_scan, parser=p)

    p = sub.add_parser("fingerprint", help="print the fingerprints of files as JSON lines")
    p.add_argument("paths", nargs="+", type=Path, help="files or folders")
    _fingerprint_options(p)
    p.set_defaults(func=cmd_fingerprint, parser=p)

    p = sub.add_parser("pinyin-reference",
                       help="compute the pinyin fingerprint's reference distribution",
                       description="Count the pinyin initials of the Han characters in text "
                       "and HTML files (folders recursively) and write each letter's share "
                       "as JSON: the reference the pinyin fingerprint subtracts. Without "
                       "--output it replaces the shipped default "
                       "(dedup/data/pinyin_reference.json).")
    p.add_argument("paths", nargs="+", type=Path, help="corpus files or folders")
    p.add_argument("-o", "--output", type=Path, required=True,
                   help="where to write the JSON (required: the shipped reference, "
                   "dedup/data/pinyin_reference.json inside the installed package, is "
                   "only replaced when you name it)")
    p.add_argument("--source", help="a description of the corpus, stored in the file")
    p.set_defaults(func=cmd_pinyin_reference, parser=p)

    p = sub.add_parser("find-all", help="all pairs (or clusters) within k bits",
                       description="Read fingerprints, one per line (16 hex digits or a "
                       "decimal), and print every pair within k bits as JSON lines; "
                       "--clusters prints connected components instead.")
    p.add_argument("input", nargs="?", default="-", help="file to read (default: stdin)")
    p.add_argument("-k", type=int, default=3, help="largest Hamming distance (default 3)")
    p.add_argument("--clusters", action="store_true", help="print clusters, not pairs")
    p.set_defaults(func=cmd_find_all, parser=p)

    p = sub.add_parser("plan", help="choose a table design for a corpus size",
                       description="Print the trade-off of the permuted-table designs "
                       "(Manku et al. §3) for a corpus and mark the one chosen.")
    p.add_argument("--docs", type=int, required=True, help="expected number of fingerprints")
    p.add_argument("--k", "-k", type=int, default=3, help="largest Hamming distance (default 3)")
    p.add_argument("--memory", type=parse_size, default=None,
                   help="memory budget for the index, e.g. 64GB (default: no limit)")
    p.add_argument("--bytes-per-entry", type=int, default=8,
                   help="bytes per fingerprint per table (8 in memory, ~16 in Redis)")
    p.add_argument("--max-tables", type=int, default=100,
                   help="leave out designs with more tables (default 100)")
    p.set_defaults(func=cmd_plan, parser=p)

    p = sub.add_parser("rebuild-index", help="reload the Redis index from MongoDB",
                       description="Clear the near-duplicate index in Redis and load every "
                       "fingerprint of the MongoDB 'fingerprints' collection into it, and every "
                       "page's text checksum into the exact-copy registry (MongoDB is the "
                       "source of truth). Keeps the index's design unless --capacity "
                       "or -k is given. Stop crawlers that use the index first.")
    p.add_argument("--capacity", type=int, default=None,
                   help="plan the design and buckets for this many fingerprints")
    p.add_argument("-k", type=int, default=None,
                   help="largest Hamming distance of the new design (default: the index's, "
                   f"or {DEFAULT_MAX_DISTANCE}, the crawl's, for a new one)")
    _service_options(p)
    p.set_defaults(func=cmd_rebuild_index, parser=p)

    p = sub.add_parser("register", help="register originals (text or HTML files) to track",
                       description="Load text and HTML files (folders recursively) as "
                       "originals of SOURCE: stored in MongoDB with their fingerprints "
                       "(simhash, and pinyin windows for Chinese), added to the Redis index, "
                       "so that a crawl drops pages that copy them and names the source. "
                       "Registering a file again changes nothing. Text files are read as "
                       "UTF-8, else GB18030.")
    p.add_argument("paths", nargs="+", type=Path, help="files or folders")
    p.add_argument("--source", required=True, help="the owner or collection, e.g. 'novels'")
    p.add_argument("--capacity", type=int, help="plan new indexes for this many pages "
                   "(default: the crawl's 1,000,000 for simhash, 100,000 originals for the "
                   "pinyin windows)")
    _service_options(p)
    p.set_defaults(func=cmd_register, parser=p)

    p = sub.add_parser("remove", help="remove pages (or fingerprints) from the store and index",
                       description="Remove pages by id from MongoDB and their fingerprints "
                       "from the Redis index; --fingerprint removes a fingerprint from the "
                       "index only. Exit status 1 if something was not found.")
    p.add_argument("page_ids", nargs="*", help="page ids (24 hex digits)")
    p.add_argument("--fingerprint", action="append", default=[], metavar="HEX",
                   help="a fingerprint to remove from the index (repeatable)")
    _service_options(p)
    p.set_defaults(func=cmd_remove, parser=p)

    p = sub.add_parser("services", help="run (or stop) the embedded Redis and MongoDB servers",
                       description="Start the embedded redis-server and SecantusDB (or join "
                       "them if running) on loopback, print their URLs, and keep them up "
                       "until Ctrl-C or SIGTERM: for querying the stored pages and matches "
                       "with other tools, or for sharing them between crawler processes. "
                       "Every process using a data folder counts as a user; the last one "
                       "to leave stops the servers. 'services stop' stops them at once.")
    p.add_argument("action", nargs="?", choices=["run", "stop"], default="run",
                   help="run (default) or stop the servers of the data folder")
    p.add_argument("--data-dir", default=None,
                   help="data folder (default $SIMCRAWL_DATA or ./simcrawl-data)")
    p.set_defaults(func=cmd_services, parser=p)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    own = getattr(args, "parser", parser)  # errors show the subcommand's usage
    if extra:
        own.error(f"unrecognized arguments: {' '.join(extra)}")
    k = getattr(args, "k", None)
    if k is not None and not 0 <= k <= 31:
        own.error(f"-k must be between 0 and 31, got {k}")
    try:
        return int(args.func(args))
    except DataDirError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ServiceUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
