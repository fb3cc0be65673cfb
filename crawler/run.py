"""The main job's work (``simcrawl crawl [URL ...]``, what ``./simcrawl`` runs; its options: crawler/cli/crawl.py).

With no URL it serves the local demo site, crawls it with ``scrapy crawl site`` on the
embedded services (or ``REDIS_URL`` / ``MONGO_URI``), and prints a summary, how the crawl
compares with the site's known outcome, and the MongoDB query that lists the matches.
With URLs it crawls those sites.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

from dedup.progress_line import counted
from dedup.setting_names import value


class CrawlDidNotRun(Exception):
    """A crawl process ended without a summary; ``status`` is its exit status (2: a bad
    setting, 3: a service unreachable, 1: anything else; it said why on stderr).
    ``said``: it said why in its one line (a bad setting or a server out of reach), so
    the command adds none."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status if status in (1, 2, 3) else 1
        self.said = status in (2, 3)


class CrawlInterrupted(KeyboardInterrupt):
    """A crawl stopped by a signal (Ctrl-C, SIGTERM) before it ran out of pages; ``stats``
    is what its processes did until then, as :func:`crawl` returns it, with ``forced``
    (the processes that had to be forced out past ``SIMCRAWL_STOP_SECONDS``, without a
    summary of their own) and ``last_counters`` (the live line's last counters of all of
    them); without ``per_process`` none of them left a summary."""

    def __init__(self, stats: dict) -> None:
        super().__init__("interrupted")
        self.stats = stats




def stop_seconds(get: Callable[[str, Any], Any] | None = None) -> float:
    """``SIMCRAWL_STOP_SECONDS``: given as a setting (``get``: the settings' or the ``-s``
    options' ``get``), else from the environment, else its default (30).

    Raises:
        ValueError: not a number of seconds, 0 or more (named).
    """
    given = value("SIMCRAWL_STOP_SECONDS", get)
    try:
        seconds = float(given)  # type: ignore[arg-type]
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        raise ValueError(f"SIMCRAWL_STOP_SECONDS must be a number of seconds, 0 or more, "
                         f"got {given!r}")
    return seconds


def _forward(runs: list[tuple[subprocess.Popen, Path, Path]], signum: int) -> None:
    """Send ``signum`` to the crawl processes still running."""
    for proc, _, _ in runs:
        if proc.poll() is None:
            proc.send_signal(signum)


def bad_start_url(url: str) -> str | None:
    """Why ``url`` cannot start a crawl, or ``None``: an http(s) URL with a host, no
    spaces and a valid port."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a bad port)
    except ValueError as exc:
        return str(exc)
    if parts.scheme not in ("http", "https"):
        return "not an http or https URL"
    if not parts.hostname:
        return "no host"
    if any(c.isspace() for c in url):
        return "it contains white space"
    return None


def _network(reason: str) -> bool:
    """Whether a skip reason is a network's failure (:data:`crawler.skips.NETWORK_FAILURES`)."""
    from crawler.skips import NETWORK_FAILURES

    return reason in NETWORK_FAILURES


def _in_words(reasons: list[str]) -> str:
    """Skip reasons as the line says them: a network's failure in words ("no such
    host"), any other by its name."""
    return ", ".join(r.replace("_", " ") if _network(r) else r for r in sorted(set(reasons)))


def unreachable(stats: dict) -> str | None:
    """Why a crawl got no page at all, naming what failed; ``None`` when it decided or
    stored one. The cases: no response, not even robots.txt (the download errors it met:
    "no such host", "connection refused"...); robots.txt that could not be had, which
    disallows its host (RFC 9309), a network's failure named as such; and responses that
    gave no page (each start URL answered 404 or 500, a binary, a page over the size
    cap: the skip reasons)."""
    decided, skipped, lost = outcomes(stats)
    if decided or lost or stats.get("dedup/url_rule"):
        return None
    if stats.get("dedup/robots/unreachable") and \
            stats.get("dedup/skipped/robots_txt", 0) >= stats.get("dedup/requests", 1):
        why = [k.rsplit("/", 1)[1] for k in stats if k.startswith("dedup/robots/error/")]
        if why and all(_network(n) for n in why):
            return (f"none of the start URLs could be fetched: {_in_words(why)} (the log "
                    "names the hosts)")
        return (f"none of the start URLs could be fetched ({_in_words(why)}): their hosts' "
                "robots.txt could not be had, which disallows them (RFC 9309; the log "
                "names the hosts)")
    errors = [k.rsplit("/", 1)[1] for k in stats if k.startswith("dedup/skipped/")]
    if not stats.get("downloader/response_count", 0):
        return "none of the start URLs could be fetched" + (
            f": {_in_words(errors)}" if errors else "")
    if skipped:
        return (f"none of the start URLs gave a page to decide (skipped: {_in_words(errors)};"
                " the log names each URL)")
    return None


#: Settings the command sets for each crawl process itself, or reads itself: a user's
#: value of the first two is honoured (:func:`own_settings`), the third is the command's
#: live line, the fourth the bound of a stop (:func:`stop_seconds`).
OWN_SETTINGS = ("LOG_FILE", "DEDUP_SUMMARY_FILE", "SIMCRAWL_PROGRESS_FILE",
                "SIMCRAWL_STOP_SECONDS")


def own_settings(extra: list[str]) -> tuple[list[str], dict[str, str]]:
    """``extra`` (``-s NAME=VALUE`` pairs and other arguments) without the settings the
    command sets for each crawl process (:data:`OWN_SETTINGS`), and the user's values of
    them (the last of each wins, as Scrapy takes them)."""
    rest: list[str] = []
    own: dict[str, str] = {}
    args = iter(extra)
    for arg in args:
        if arg in ("-s", "--set"):
            item = next(args, "")
            name, _, setting = item.partition("=")
            if name in OWN_SETTINGS:
                own[name] = setting
            else:
                rest += [arg, item]
        else:
            rest.append(arg)
    return rest, own


def log_files(log_file: Path, processes: int) -> list[Path]:
    """The log of each crawl process: ``log_file`` for one, ``NAME-1.log``, ``NAME-2.log``,
    ... for several."""
    if processes == 1:
        return [log_file]
    return [log_file.with_name(f"{log_file.stem}-{n}{log_file.suffix}")
            for n in range(1, processes + 1)]


def crawl(start_urls: list[str], redis_url: str, mongo_uri: str, extra: list[str],
          log_file: Path, processes: int = 1, spider: list[str] | None = None) -> dict:
    """Run ``scrapy crawl site`` (or ``spider``: the spider's name and ``-a`` arguments,
    ``simcrawl warc``'s) in subprocesses (``processes`` of them share one crawl
    through the frontier in Redis); return the combined summary (dedup stats summed over
    the processes that finished, ``lost_urls``: pages that could not be decided or
    stored, ``per_process``: each finished one's pages handled, ``outcomes``: a line per
    process, ``failed_processes``: how many ended without a summary, killed say).

    Interrupted (Ctrl-C, SIGTERM), it lets the crawls stop gracefully (Scrapy saves a
    ``JOBDIR``; the shared frontier keeps its queue) before it returns to the caller.

    A ``LOG_FILE`` in ``extra`` replaces ``log_file``; a ``DEDUP_SUMMARY_FILE`` gets the
    combined summary as JSON; a ``SIMCRAWL_PROGRESS_FILE`` is the command's own (each
    process writes one for the live line) and is left out.

    Raises:
        SystemExit: a crawl failed without a summary (it said why on stderr).
    """
    # the settings module inside the package: the crawl runs from any folder
    env = dict(os.environ, REDIS_URL=redis_url, MONGO_URI=mongo_uri,
               SCRAPY_SETTINGS_MODULE="crawler.settings")
    # Scrapy's cookies read domains with tldextract, which downloads the public suffix
    # list at every run (a traceback in the log offline): the list tldextract ships is
    # used instead, unless the user names lists to fetch (docs/operations.md)
    env.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
    shared = ["-s", "SIMCRAWL_FRONTIER=redis"] if processes > 1 else []
    extra, own = own_settings(extra)
    bound = stop_seconds(own.get)  # the processes cut at half
    if own.get("LOG_FILE"):
        log_file = Path(own["LOG_FILE"])
    runs = []
    progress_files = []
    # the start URLs in a file: a list from `--input-file` may be longer than a command
    # line takes, and a URL may hold a comma (start_urls= is comma-separated)
    start_file = Path(tempfile.mkstemp(prefix="simcrawl-start-", suffix=".txt")[1])
    start_file.write_text("".join(f"{u}\n" for u in start_urls), encoding="utf-8")
    for n, log in enumerate(log_files(log_file, processes)):
        summary = Path(tempfile.mkstemp(prefix="simcrawl-summary-", suffix=".json")[1])
        progress_files.append(Path(tempfile.mkstemp(prefix="simcrawl-progress-",
                                                    suffix=".json")[1]))
        metrics = str(value("SIMCRAWL_METRICS_PORT"))  # from the environment here
        ports = ["-s", f"SIMCRAWL_METRICS_PORT={int(metrics) + n}"] \
            if metrics.isdigit() and int(metrics) else []  # one port per process
        which = spider or ["site", "-a", f"start_file={start_file}"]
        cmd = [sys.executable, "-m", "scrapy", "crawl", *which, "-s", f"DEDUP_SUMMARY_FILE={summary}",
               "-s", f"LOG_FILE={log}", "-s", f"SIMCRAWL_PROGRESS_FILE={progress_files[-1]}",
               "-s", f"SIMCRAWL_STOP_SECONDS={bound}", *shared, *ports, *extra]
        # in a session of its own: a signal to this command's process group (Ctrl-C in a
        # terminal, systemd, kill -- -PGID) reaches the crawl once, forwarded from here,
        # not twice (the group's and ours: Scrapy takes a second one for "force")
        runs.append((subprocess.Popen(cmd, env=env, start_new_session=True), summary, log))
    # the crawls use the embedded services this command joined: they count as users, so
    # that if this command is killed, a later one does not stop the servers under them
    from dedup.adapters.servers.services import share_with

    started = time.monotonic()
    live = LiveProgress(progress_files, value("SIMCRAWL_PROGRESS_LINE_SECONDS"))
    try:
        # a signal from here on is passed on: the crawls run already (one that came while
        # this command counted them as users was lost, and they crawled to their end)
        share_with(proc.pid for proc, _, _ in runs)
        live.start()
        for proc, _, _ in runs:
            proc.wait()
    except KeyboardInterrupt as exc:
        # each signal this command gets is passed on once: the first asks the crawls to
        # stop cleanly, another one (a second Ctrl-C) to stop at once; past the bound
        # (SIMCRAWL_STOP_SECONDS) the command sends that second one itself
        forward = signal.SIGTERM if str(exc).startswith("signal") else signal.SIGINT
        _forward(runs, forward)
        live.stop()
        print(f"stopping: the crawl finishes what is in flight and stores what it decided "
              f"(at most {bound:.0f} s, SIMCRAWL_STOP_SECONDS; Ctrl-C again to stop at "
              "once) ...", file=sys.stderr, flush=True)
        forced = _stop_within(runs, bound)
        took = time.monotonic() - started
        last = live.line().strip().split("  ", 1)[-1]  # the last counters, added up
        try:
            combined = _combine(runs, took, own)
        except CrawlDidNotRun:  # every process forced out: no summary, their counters
            combined = {}
        raise CrawlInterrupted({**combined, "forced": forced, "last_counters": last,
                                "seconds": took}) from None
    finally:
        took = time.monotonic() - started
        live.stop()
        for path in [*progress_files, start_file]:
            path.unlink(missing_ok=True)
    return _combine(runs, took, own)


def _stop_within(runs: list[tuple[subprocess.Popen, Path, Path]], bound: float) -> int:
    """Wait for the crawl processes asked to stop: ``bound`` seconds, then force them out
    (a second signal: Scrapy stops at once), then kill them 10 s later; a Ctrl-C while
    waiting forces them out at once. Returns how many had to be forced out."""
    deadline = time.monotonic() + bound
    forced: set[int] = set()
    for proc, _, _ in runs:
        while True:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                break
            except KeyboardInterrupt:
                forced |= {p.pid for p, _, _ in runs if p.poll() is None}
                _forward(runs, signal.SIGINT)
                deadline = min(deadline, time.monotonic() + 10)
            except subprocess.TimeoutExpired:
                if proc.pid not in forced:  # the bound passed: stop at once
                    forced |= {p.pid for p, _, _ in runs if p.poll() is None}
                    _forward(runs, signal.SIGINT)
                    deadline = time.monotonic() + 10
                    continue
                proc.kill()
                proc.wait()
                break
    return len(forced)


def _combine(runs: list[tuple[subprocess.Popen, Path, Path]], took: float,
             own: dict[str, str]) -> dict:
    """The crawl processes' summaries as one (see :func:`crawl`).

    Raises:
        CrawlDidNotRun: none of them wrote a summary.
    """
    combined: dict = {"lost_urls": [], "per_process": [], "outcomes": [], "finish_reasons": []}
    failed: list[tuple[int, Path]] = []  # exit status and log of those without a summary
    for n, (proc, summary, log) in enumerate(runs, 1):
        try:
            data = json.loads(summary.read_text() or "{}")
        except (OSError, ValueError):
            data = {}
        finally:
            summary.unlink(missing_ok=True)
        if not data:  # it said why on stderr (crawler/commands/crawl.py), or was killed
            failed.append((proc.returncode, log))
            combined["outcomes"].append(
                f"process {n}: ended without a summary (exit status {proc.returncode}); "
                f"its log: {log}")
            continue
        handled = sum(v for k, v in data.items() if k in HANDLED)
        combined["outcomes"].append(f"process {n}: finished, {counted(handled, 'page')} handled "
                                    f"(exit status {proc.returncode})")
        combined["lost_urls"] += data.pop("lost_urls", [])
        reason = data.pop("finish_reason", None)  # Scrapy's, once the spider closed
        if reason is not None:
            combined["finish_reasons"].append(reason)
        combined["per_process"].append(handled)
        for key, count in data.items():
            if isinstance(count, (int, float)):
                combined[key] = combined.get(key, 0) + count
            else:
                combined.setdefault(key, count)
    if len(failed) == len(runs):  # none ran: the first one's reason
        status, log = failed[0]
        raise CrawlDidNotRun(f"the crawl did not run (exit status {status}); its log: {log}",
                             status)
    combined["seconds"] = took
    combined["returncode"] = max(abs(proc.returncode) for proc, _, _ in runs)
    combined["failed_processes"] = len(failed)
    summary_file = value("DEDUP_SUMMARY_FILE", own.get)
    if summary_file:  # the user's copy of the summary
        Path(summary_file).write_text(
            json.dumps(combined, indent=1, sort_keys=True, default=str), encoding="utf-8")
    return combined


class LiveProgress:
    """One live line for the crawl processes of ``./simcrawl``, from the files their
    :class:`crawler.extensions.progress.ProgressFile` writes: for ``simcrawl warc`` how much of its
    files is read, then fetched (and per second), admitted,
    dropped, skipped, queue length, pages handled per process, elapsed. On a terminal it
    is a rich live line; otherwise (a log, a pipe) one plain line every ``quiet_every``
    seconds.
    """

    def __init__(self, files: list[Path], quiet_every: float = 10.0,
                 out: Any = None) -> None:
        self.files = files
        self.quiet_every = quiet_every
        self.out = out or sys.stdout
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = time.monotonic()

    def read(self) -> list[dict]:
        """Each process's latest counters (empty before its first write)."""
        out = []
        for path in self.files:
            try:
                out.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                out.append({})
        return out

    def line(self) -> str:
        """The combined line now."""
        rows = self.read()

        def total(key: str) -> int:
            return sum(int(r.get(key, 0)) for r in rows)

        elapsed = time.monotonic() - self._started
        fetched = total("fetched")
        queues = [int(r["queue"]) for r in rows if int(r.get("queue", -1)) >= 0]
        queue = (max(queues) if len(rows) > 1 else sum(queues)) if queues else "?"
        read, size = total("archive_read"), total("archive_total")
        # simcrawl warc: how far through its files
        archive = f"  read {read / 1e6:.1f} of {size / 1e6:.1f} MB ({read / size:.0%})" \
            if size else ""
        text = (f"{elapsed:6.1f} s{archive}  fetched {fetched} ({fetched / max(elapsed, 1e-9):.1f}/s)"
                f"  admitted {total('admitted')}  dropped {total('dropped')}  skipped "
                f"{total('skipped')}  queue {queue}")
        if total("lost"):
            text += f"  LOST {total('lost')}"
        if full := next((r["disk_full"] for r in rows if r.get("disk_full")), ""):
            text += f"  WAITING: the disk holding {full} is full"
        if len(rows) > 1:
            text += "  per process " + " / ".join(
                str(int(r.get("admitted", 0)) + int(r.get("dropped", 0))
                    + int(r.get("revisits", 0))) for r in rows)
        return text

    def start(self) -> LiveProgress:
        """Show the line until :meth:`stop`."""
        self._thread = threading.Thread(target=self._run, name="simcrawl-progress",
                                        daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        if getattr(self.out, "isatty", lambda: False)():
            from rich.console import Console
            from rich.live import Live

            with Live(self.line(), console=Console(file=self.out), refresh_per_second=2,
                      transient=True) as live:
                while not self._stop.wait(0.5):
                    live.update(self.line())
            return
        while not self._stop.wait(self.quiet_every):
            print(f"progress: {self.line()}", file=self.out, flush=True)

    def stop(self) -> None:
        """Stop the display; where it prints plain lines (not a terminal), a last one with
        the final counters (each process writes its file once more as it ends), so that the
        live lines end on the totals, not on a count some seconds old; none when no process
        wrote any (none started crawling: a bad setting, a server out of reach, whose one
        line says so)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None  # once: a stopped crawl stops it early, then again
            if not getattr(self.out, "isatty", lambda: False)() and any(self.read()):
                print(f"progress: {self.line()}", file=self.out, flush=True)


#: The stats that count a page handled (decided, or stored undecided with dedup off).
HANDLED = ("dedup/unique", "dedup/near_duplicate", "dedup/exact_duplicate",
           "dedup/pinyin_copy", "dedup/revisit", "dedup/stored_undecided")


def outcomes(stats: dict) -> tuple[int, int, int]:
    """What became of the requests a crawl took from its frontier (``dedup/requests``):
    ``(pages decided, requests skipped under a reason, pages lost)``; a crawl that ran
    to its end has every request in exactly one of them."""
    decided = sum(int(stats.get(k, 0)) for k in HANDLED)
    skipped = sum(int(v) for k, v in stats.items() if k.startswith("dedup/skipped/"))
    return decided, skipped, int(stats.get("dedup/lost/undecided", 0))


def print_summary(stats: dict) -> None:
    """The crawl's dedup figures as a short table."""
    # a request the URL rules did not send has an empty response made for it, which
    # Scrapy's stats do not count (crawler.middlewares.url_rule_gate.UrlRuleGate.process_response)
    responses = int(stats.get("downloader/response_count", 0))
    robots = int(stats.get("robotstxt/response_count", 0))
    # responses are not requests: robots.txt files are fetched beside the crawl's own
    # requests, and a request refused by robots.txt or cut at the size cap has none
    turned = {k.rsplit("/", 1)[1]: int(v) for k, v in stats.items()
              if k.startswith("dedup/turned/") and v}
    # a page admitted first and then named a copy by a later page that says it came first
    # (docs/fingerprints.md) is in one line: the turned round, not the admitted
    aside = int(stats.get("dedup/sitemaps/responses", 0))  # robots.txt and sitemaps read
    besides = ", ".join(part for part in (
        f"{robots} of them robots.txt files" if robots else "",
        f"{aside} robots.txt and sitemap files read for their sitemaps" if aside else "") if part)
    rows = [("responses downloaded", f"{responses} ({besides}; the requests below are the "
             "crawl's own)" if besides else responses),
            ("admitted (unique)", int(stats.get("dedup/unique", 0)) - sum(turned.values())),
            ("near duplicates dropped", stats.get("dedup/near_duplicate", 0)),
            ("exact duplicates dropped", stats.get("dedup/exact_duplicate", 0)),
            ("copies of registered originals (pinyin)", stats.get("dedup/pinyin_copy", 0)),
            ("outlinks of duplicates not followed", stats.get("dedup/outlinks_dropped", 0)),
            ("revisits", stats.get("dedup/revisit", 0))]
    if turned:
        rows.insert(5, ("matches turned round", f"{sum(turned.values())} (admitted, then "
                        "copies of a later page that said it came first: " + ", ".join(
                            f"{n} by the "
                            f"{'canonical link' if why == 'canonical' else 'publication date'}"
                            for why, n in sorted(turned.items())) + ")"))
    if stats.get("dedup/excerpt"):  # kept, and a record of the passage they quote
        rows.insert(2, ("  of them quoting an original (excerpt records)",
                        stats.get("dedup/excerpt", 0)))
    if stats.get("dedup/url_rule") or stats.get("dedup/url_rules/resent"):
        rows.append(("copies not requested (URL rules)",
                     f"{stats.get('dedup/url_rule', 0)} (recorded as url_rule matches; "
                     f"{stats.get('dedup/url_rules/resent', 0)} sent after all)"))
    if stats.get("dedup/sitemaps/read") or stats.get("dedup/sitemaps/failed"):
        failed = int(stats.get("dedup/sitemaps/failed", 0))
        rows.append(("sitemaps read", f"{stats.get('dedup/sitemaps/read', 0)}, listing "
                     f"{counted(int(stats.get('dedup/sitemaps/pages', 0)), 'page')} to crawl"
                     + (f" ({failed} could not be read: the log names them)" if failed else "")))
    if stats.get("dedup/outlinks_excluded"):
        rows.append(("links left out by the URL patterns",
                     f"{stats['dedup/outlinks_excluded']} (--include / --exclude; never "
                     "requested)"))
    rows += [(f"skipped: {k.rsplit('/', 1)[1]}", v) for k, v in sorted(stats.items())
             if k.startswith("dedup/skipped/")]
    decided, skipped, lost_pages = outcomes(stats)
    undecided = int(stats.get("dedup/stored_undecided", 0))
    if undecided:
        rows.insert(1, ("stored undecided (DEDUP_ENABLED off)", undecided))
    taken = int(stats.get("dedup/requests", 0))
    open_ = taken - decided - skipped - lost_pages
    handled = f"{decided - undecided} pages decided" + (
        f" + {undecided} stored undecided" if undecided else "")
    put_back = min(open_, int(stats.get("dedup/put_back", 0)))  # waiting when it stopped
    rows.append(("requests (all accounted for)" if open_ == put_back else "requests",
                 f"{taken} = {handled} + {skipped} skipped + {lost_pages} lost"
                 + (f" + {put_back} put back unsent when the crawl stopped (or cut; each named in the log)" if put_back else "")
                 + (f" + {open_ - put_back} in flight when the crawl stopped"
                    if open_ > put_back else "")))
    lost = stats.get("lost_urls") or []
    if lost:
        rows.append(("LOST: not decided or not stored", f"{len(lost)} (crawled again by the "
                     "next crawl): " + ", ".join(lost[:5]) + (" ..." if len(lost) > 5 else "")))
    if len(stats.get("per_process", [])) > 1:
        rows.append(("pages handled per process", " / ".join(
            str(n) for n in stats["per_process"])))
    if stats.get("failed_processes"):  # each one's outcome; the totals are the others'
        rows += [(f"process {n}", outcome.split(": ", 1)[1])
                 for n, outcome in enumerate(stats["outcomes"], 1)]
    cut = sorted({r for r in stats.get("finish_reasons", []) if r != "finished"})
    if cut:  # CLOSESPIDER_*, a signal, a fault: not a crawl that ran out of pages
        rows.append(("STOPPED before the end", f"Scrapy's finish reason: {', '.join(cut)} "
                     "(cut short: the pages it had not reached were not fetched)"))
    rows += [("pages stored / match records stored",
              f"{stats.get('dedup/stored/pages', 0)} / {stats.get('dedup/stored/matches', 0)}"),
             ("wall time", f"{stats['seconds']:.1f} s")]
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")


QUERY = '''db.matches.find({{}}, {{url: 1, original_url: 1, distance: 1, kind: 1}})
           .sort({{detected_at: -1}}).limit(10)        // in mongosh, database "{db}"'''


def command_name() -> str:
    """How the user runs simcrawl here, for the hints it prints: the ``./simcrawl`` of a
    checkout (its launcher says so in ``SIMCRAWL_COMMAND``), else ``simcrawl`` when it is
    on the PATH, else this Python's ``-m crawler.cli``."""
    named = value("SIMCRAWL_COMMAND")
    if named:
        return named
    return "simcrawl" if shutil.which("simcrawl") else f"{sys.executable} -m crawler.cli"


def query_hint(database: str, options: str = "") -> str:
    """How to look at the match records yourself, naming only commands this machine has:
    mongosh when it is installed, else simcrawl's own export and console, as the user runs
    simcrawl (:func:`command_name`), with the ``options`` the crawl was given that they
    need too (``--database``, ``--data-dir``: :func:`hint_options`)."""
    me = command_name()
    # `services` takes the data folder, not a database
    served = re.sub(r" --database (?:'[^']*'|\S+)", "", options)
    if shutil.which("mongosh"):
        return ("Query them yourself:\n  " + QUERY.format(db=database) +
                f"\n  ({me} services{served} prints the MongoDB URI while the servers run; "
                "see docs/queries.md)")
    rows = [(f"{me} export matches{options} --format jsonl | head", "JSON lines, one per copy"),
            (f"{me} web{options}", "the console: each copy beside its original")]
    width = max(47, *(len(c) + 1 for c, _ in rows))
    return "See them all:\n" + "\n".join(f"  {c:<{width}}# {what}" for c, what in rows) + \
        f"\n  (in Python: the queries of docs/queries.md, with the URI {me} services" \
        f"{served} prints)"


def hint_options(database: str | None = None, data_dir: str | None = None) -> str:
    """The options a hint's commands need to read what a crawl wrote: its database when it
    is not the default, its embedded servers' data folder when one was named."""
    import shlex

    out = ""
    if database and database != "simcrawl":
        out += f" --database {shlex.quote(database)}"
    if data_dir:
        out += f" --data-dir {shlex.quote(data_dir)}"
    return out


DEMO_SOURCE = "demo-novels"


def register_demo_corpus(texts: dict[str, str], folder: Path, redis_url: str, mongo_uri: str,
                         database: str, namespace: str) -> dict[str, str]:
    """Write the demo's registered chapters to ``folder`` and register them (as
    ``simcrawl register FOLDER --source demo-novels`` would); returns file name →
    the registered page's URL."""
    from dedup.adapters.registered_originals import register_files
    from dedup.config import DedupConfig
    from dedup.adapters.servers.services import connect_mongo, connect_redis
    from dedup.adapters.mongo import PageStore

    folder.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    config = DedupConfig(namespace=namespace, database=database)
    pages = PageStore(connect_mongo(mongo_uri), database)
    done = register_files(sorted(folder / n for n in texts), DEMO_SOURCE, pages,
                          connect_redis(redis_url), config)
    print(f"registered {counted(done.added, 'original')} of {DEMO_SOURCE!r} from {folder}")
    return {name: (folder / name).resolve().as_uri() for name in texts}


def demo(redis_url: str, mongo_uri: str, extra: list[str], log_dir: Path,
         processes: int = 1, options: str = "") -> int:
    """Crawl the demo site into the ``simcrawl_demo`` database / ``demo`` namespace
    (cleared first, so every demo run starts alike); ``options``: those the hints'
    commands need (:func:`hint_options`)."""
    from crawler.examples.demosite import DemoSite
    from dedup.adapters.index import redis_store
    from dedup.config import DEMO_DATABASE, DEMO_NAMESPACE
    from dedup.adapters.servers.services import connect_mongo, connect_redis
    from dedup.adapters.mongo import PageStore
    from dedup.adapters.mongo.reads import MongoReads

    database, namespace = DEMO_DATABASE, DEMO_NAMESPACE
    mongo = connect_mongo(mongo_uri)
    PageStore(mongo, database).clear()
    redis_store(connect_redis(redis_url), namespace).clear()
    with DemoSite() as site:
        corpus = register_demo_corpus(site.content.expected.registered, log_dir / "demo-corpus",
                                      redis_url, mongo_uri, database, namespace)
        print(f"demo site on {site.url('news')}/ (+3 more hosts); crawling with the embedded "
              "services ..." if "127.0.0.1" in redis_url else "demo site: crawling ...")
        stats = crawl(site.start_urls(), redis_url, mongo_uri,
                      ["-s", f"DEDUP_DATABASE={database}", "-s", f"DEDUP_NAMESPACE={namespace}",
                       "-s", "AUTOTHROTTLE_ENABLED=0", *extra],
                      log_dir / "demo-crawl.log", processes)
        requested = set(site.requests)
        expected = site.content.expected
        reads = MongoReads(mongo[database])
        stored = {d["url"] for d in reads.records("pages", fields=("url",))}
        matched = {d["url"]: d for d in reads.records("matches")}
        traps = sorted(t for t in expected.traps if t in requested)
        firsts = [site.path_url(c[0]) for c in expected.clusters] + \
            [site.path_url(u) for u in expected.unique]
        copies = [(site.path_url(c), site.path_url(cl[0])) for cl in expected.clusters
                  for c in cl[1:]]
        right = sum(1 for c, o in copies if c in matched and matched[c]["original_url"] == o)
        pirated = [(site.path_url(p), corpus[name]) for p, name in
                   expected.pirated.items()]
        found = sum(1 for p, o in pirated if p in matched and matched[p]["original_url"] == o
                    and matched[p].get("source") == DEMO_SOURCE)
        excerpts = {d["url"]: d for d in reads.records("excerpts")}
        quoted = [(site.path_url(p), corpus[name]) for p, name in expected.quoted.items()]
        kept = sum(1 for p, o in quoted if p in stored and p in excerpts
                   and excerpts[p]["original_url"] == o)
    print()
    print_summary(stats)
    print("\ncompared with the demo site's known outcome:")
    print(f"  originals stored          {sum(u in stored for u in firsts)} / {len(firsts)}")
    print(f"  copies dropped, naming their original   {right} / {len(copies)}")
    print(f"  copies of registered originals dropped, naming the original and its source "
          f"{found} / {len(pirated)}")
    print(f"  quotations of registered originals kept, with an excerpt record naming "
          f"the original {kept} / {len(quoted)}")
    print(f"  trap pages requested      {len(traps)} (must be 0)")
    print("\nthe match records, in MongoDB (database \"simcrawl_demo\"):")
    for kind in ("exact", "simhash", "pinyin"):
        for m in reads.examples(kind, 2):
            how = (f"share {m['pinyin']['share']:.2f}, run {m['pinyin']['run']}"
                   if kind == "pinyin" else f"d={m['distance']}")
            source = f" (registered by {m['source']})" if m.get("source") else ""
            print(f"  {m['kind']:8} {how}  {m['url']}\n"
                  f"  {'':8} copies {m['original_url']}{source}")
    print(f"  ... {len(matched)} in all. {query_hint(database, options)}")
    ok = not traps and right == len(copies) and all(u in stored for u in firsts) \
        and found == len(pirated) and kept == len(quoted) and not stats.get("lost_urls") \
        and not stats.get("failed_processes")
    return 0 if ok else 1
