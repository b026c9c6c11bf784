"""The pit's store on both databases: SQLite in the test's directory, a real PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.pit.store import Store
from tests.postgres import PostgresServer


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty store of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'pit.sqlite'}"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.new_database()


@pytest.fixture
def pg_url(postgres: PostgresServer) -> str:
    """A fresh, empty PostgreSQL database."""
    return postgres.new_database()


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """A migrated store."""
    opened = Store(store_url)
    opened.migrate()
    yield opened
    opened.close()
