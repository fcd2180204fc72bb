"""Which ports the demo listens on: the standard ones when free, and a word when it moves."""

from __future__ import annotations

import socket

from mast_otel.processors.usage import UsageError


def is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could listen on ``port`` now.

    The probe sets SO_REUSEADDR, as the servers do: a socket left in TIME_WAIT by the previous
    run does not stop them, so it must not make the demo move.
    """
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def any_free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def choose_port(requested: int | None, default: int, flag: str, notes: list[str], host: str = "127.0.0.1") -> int:
    """The port to listen on: ``requested`` (0: any free one), else ``default``.

    A port the user asked for that is taken is a :class:`UsageError`; a taken default moves to a
    free port and says so in ``notes``.
    """
    if requested == 0:
        return any_free_port(host)
    if requested is not None:
        if not is_free(requested, host):
            raise UsageError(f"{flag} {requested}: port in use on {host} ({flag} 0 picks a free one)")
        return requested
    if is_free(default, host):
        return default
    port = any_free_port(host)
    notes.append(f"port {default} ({flag}) is in use; using {port} instead")
    return port
