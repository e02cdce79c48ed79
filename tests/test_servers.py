"""The engine test infrastructure works here: both database servers start for real (never
skipped: a missing server fails), accept a connection and run plain and window-function SQL,
and the in-process engines (Spark local mode, chdb, DataFusion) each run ``SELECT 1``."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.servers import mariadb_server, postgres_server, spark_session

WINDOW = ("SELECT g, v, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v DESC) AS rn "
          "FROM (SELECT 'a' AS g, 1 AS v UNION ALL SELECT 'a', 2 UNION ALL SELECT 'b', 3) AS t "
          "ORDER BY g, rn")
WINDOW_ROWS = [("a", 2, 1), ("a", 1, 2), ("b", 3, 1)]


@pytest.fixture(scope="module")
def postgres():
    with postgres_server() as params:
        yield params


@pytest.fixture(scope="module")
def mariadb():
    with mariadb_server() as params:
        yield params


def test_postgres_runs_sql(postgres):
    import psycopg

    assert postgres["host"] == "127.0.0.1" and postgres["dbname"] == "recsql_test"
    with psycopg.connect(**postgres) as con:
        assert con.execute("SELECT 1").fetchone() == (1,)
        assert [tuple(r) for r in con.execute(WINDOW).fetchall()] == WINDOW_ROWS
        assert con.execute("SELECT current_user, current_database()").fetchone() == (postgres["user"], "recsql_test")
        con.execute("CREATE TABLE t (x BIGINT, s TEXT)")
        con.execute("INSERT INTO t VALUES (1, 'a'), (2, 'B')")
        # C collation: byte order, so upper case sorts before lower case.
        assert [r[0] for r in con.execute("SELECT s FROM t ORDER BY s").fetchall()] == ["B", "a"]


def test_postgres_stops_and_cleans_up():
    import psycopg

    before = _server_dirs("recsql-pg-")
    with postgres_server() as params:
        new = _server_dirs("recsql-pg-") - before
        psycopg.connect(**params).close()
    assert new and not any(Path(d).exists() for d in new)
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(**params, connect_timeout=2)


def test_mariadb_runs_sql(mariadb):
    import pymysql

    assert mariadb["host"] == "127.0.0.1" and mariadb["database"] == "recsql_test"
    con = pymysql.connect(**mariadb)
    try:
        with con.cursor() as cur:
            cur.execute("SELECT 1")
            assert cur.fetchone() == (1,)
            cur.execute(WINDOW)
            assert [tuple(r) for r in cur.fetchall()] == WINDOW_ROWS
            cur.execute("SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA "
                        "WHERE SCHEMA_NAME = 'recsql_test'")
            assert cur.fetchone() == ("utf8mb4", "utf8mb4_bin")
            cur.execute("SELECT @@collation_database, @@character_set_database")
            assert cur.fetchone() == ("utf8mb4_bin", "utf8mb4")
            # A table made without an explicit collation inherits utf8mb4_bin: case-sensitive
            # comparison and no merging of 'a' and 'A' in GROUP BY.
            cur.execute("CREATE TABLE t (x BIGINT, s VARCHAR(255))")
            cur.execute("INSERT INTO t VALUES (1, 'a'), (2, 'A'), (3, 'B')")
            cur.execute("SELECT COUNT(DISTINCT s) FROM t")
            assert cur.fetchone() == (3,)
            cur.execute("SELECT s FROM t ORDER BY s")
            assert [r[0] for r in cur.fetchall()] == ["A", "B", "a"]
        con.commit()
    finally:
        con.close()


def test_mariadb_stops_and_cleans_up():
    import pymysql

    before = _server_dirs("recsql-mariadb-")
    with mariadb_server() as params:
        new = _server_dirs("recsql-mariadb-") - before
        pymysql.connect(**params).close()
    assert new and not any(Path(d).exists() for d in new)
    with pytest.raises(pymysql.err.OperationalError):
        pymysql.connect(**params, connect_timeout=2)


def test_missing_server_binary_is_a_clear_error(monkeypatch):
    from support import servers

    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(servers.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(servers, "_find", _not_found)
    with pytest.raises(RuntimeError, match="initdb"):
        with postgres_server():
            pass
    with pytest.raises(RuntimeError, match="mariadb-install-db"):
        with mariadb_server():
            pass


def _not_found(name, extra=()):
    raise RuntimeError(f"MariaDB server binary `{name}` not found")


def _server_dirs(prefix: str) -> set[str]:
    import tempfile

    root = "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()
    return {str(p) for p in Path(root).glob(prefix + "*")}


@pytest.fixture(scope="module")
def spark():
    with spark_session("recsql-test-servers", 1) as session:
        yield session


def test_spark_select_1(spark):
    assert [tuple(r) for r in spark.sql("SELECT 1").collect()] == [(1,)]
    warehouse = Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))
    assert not warehouse.resolve().is_relative_to(Path.cwd().resolve())  # no spark-warehouse/ where pytest runs
    assert [tuple(r) for r in spark.sql(WINDOW).collect()] == WINDOW_ROWS


def test_chdb_select_1():
    from chdb import session

    sess = session.Session()
    try:
        assert sess.query("SELECT 1", "CSV").bytes().strip() == b"1"
        assert sess.query(WINDOW, "CSV").bytes().decode().split() == ['"a",2,1', '"a",1,2', '"b",3,1']
    finally:
        sess.close()


def test_datafusion_select_1():
    import datafusion

    ctx = datafusion.SessionContext()
    table = ctx.sql("SELECT 1 AS one").to_arrow_table()
    assert table.column("one").to_pylist() == [1]
    assert [tuple(r.values()) for r in ctx.sql(WINDOW).to_arrow_table().to_pylist()] == WINDOW_ROWS


_OWNER = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from support import servers
with getattr(servers, sys.argv[2])() as params:
    print(json.dumps(params), flush=True)
    time.sleep(600)
"""


def _server_pid(prefix: str, port: int) -> tuple[int, Path]:
    """The pid and directory of the server of ``prefix`` listening on ``port``: the server whose pid
    file (PostgreSQL's postmaster.pid, mariadbd.pid) names a process started with that port."""
    for folder in map(Path, _server_dirs(prefix)):
        for pidfile in (folder / "data" / "postmaster.pid", folder / "mariadbd.pid"):
            if pidfile.is_file():
                pid = int(pidfile.read_text().split()[0])
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                if f"-p {port} " in cmdline or f"--port={port}" in cmdline:
                    return pid, folder
    raise AssertionError(f"no {prefix} server listens on port {port}")


@pytest.mark.parametrize("server, prefix", [("postgres_server", "recsql-pg-"), ("mariadb_server", "recsql-mariadb-")])
def test_a_killed_owner_leaves_no_server_behind(server, prefix):
    """kill -9 of the process that started a server runs no teardown: its reaper SIGKILLs the
    server and deletes its directory (tests/support/servers.py, reap_when_gone)."""
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, str(Path(__file__).parent), server],
                             stdout=subprocess.PIPE, text=True)
    try:
        params = json.loads(owner.stdout.readline())
        pid, folder = _server_pid(prefix, params["port"])
        assert folder.is_dir()
    finally:
        owner.kill()
        owner.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (folder.exists() or Path(f"/proc/{pid}").exists()):
        time.sleep(0.2)
    assert not Path(f"/proc/{pid}").exists(), f"the {server} (pid {pid}) outlived its owner"
    assert not folder.exists(), f"{folder} outlived its owner"
