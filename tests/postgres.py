"""A throwaway PostgreSQL server for the tests, from Debian's ``postgresql`` package.

``PostgresServer`` runs ``initdb`` and ``postgres`` on a free loopback port in a temp dir.
PostgreSQL refuses to run as root, so under root (CI) both run as the ``postgres`` user the
Debian package creates, through ``runuser``, with the data dir owned by it. A missing
PostgreSQL skips locally and fails in CI (``CI=true``), like ``tests.tools.require_tool``.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.tools import IN_CI

SUPERUSER = "mast"


def postgres_bin() -> Path:
    """The folder holding ``initdb`` and ``postgres`` (Debian keeps them off PATH)."""
    found = shutil.which("initdb")
    candidates = [Path(os.path.realpath(found)).parent] if found else []
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for folder in candidates:
        if (folder / "initdb").exists() and (folder / "postgres").exists():
            return folder
    message = "PostgreSQL not found (initdb, postgres); scripts/install-system-deps installs Debian's postgresql"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """``start()``/``stop()``; ``url(database)`` for a database on it (``create_database`` makes one)."""

    def __init__(self) -> None:
        self.bin = postgres_bin()
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="mast-pg-"))
        self.data = self.root / "data"
        self.proc: subprocess.Popen | None = None
        self._as: list[str] = []
        if os.geteuid() == 0:  # initdb and postgres refuse root
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    def start(self) -> None:
        subprocess.run([*self._as, str(self.bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "--auth=trust",
                        "-E", "UTF8", "--no-sync"], check=True, capture_output=True)
        self.proc = subprocess.Popen(
            [*self._as, str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(self.root),
             "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200"],
            stdout=subprocess.DEVNULL, stderr=open(self.root / "postgres.log", "wb"))
        import psycopg

        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(self.url("postgres"), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("PostgreSQL did not start: " + (self.root / "postgres.log").read_text()[-2000:])
                time.sleep(0.1)

    def url(self, database: str) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            # runuser passes the signal on; SIGINT is PostgreSQL's fast shutdown
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)
