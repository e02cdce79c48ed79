"""Start real, throw-away database servers for the tests.

``postgres_server()`` and ``mariadb_server()`` are context managers: each creates a temporary
directory, initialises a fresh data directory there, starts the server listening on 127.0.0.1
on a free port (plus a unix socket inside the temporary directory), creates the database
``recsql_test`` and a password login that owns it, yields the connection keywords, and on exit
stops the server and deletes the directory.

    with postgres_server() as params:      # psycopg.connect(**params)
        ...
    with mariadb_server() as params:       # pymysql.connect(**params)
        ...

A missing server binary raises ``RuntimeError`` naming it (the engine tests then fail rather
than skip); a server that does not accept connections within ``TIMEOUT`` seconds raises
``RuntimeError`` with the tail of its log. ``.ci/engines.sh`` installs both servers.

A process killed before its ``with`` block exits (``kill -9`` of pytest or of an xdist worker)
runs no teardown, and a server outlives it: pg_ctl starts PostgreSQL detached. So each server gets
a reaper (:func:`reap_when_gone`), a small process of its own that SIGKILLs the server and deletes
its directory once the process that started it is gone, and exits by itself when a normal teardown
has deleted the directory.
"""
from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TIMEOUT = 60.0
DBNAME = "recsql_test"
USER = "recsql"
PASSWORD = "recsql-test-pw"
INSTALL_HINT = "install it with `bash .ci/engines.sh` (Debian packages postgresql / mariadb-server)"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def run(cmd: list[str], log: Path, what: str, cwd: Path, timeout: float = TIMEOUT) -> None:
    """Run ``cmd`` appending its output to ``log``; raise RuntimeError with the log tail on failure."""
    with open(log, "ab") as out:
        out.write(("\n$ " + " ".join(cmd) + "\n").encode())
        out.flush()
        try:
            proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  cwd=cwd, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{what} timed out after {timeout:.0f} s; log tail:\n{log_tail(log)}") from None
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {proc.returncode}); log tail:\n{log_tail(log)}")


# The reaper's program: argv = owner pid, server directory, server pid file.
_REAPER = """
import os, shutil, signal, sys, time
owner, folder, pidfile = int(sys.argv[1]), sys.argv[2], sys.argv[3]
while os.path.isdir(folder):
    try:
        os.kill(owner, 0)
    except ProcessLookupError:
        try:
            with open(pidfile) as f:
                pid = int(f.readline())
            with open(f"/proc/{pid}/cmdline", "rb") as f:  # the server still, not a reused pid
                if folder.encode() in f.read():
                    os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass
        shutil.rmtree(folder, ignore_errors=True)
        break
    time.sleep(0.5)
"""


def reap_when_gone(folder: Path, pidfile: Path) -> subprocess.Popen:
    """Start the reaper of the server whose directory is ``folder`` and whose pid ``pidfile`` holds:
    it polls this process every 0.5 s; once it is gone, it SIGKILLs the server (if the pid is still a
    process whose command line names ``folder``) and deletes ``folder``;
    once ``folder`` is gone (a normal teardown), it exits. In a session of its own, so that a signal to
    this process's group does not reach it."""
    return subprocess.Popen([sys.executable, "-c", _REAPER, str(os.getpid()), str(folder), str(pidfile)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def wait_until(connect, deadline: float, what: str, log: Path, alive=lambda: True) -> Any:
    """Call ``connect()`` until it returns, the deadline passes or ``alive()`` turns false."""
    last: Exception | None = None
    while time.monotonic() < deadline:
        if not alive():
            raise RuntimeError(f"{what} exited during start-up ({last!r}); log tail:\n{log_tail(log)}")
        try:
            return connect()
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready yet"
            last = exc
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not accept connections within {TIMEOUT:.0f} s ({last!r}); "
                       f"log tail:\n{log_tail(log)}")


# --------------------------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------------------------

def postgres_bindir() -> Path:
    """The directory holding initdb and pg_ctl: ``pg_config --bindir`` or /usr/lib/postgresql/*/bin."""
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10)
            if out.returncode == 0 and out.stdout.strip():
                candidates.append(Path(out.stdout.strip()))
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                      key=lambda p: [int(x) if x.isdigit() else 0 for x in Path(p).parent.name.split(".")],
                      reverse=True)
    candidates += [Path(p) for p in versions]
    for found in (shutil.which("initdb"), shutil.which("pg_ctl")):
        if found:
            candidates.append(Path(found).parent)
    for bindir in candidates:
        if (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file():
            return bindir
    raise RuntimeError("PostgreSQL server binary `initdb`/`pg_ctl` not found (looked at pg_config --bindir, "
                       f"/usr/lib/postgresql/*/bin and PATH); {INSTALL_HINT}")


def _as_postgres_user() -> tuple[list[str], int | None, int | None]:
    """PostgreSQL refuses to run as root: as root, run its tools as the `postgres` system user."""
    if os.geteuid() != 0:
        return [], None, None
    import pwd
    try:
        entry = pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError("running as root but there is no `postgres` system user to run the PostgreSQL "
                           f"server as; {INSTALL_HINT}") from None
    runuser = shutil.which("runuser") or "/usr/sbin/runuser"
    if not os.path.exists(runuser):
        raise RuntimeError("running as root and `runuser` (util-linux) is missing: cannot start PostgreSQL "
                           "as the `postgres` user")
    return [runuser, "-u", "postgres", "--"], entry.pw_uid, entry.pw_gid


def _temp_root() -> str | None:
    # The unprivileged user must be able to reach the directory (a TMPDIR under /root is not
    # reachable) and the unix socket path must stay short (< 108 bytes): prefer /tmp.
    return "/tmp" if os.path.isdir("/tmp") else None


@contextlib.contextmanager
def postgres_server() -> Iterator[dict[str, Any]]:
    """A fresh PostgreSQL server; yields ``psycopg.connect`` keywords for ``recsql_test``."""
    bindir = postgres_bindir()
    import psycopg  # the tests' client; imported here so a missing binary is reported first

    prefix, uid, gid = _as_postgres_user()
    tmp = Path(tempfile.mkdtemp(prefix="recsql-pg-", dir=_temp_root()))
    data, log = tmp / "data", tmp / "server.log"
    started = False
    reaper: subprocess.Popen | None = None
    try:
        if uid is not None:
            os.chown(tmp, uid, gid)
        os.chmod(tmp, 0o700)
        deadline = time.monotonic() + TIMEOUT
        run(prefix + [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth-local=trust",
                      "--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync"],
            tmp / "initdb.log", "PostgreSQL initdb", cwd=tmp)
        # Password logins over TCP for the test role, trust for the admin over the private socket.
        options = " ".join([
            "-c listen_addresses=127.0.0.1", "-c unix_socket_directories=" + str(tmp),
            "-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off",
            "-c max_connections=20", "-c shared_buffers=32MB", "-c timezone=UTC",
        ])
        for attempt in range(3):  # the free port may be taken between finding and binding it
            port = free_port()
            try:
                run(prefix + [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w",
                              "-t", str(max(1, int(deadline - time.monotonic()))),
                              "-o", f"-p {port} {options}", "start"],
                    tmp / "pg_ctl.log", "PostgreSQL pg_ctl start", cwd=tmp)
                started = True
                reaper = reap_when_gone(tmp, data / "postmaster.pid")
                break
            except RuntimeError as exc:
                started = (data / "postmaster.pid").exists()
                if started or attempt == 2 or "already in use" not in log_tail(log, 50):
                    raise RuntimeError(f"{exc}\nserver log tail:\n{log_tail(log)}") from None

        def admin():
            return psycopg.connect(host=str(tmp), port=port, user="postgres", dbname="postgres",
                                   autocommit=True, connect_timeout=5)

        with wait_until(admin, deadline, "PostgreSQL", log) as con:
            con.execute(f"CREATE ROLE {USER} LOGIN PASSWORD '{PASSWORD}'")
            con.execute(f"CREATE DATABASE {DBNAME} OWNER {USER} ENCODING 'UTF8' TEMPLATE template0")
        params = {"host": "127.0.0.1", "port": port, "user": USER, "password": PASSWORD, "dbname": DBNAME}
        with wait_until(lambda: psycopg.connect(**params, connect_timeout=5), deadline, "PostgreSQL", log):
            pass
        yield params
    finally:
        try:
            if started:
                with contextlib.suppress(RuntimeError):
                    run(prefix + [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                        tmp / "pg_ctl.log", "PostgreSQL pg_ctl stop", cwd=tmp, timeout=30)
                _kill_pidfile(data / "postmaster.pid")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            _stop_reaper(reaper)


def _stop_reaper(reaper: subprocess.Popen | None) -> None:
    """After a normal teardown (the directory is gone): the reaper exits by itself; wait for it."""
    if reaper is not None:
        try:
            reaper.wait(timeout=5)
        except subprocess.TimeoutExpired:
            reaper.kill()
            reaper.wait()


def _kill_pidfile(pidfile: Path) -> None:
    """Last resort when pg_ctl stop failed: SIGKILL the postmaster named in its pid file."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        pid = int(pidfile.read_text().splitlines()[0])
        os.kill(pid, signal.SIGKILL)


# --------------------------------------------------------------------------------------------
# MariaDB
# --------------------------------------------------------------------------------------------

def _find(name: str, extra: tuple[str, ...] = ("/usr/sbin", "/usr/libexec", "/usr/local/sbin")) -> str:
    found = shutil.which(name)
    if found:
        return found
    for directory in extra:
        path = os.path.join(directory, name)
        if os.access(path, os.X_OK):
            return path
    raise RuntimeError(f"MariaDB server binary `{name}` not found (PATH, {', '.join(extra)}); {INSTALL_HINT}")


def mariadb_binaries() -> tuple[str, str]:
    """(mariadb-install-db, mariadbd); the old mysql_* / mysqld names are accepted too."""
    try:
        install = _find("mariadb-install-db")
    except RuntimeError:
        try:
            install = _find("mysql_install_db")
        except RuntimeError:
            raise RuntimeError("MariaDB server binary `mariadb-install-db` not found; " + INSTALL_HINT) from None
    try:
        server = _find("mariadbd")
    except RuntimeError:
        try:
            server = _find("mysqld")
        except RuntimeError:
            raise RuntimeError("MariaDB server binary `mariadbd` not found (PATH, /usr/sbin); "
                               + INSTALL_HINT) from None
    return install, server


@contextlib.contextmanager
def mariadb_server() -> Iterator[dict[str, Any]]:
    """A fresh MariaDB server; yields ``pymysql.connect`` keywords for ``recsql_test``."""
    install_db, mariadbd = mariadb_binaries()
    import pymysql  # the tests' client; imported here so a missing binary is reported first

    tmp = Path(tempfile.mkdtemp(prefix="recsql-mariadb-", dir=_temp_root()))
    data, log, sock = tmp / "data", tmp / "server.log", tmp / "mysql.sock"
    # As root the server must be told to stay root (it refuses otherwise); as anyone else it
    # runs as that user and --user is ignored.
    user = ["--user=root"] if os.geteuid() == 0 else []
    proc: subprocess.Popen | None = None
    reaper: subprocess.Popen | None = None
    try:
        deadline = time.monotonic() + TIMEOUT
        run([install_db, "--no-defaults", f"--datadir={data}", *user, "--auth-root-authentication-method=normal",
             "--skip-test-db", "--skip-name-resolve"],
            tmp / "install-db.log", "mariadb-install-db", cwd=tmp)
        flags = [
            "--no-defaults", f"--datadir={data}", f"--socket={sock}", f"--pid-file={tmp / 'mariadbd.pid'}",
            f"--tmpdir={tmp}", f"--log-error={log}", "--bind-address=127.0.0.1", "--skip-name-resolve",
            "--skip-log-bin", "--character-set-server=utf8mb4", "--collation-server=utf8mb4_bin",
            "--default-time-zone=+00:00", "--innodb-buffer-pool-size=64M", "--innodb-log-file-size=16M",
            "--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0", "--max-connections=20",
            "--performance-schema=OFF", "--innodb-buffer-pool-load-at-startup=OFF",
            "--innodb-buffer-pool-dump-at-shutdown=OFF", *user,
        ]
        for attempt in range(3):  # the free port may be taken between finding and binding it
            port = free_port()
            out = open(tmp / "mariadbd.out", "ab")
            proc = subprocess.Popen([mariadbd, *flags, f"--port={port}"], stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=tmp)
            out.close()

            def root():
                return pymysql.connect(unix_socket=str(sock), user="root", password="", connect_timeout=5,
                                       autocommit=True)

            try:
                con = wait_until(root, deadline, "MariaDB (mariadbd)", log, alive=lambda: proc.poll() is None)
                reaper = reap_when_gone(tmp, tmp / "mariadbd.pid")
                break
            except RuntimeError:
                if proc.poll() is None or attempt == 2 or "already in use" not in log_tail(log, 50):
                    raise
                proc = None
        with con:
            with con.cursor() as cur:
                cur.execute(f"CREATE DATABASE {DBNAME} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
                for host in ("127.0.0.1", "localhost"):
                    cur.execute(f"CREATE USER '{USER}'@'{host}' IDENTIFIED BY '{PASSWORD}'")
                    cur.execute(f"GRANT ALL PRIVILEGES ON {DBNAME}.* TO '{USER}'@'{host}'")
        params = {"host": "127.0.0.1", "port": port, "user": USER, "password": PASSWORD, "database": DBNAME,
                  "charset": "utf8mb4", "collation": "utf8mb4_bin"}
        wait_until(lambda: pymysql.connect(**params, connect_timeout=5), deadline, "MariaDB (mariadbd)", log,
                   alive=lambda: proc.poll() is None).close()
        yield params
    finally:
        try:
            if proc is not None and proc.poll() is None:
                proc.terminate()  # SIGTERM is mariadbd's clean shutdown
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            _stop_reaper(reaper)


@contextlib.contextmanager
def spark_session(app: str, threads: int) -> Iterator[Any]:
    """A local SparkSession (UTC, no UI, ``threads`` cores and shuffle partitions) whose warehouse is a
    temporary directory, not ``spark-warehouse/`` in the working directory; stopped and removed on exit."""
    from pyspark.sql import SparkSession

    warehouse = tempfile.mkdtemp(prefix="recsql-spark-warehouse-")
    try:
        session = (SparkSession.builder.master(f"local[{threads}]").appName(app)
                   .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", str(threads))
                   .config("spark.sql.warehouse.dir", warehouse)
                   .config("spark.sql.session.timeZone", "UTC").getOrCreate())
        try:
            yield session
        finally:
            session.stop()
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)
