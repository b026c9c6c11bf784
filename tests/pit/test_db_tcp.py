"""A pit's PostgreSQL connections find a vanished database host within a minute: libpq's TCP
keep-alive and user timeout are set on each (controller/pit/db.py, TCP_SETTINGS), unless the
store's URL names its own."""

from __future__ import annotations

from controller.pit.db import TCP_SETTINGS, Db, postgresql_conninfo
from tests.postgres import PostgresServer


def test_the_tcp_settings_are_added_where_the_url_names_none() -> None:
    from psycopg.conninfo import conninfo_to_dict

    made = conninfo_to_dict(postgresql_conninfo("postgres://pit:s%40cret@db.floor:5433/pit"))
    assert made["host"] == "db.floor"
    assert made["port"] == "5433"
    assert made["password"] == "s@cret"
    assert made["dbname"] == "pit"
    for key, value in TCP_SETTINGS.items():
        assert made[key] == value, key
    own = conninfo_to_dict(
        postgresql_conninfo("postgresql://pit@db/pit?keepalives_idle=120&tcp_user_timeout=0")
    )
    assert own["keepalives_idle"] == "120"
    assert own["tcp_user_timeout"] == "0"
    assert own["keepalives_count"] == TCP_SETTINGS["keepalives_count"]


def test_a_store_connection_carries_them(postgres: PostgresServer) -> None:
    db = Db(postgres.new_database())
    try:
        parameters = db._conn.info.get_parameters()
        for key, value in TCP_SETTINGS.items():
            assert parameters.get(key) == value, (key, parameters)
        assert db.all("SELECT 1") == [(1,)]
    finally:
        db.close()
