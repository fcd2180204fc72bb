"""One PostgreSQL server for the store tests; each test gets a database of its own."""

from __future__ import annotations

import itertools

import pytest

from tests.postgres import PostgresServer

_names = itertools.count()


@pytest.fixture(scope="session")
def postgres():
    server = PostgresServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(postgres) -> str:
    return postgres.create_database(f"mast_{next(_names)}")
