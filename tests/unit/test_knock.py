"""A stopping server's port is knocked on while it runs (dedup.adapters.servers.services
.knock_while): SecantusDB's accepting thread, which its stop waits for, wakes only on a
connection."""

from __future__ import annotations

import socket

from dedup.adapters.servers.services import knock_while


def knocks(listener: socket.socket) -> int:
    """The connections waiting on ``listener``."""
    listener.settimeout(0.2)
    count = 0
    while True:
        try:
            listener.accept()[0].close()
        except OSError:
            return count
        count += 1


def test_a_server_still_running_is_knocked_on_until_it_has_gone() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        looks = iter([True, True, False])  # running for two looks, then gone
        knock_while(lambda: next(looks), "127.0.0.1", listener.getsockname()[1])
        assert knocks(listener) == 2  # one knock a look while it ran, none after


def test_a_server_gone_or_without_a_port_is_not_knocked_on() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        knock_while(lambda: False, "127.0.0.1", listener.getsockname()[1])
        knock_while(lambda: True, "127.0.0.1", None)  # never told where: nothing to knock
        assert knocks(listener) == 0
