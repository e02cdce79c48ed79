"""Outputs never cost the user a byte: `--out` / `Evaluation.write` may not replace an input however
it is named (qualified, capitalised, or behind a view), nor a view, nor a table recsql did not write
unless asked (`--replace`, `replace=True`), every output is checked before any is
written, files are written atomically, outputs are written before the summary is printed (a
closed stdout loses none, but is an error), files are kept as the user has them (a symbolic link is
written through, a file keeps its mode, a new one gets the umask's), an output that cannot be
written and a standard output that cannot (full, closed) are one line and a non-zero status, and
Ctrl-C ends with one line and status 130."""
from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest

import recsql
import recsql.comparison  # noqa: F401 - loaded before a test patches recsql.api.evaluate: compare binds that name
from recsql.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning")
DATA = Path(__file__).resolve().parent.parent / "fixtures" / "data"
RECS, TRUTH = str(DATA / "recs.parquet"), str(DATA / "truth.parquet")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture()
def shop(tmp_path) -> Path:
    """w.duckdb: tables recs_t (behind the view recs, and the view of a view recs2) and truth."""
    path = tmp_path / "w.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE recs_t AS SELECT 1 AS user_id, 2 AS item_id, 0.5 AS score")
    con.execute("CREATE VIEW recs AS SELECT * FROM recs_t")
    con.execute("CREATE VIEW recs2 AS SELECT * FROM main.recs")
    con.execute("CREATE TABLE truth AS SELECT 1 AS user_id, 2 AS item_id")
    con.close()
    return path


def _tables(db: Path) -> list[str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return sorted(r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall())
    finally:
        con.close()


@pytest.mark.parametrize("recs,extra,words", [
    ("recs", ["--summary-table", "recs_t"], "--summary-table 'recs_t' is an input table of this evaluation (read through 'recs')"),
    ("recs", ["--summary-table", "RECS_T"], "--summary-table 'RECS_T' is an input table"),
    ("recs2", ["--per-user-table", "main.recs_t"], "--per-user-table 'main.recs_t' is an input table"),
    ("recs", ["--summary-table", "w.truth"], "--summary-table 'w.truth' is an input table"),
    ("recs", ["--summary-table", "w.main.Truth"], "--summary-table 'w.main.Truth' is an input table"),
    ("recs", ["--summary-table", "main.TRUTH"], "--summary-table 'main.TRUTH' is an input table"),
    ("w.recs", ["--summary-table", "recs_t"], "--summary-table 'recs_t' is an input table"),
    ("recs", ["--summary-table", "m", "--per-user-table", "main.M"], "--summary-table and --per-user-table name the same table"),
], ids=["table behind a view", "behind a view, other case", "behind a view of a view", "catalog-qualified",
        "fully qualified other case", "schema-qualified other case", "input catalog-qualified", "two outputs one table"])
def test_out_over_an_input_however_named_is_refused_before_anything_is_read(shop, capsys, recs, extra, words):
    before = _sha(shop)
    assert main(["evaluate", recs, "truth", "--db", str(shop), "-m", "ndcg@10", *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and words in captured.err, captured.err
    assert _sha(shop) == before


def test_write_over_an_input_however_named_is_refused(shop):
    result = recsql.evaluate("recs2", "truth", ["ndcg@10"], con=str(shop))
    before = _sha(shop)
    for name in ("recs_t", "Recs_T", "main.recs_t", "w.main.RECS_T", "w.truth", "TRUTH"):
        with pytest.raises(recsql.RecsqlError, match="is an input table of this evaluation"):
            result.write(str(shop), summary="metrics", per_user=name)
    with pytest.raises(recsql.RecsqlError, match="summary and per_user name the same table"):
        result.write(str(shop), summary="m", per_user="M")
    with pytest.raises(recsql.RecsqlError, match="summary and per_user name the same table"):
        result.write(str(shop), summary="m", per_user="m")
    with pytest.raises(recsql.RecsqlError, match="nothing to write"):
        result.write(str(shop))
    assert _sha(shop) == before and _tables(shop) == ["recs_t", "truth"]
    con = duckdb.connect(str(shop))  # the user's own connection: the same guard
    with pytest.raises(recsql.RecsqlError, match="read through 'recs2'"):
        result.write(con, summary="RECS_T")
    result.write(con, summary="metrics", per_user="metrics_by_user")
    con.close()
    assert _tables(shop) == ["metrics", "metrics_by_user", "recs_t", "truth"]


def _rows(db: Path, table: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(f"SELECT * FROM {table}").fetchall()
    finally:
        con.close()


def test_write_never_replaces_a_table_recsql_did_not_write_unless_asked(shop):
    """A table that is not an input but that recsql did not write (the user's own) is refused, both
    outputs unwritten and the file unchanged, until replace=True; a view is refused even then; a
    table recsql wrote (its comment says so) is replaced by the next write without asking."""
    con = duckdb.connect(str(shop))
    con.execute("CREATE TABLE mine AS SELECT 42 AS answer")
    con.execute("COMMENT ON TABLE mine IS 'my notes'")
    con.execute("CREATE VIEW seen AS SELECT 1 AS one")
    con.close()
    result = recsql.evaluate("recs", "truth", ["ndcg@10"], con=str(shop))
    before = _sha(shop)
    for name in ("mine", "MINE", "main.mine", "w.main.Mine"):
        with pytest.raises(recsql.RecsqlError, match=rf"summary {name!r}: the database already has a table 'w.main.mine' "
                                                     r"that recsql did not write; choose another name, or pass "
                                                     r"replace=True to replace it"):
            result.write(str(shop), summary=name, per_user="metrics_by_user")
    for replace in (False, True):
        with pytest.raises(recsql.RecsqlError, match="per_user 'seen' is a view in the database; choose another name"):
            result.write(str(shop), summary="metrics", per_user="seen", replace=replace)
    assert _sha(shop) == before and _rows(shop, "mine") == [(42,)]
    result.write(str(shop), summary="metrics", per_user="metrics_by_user")
    result.write(str(shop), summary="metrics", per_user="metrics_by_user")  # recsql's own tables: no replace needed
    con = duckdb.connect(str(shop), read_only=True)
    comments = dict(con.execute("SELECT table_name, comment FROM duckdb_tables()").fetchall())
    con.close()
    assert comments == {"metrics": "written by recsql: summary", "metrics_by_user": "written by recsql: per_user",
                        "mine": "my notes", "recs_t": None, "truth": None}
    result.write(str(shop), summary="mine", replace=True)
    assert _rows(shop, "mine") == _rows(shop, "metrics") == [tuple(result.summary.iloc[0])]


def test_summary_table_over_a_table_recsql_did_not_write_needs_replace(shop, capsys):
    con = duckdb.connect(str(shop))
    con.execute("CREATE TABLE mine AS SELECT 42 AS answer")
    con.close()
    before = _sha(shop)
    command = ["evaluate", "recs", "truth", "--db", str(shop), "-m", "ndcg@10", "--summary-table", "metrics",
               "--per-user-table", "Mine"]
    assert main(command) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == (
        "recsql: error: --per-user-table 'Mine': the database already has a table 'w.main.mine' that recsql did not "
        "write; choose another name, or pass --replace to replace it\n")
    assert _sha(shop) == before
    assert main(command + ["--replace"]) == 0
    assert main(command) == 0  # now recsql's own table
    capsys.readouterr()
    assert sorted(map(str.lower, _tables(shop))) == ["metrics", "mine", "recs_t", "truth"]
    assert _rows(shop, "mine")[0][0] == 1  # the per-user rows: user 1's


def test_write_to_a_database_it_cannot_write_is_a_clear_error(tmp_path):
    result = recsql.evaluate(RECS, TRUTH, ["ndcg@10"], run_cols="model")
    junk = tmp_path / "notes.duckdb"
    junk.write_text("not a database\n" * 100)
    closed = duckdb.connect()
    closed.close()
    cases = [(str(tmp_path / "missing" / "out.duckdb"), ["directory", "does not exist", "create it first"]),
             (str(tmp_path), ["is a directory", ".duckdb file"]),
             (str(junk), ["'metrics'", "not a valid DuckDB database", "nothing was written"]),
             (sqlite3.connect(":memory:"), ["sqlite3.Connection", "DuckDB connection or a .duckdb path", "to_sql"]),
             (closed, ["closed", "open DuckDB connection"])]
    for con, words in cases:
        with pytest.raises(recsql.RecsqlError) as info:
            result.write(con, summary="metrics")
        assert all(word in str(info.value) for word in words), (words, str(info.value))
    assert junk.read_text() == "not a database\n" * 100
    assert not (tmp_path / "missing").exists()


def test_write_to_a_locked_database_is_a_clear_error(tmp_path):
    db = tmp_path / "locked.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, time; con = duckdb.connect({str(db)!r}); "
                               "print('open', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        result = recsql.evaluate(RECS, TRUTH, ["ndcg@10"], run_cols="model")
        with pytest.raises(recsql.RecsqlError, match="lock.*close the other program"):
            result.write(str(db), summary="metrics")
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("target,words", [("missing/users.csv", "the directory"), (".", "is a directory"),
                                          ("users.xlsx", "write to a .csv, .parquet or .json file")])
def test_per_user_that_cannot_be_written_is_refused_before_anything_is_read(tmp_path, monkeypatch, capsys,
                                                                            target, words):
    monkeypatch.chdir(tmp_path)
    assert main(["evaluate", RECS, TRUTH, "-m", "ndcg@10", "--run-col", "model", "--per-user", target]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and f"--per-user {target!r}" in captured.err and words in captured.err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("view", ["FROM '{path}'", "SELECT * FROM read_parquet('{path}')",
                                  "SELECT * FROM inner_view"])
def test_per_user_onto_the_file_a_view_reads_is_refused(tmp_path, monkeypatch, capsys, view):
    """An input view (or a view of a view) reading a file protects that file from --per-user."""
    monkeypatch.chdir(tmp_path)
    pd.read_parquet(RECS).to_parquet("recs.parquet")
    db = duckdb.connect("w.duckdb")
    db.execute("CREATE VIEW inner_view AS FROM 'recs.parquet'")
    db.execute(f"CREATE VIEW recs AS {view.format(path='recs.parquet')}")
    db.close()
    before = hashlib.sha256(Path("recs.parquet").read_bytes()).hexdigest()
    assert main(["evaluate", "recs", TRUTH, "--db", "w.duckdb", "-m", "ndcg@10", "--run-col", "model",
                 "--per-user", "recs.parquet"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "--per-user 'recs.parquet' is the input recs, a view reading" in captured.err
    assert hashlib.sha256(Path("recs.parquet").read_bytes()).hexdigest() == before


def test_per_user_file_is_replaced_atomically_and_a_failure_leaves_the_old_one(tmp_path, monkeypatch, capsys):
    out = tmp_path / "users.parquet"
    out.write_bytes(b"the previous results")
    assert main(["evaluate", RECS, TRUTH, "-m", "ndcg@10", "--run-col", "model", "--per-user", str(out)]) == 0
    assert len(pd.read_parquet(out)) > 500
    capsys.readouterr()
    before = _sha(out)

    def broken(frame, path):  # fails half-way through writing its (temporary) file
        Path(path).write_bytes(b"half")
        raise OSError(28, "No space left on device")
    monkeypatch.setitem(recsql.cli.WRITERS, ".parquet", broken)
    assert main(["evaluate", RECS, TRUTH, "-m", "ndcg@10", "--run-col", "model", "--per-user", str(out)]) == 2
    captured = capsys.readouterr()
    assert "could not be written (No space left on device)" in captured.err and captured.out == ""
    assert _sha(out) == before and sorted(p.name for p in tmp_path.iterdir()) == ["users.parquet"]


def test_outputs_are_written_before_the_summary_and_survive_a_closed_stdout(tmp_path):
    out, db = tmp_path / "users.parquet", tmp_path / "results.duckdb"
    duckdb.connect(str(db)).close()
    command = (f"{sys.executable} -m recsql evaluate {RECS} {TRUTH} -m ndcg@10 --run-col model --format csv "
               f"--per-user {out} | head -1")
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("model,n_users,ndcg@10") and done.stdout.count("\n") == 1
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr
    assert len(pd.read_parquet(out)) > 500
    closed = subprocess.run([sys.executable, "-m", "recsql", "evaluate", RECS, TRUTH, "-m", "ndcg@10", "--run-col",
                             "model", "--per-user", str(tmp_path / "again.csv")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, timeout=120, stdin=subprocess.DEVNULL,
                            preexec_fn=lambda: __import__("os").close(1))
    assert closed.returncode == 1 and "Traceback" not in closed.stderr, closed.stderr  # the summary was not printed
    assert closed.stderr.strip() == ("recsql: error: standard output is closed (>&-), so nothing could be printed; "
                                     "redirect it to a file or to /dev/null instead")
    assert len(pd.read_csv(tmp_path / "again.csv")) > 500  # but the file output was written first


STDOUT_COMMANDS = {  # every command that prints its results on stdout
    "evaluate": ["evaluate", RECS, TRUTH, "-m", "ndcg@10", "--run-col", "model"],
    "sql": ["sql", "-m", "ndcg@10"],
    "metrics": ["metrics"],
    "compare": ["compare", RECS, TRUTH, "-m", "ndcg@10", "--run-col", "model", "--resamples", "20"],
    "version": ["--version"],
    "help": ["evaluate", "--help"],
}


@pytest.mark.parametrize("where", ["full", "closed"])
@pytest.mark.parametrize("command", STDOUT_COMMANDS, ids=list(STDOUT_COMMANDS))
def test_a_full_or_closed_stdout_is_one_line_and_a_failure(command, where):
    """`> /dev/full` (ENOSPC at the write or at the last flush) and `>&-` (Python's sys.stdout is None,
    and a print would write nothing): one line naming standard output, status 1, no traceback."""
    if where == "full":
        with open("/dev/full", "w") as full:
            done = subprocess.run([sys.executable, "-m", "recsql", *STDOUT_COMMANDS[command]], stdout=full,
                                  stderr=subprocess.PIPE, text=True, timeout=180, stdin=subprocess.DEVNULL)
        said = "recsql: error: standard output could not be written (No space left on device)"
    else:
        done = subprocess.run([sys.executable, "-m", "recsql", *STDOUT_COMMANDS[command]], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, timeout=180, stdin=subprocess.DEVNULL,
                              preexec_fn=lambda: os.close(1))
        said = "recsql: error: standard output is closed (>&-)"
    lines = [line for line in done.stderr.splitlines() if line.startswith("recsql: error")]
    assert done.returncode == 1 and "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert len(lines) == 1 and lines[0].startswith(said), done.stderr


def test_report_with_a_closed_stdout_loses_nothing(tmp_path):
    """recsql report prints nothing on stdout: a closed one is no error, and no file it opens takes fd 1."""
    out = tmp_path / "r.html"
    done = subprocess.run([sys.executable, "-m", "recsql", "report", RECS, TRUTH, "-m", "ndcg@5", "--run-col", "model",
                           "--resamples", "20", "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=300, stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(1))
    assert done.returncode == 0 and "recsql: report" in done.stderr, done.stderr
    assert out.read_text(encoding="utf-8").endswith("</html>\n")


@pytest.mark.parametrize("command", [
    ["report", RECS, TRUTH, "-m", "ndcg@5", "--run-col", "model", "--out", "/proc/r.html"],
    ["evaluate", RECS, TRUTH, "-m", "ndcg@5", "--per-user", "/proc/users.csv"],
    ["report", RECS, TRUTH, "-m", "ndcg@5", "--out", "/no/such/dir/r.html"],
], ids=["report to /proc", "per-user to /proc", "report to a missing directory"])
def test_an_output_that_cannot_be_written_is_one_line_naming_the_flag(command, capsys, monkeypatch):
    """Refused before anything is read (a file is tried in the directory: os.access says yes to root
    and on /proc), in the command line's words."""
    monkeypatch.setattr(recsql.api, "evaluate", lambda *a, **k: pytest.fail("read the inputs"))
    assert main(command) == 2
    err = capsys.readouterr().err.strip().splitlines()
    flag = "--out" if "--out" in command else "--per-user"
    assert len(err) == 1 and err[0].startswith(f"recsql: error: {flag} '/"), err
    assert "name a file in" in err[0] or "create it first" in err[0]


def test_a_report_that_cannot_be_written_from_python_is_a_clear_error(tmp_path):
    evaluation = recsql.evaluate(RECS, TRUTH, ["ndcg@5"], run_cols="model")
    with pytest.raises(recsql.RecsqlError, match=r"^'/proc/r.html' could not be written \(.*\); name a file"):
        evaluation.report("/proc/r.html")


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


@pytest.mark.parametrize("kind", ["per-user", "report"])
def test_a_symbolic_link_is_written_through_and_modes_are_kept(tmp_path, kind, capsys):
    """`--per-user latest.csv` / `report --out r.html` where the path is a link: the file it points to
    gets the new content (atomically: a file beside it, renamed onto it) and the link stays a link; a
    replaced file keeps its mode; a new file gets 0666 less the umask, not a temporary file's 0600."""
    suffix = ".csv" if kind == "per-user" else ".html"

    def run(path: Path) -> None:
        command = (["evaluate", RECS, TRUTH, "-m", "ndcg@5", "--run-col", "model", "--per-user", str(path)]
                   if kind == "per-user" else
                   ["report", RECS, TRUTH, "-m", "ndcg@5", "--run-col", "model", "--resamples", "20", "--out", str(path)])
        assert main(command) == 0, capsys.readouterr().err

    mask = os.umask(0o027)
    try:
        fresh = tmp_path / f"new{suffix}"
        run(fresh)
        assert _mode(fresh) == 0o640  # 0666 & ~0027
        target_dir = tmp_path / "runs"
        target_dir.mkdir()
        target = target_dir / f"2030-01-01{suffix}"
        target.write_text("the old results\n")
        target.chmod(0o604)
        link = tmp_path / f"latest{suffix}"
        link.symlink_to(os.path.relpath(target, tmp_path))
        run(link)
    finally:
        os.umask(mask)
    assert link.is_symlink() and os.readlink(link) == os.path.relpath(target, tmp_path)
    assert "the old results" not in target.read_text() and len(target.read_text()) > 1000
    assert _mode(target) == 0o604
    assert sorted(p.name for p in target_dir.iterdir()) == [target.name]  # no temporary file left
    dangling = tmp_path / f"dangling{suffix}"
    dangling.symlink_to(target_dir / f"later{suffix}")
    run(dangling)
    assert dangling.is_symlink() and (target_dir / f"later{suffix}").stat().st_size > 1000


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> tuple[str, str]:
    folder = tmp_path_factory.mktemp("big")
    recs, truth = str(folder / "recs.parquet"), str(folder / "truth.parquet")
    duckdb.sql(f"COPY (SELECT (i // 50)::BIGINT AS user_id, (hash(i) % 100000)::BIGINT AS item_id, random() AS score "
               f"FROM range(3000000) t(i)) TO '{recs}'")
    duckdb.sql(f"COPY (SELECT (i // 5)::BIGINT AS user_id, (hash(i * 7) % 100000)::BIGINT AS item_id "
               f"FROM range(300000) t(i)) TO '{truth}'")
    return recs, truth


# The child says "ready" on stderr once recsql is imported (Python's start-up is not recsql's to
# handle), then runs the CLI's main(); the signal lands that long after the evaluation started.
_CHILD = ("import sys, recsql.cli; sys.stderr.write('ready\\n'); sys.stderr.flush(); "
          "sys.exit(recsql.cli.main(sys.argv[1:]))")


@pytest.mark.parametrize("signum,code,line", [(signal.SIGINT, 130, "recsql: interrupted\n"),
                                              (signal.SIGTERM, 143, "recsql: terminated\n")])
@pytest.mark.parametrize("after", [0.3, 1.5])  # seconds into the evaluation (it takes several)
def test_a_signal_ends_with_one_line_its_status_and_nothing_left(big, tmp_path, after, signum, code, line):
    """Ctrl-C (SIGINT) and kill (SIGTERM) mid-query: one line, the shell's status, no output, no
    temporary file and no spill directory left behind."""
    out = tmp_path / "out" / "users.parquet"
    out.parent.mkdir()
    scratch = tmp_path / "tmp"  # the child's temporary directory: where DuckDB's spill directory goes
    scratch.mkdir()
    # kendall@50 pairs every two of a user's top 50 (73M pair rows here): an evaluation that takes
    # seconds, so the signal lands mid-query
    run = subprocess.Popen([sys.executable, "-c", _CHILD, "evaluate", *big, "-m", "ndcg@10", "-m", "map@10",
                            "-m", "kendall@50", "--duplicates", "best", "--per-user", str(out)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "TMPDIR": str(scratch)})
    assert run.stderr.readline() == "ready\n"
    time.sleep(after)
    run.send_signal(signum)
    stdout, stderr = run.communicate(timeout=120)
    assert run.returncode != 0, "the evaluation finished before the signal: make the input bigger"
    assert run.returncode == code and stderr == line and stdout == "", stderr
    assert list(out.parent.iterdir()) == []  # no output, no temporary file
    assert list(scratch.iterdir()) == []  # no spill directory


# A signal whose KeyboardInterrupt something swallows (a finaliser, a weak reference's callback, a C
# library's own signal check: Python runs the handler wherever the main thread is): SWALLOW names the
# step, which sends itself the signal and catches what the handler raises.
_SWALLOWING = ("import os, signal, sys, time\n"
               "import recsql.api, recsql.cli, recsql.cli_output\n"
               "def swallowing(function):\n"
               "    def wrapped(*args, **kwargs):\n"
               "        result = function(*args, **kwargs)\n"
               "        try:\n"
               "            os.kill(os.getpid(), SIGNUM); time.sleep(5)\n"
               "        except KeyboardInterrupt:\n"
               "            pass\n"
               "        return result\n"
               "    return wrapped\n"
               "if SWALLOW == 'evaluation':\n"
               "    recsql.api.evaluate = swallowing(recsql.api.evaluate)\n"
               "else:\n"
               "    recsql.cli_output.WRITERS['.parquet'] = swallowing(recsql.cli_output.WRITERS['.parquet'])\n"
               "sys.exit(recsql.cli.main(sys.argv[1:]))")


@pytest.mark.parametrize("signum,code,line", [(signal.SIGINT, 130, "recsql: interrupted\n"),
                                              (signal.SIGTERM, 143, "recsql: terminated\n")])
@pytest.mark.parametrize("swallow", ["evaluation", "writing"])
def test_a_signal_whose_interrupt_was_swallowed_still_ends_the_run(tmp_path, swallow, signum, code, line):
    """The run stops at the next commit point (each output is committed on its own): no file, no
    table, no summary, and the signal's status."""
    out = tmp_path / "out"
    out.mkdir()
    db = tmp_path / "results.duckdb"
    duckdb.connect(str(db)).close()
    child = subprocess.run([sys.executable, "-c", _SWALLOWING.replace("SIGNUM", str(int(signum)))
                            .replace("SWALLOW", repr(swallow)), "evaluate", RECS, TRUTH, "-m", "ndcg@10", "--duplicates", "best",
                            "--per-user", str(out / "users.parquet"), "--db", str(db), "--summary-table", "summary"],
                           capture_output=True, text=True, timeout=120)
    assert (child.returncode, child.stderr, child.stdout) == (code, line, ""), child.stderr
    assert list(out.iterdir()) == []
    with duckdb.connect(str(db), read_only=True) as con:  # the table is committed before the file is written
        assert con.sql("SHOW TABLES").fetchall() == ([] if swallow == "evaluation" else [("summary",)])


# The console command's entry point runs; "up" is said once its SIGINT handler is in place (a Ctrl-C
# before that, in Python's start-up or between the import of recsql.entry and the call of its main,
# is Python's own KeyboardInterrupt, not recsql's to handle).
_FRESH = ("import signal, sys\n"
          "install = signal.signal\n"
          "def announce(signum, handler):\n"
          "    previous = install(signum, handler)\n"
          "    if signum == signal.SIGINT and not hasattr(announce, 'said'):\n"
          "        announce.said = True; sys.stderr.write('up\\n'); sys.stderr.flush()\n"
          "    return previous\n"
          "signal.signal = announce\n"
          "from recsql.entry import main\n"
          "sys.argv = ['recsql', 'metrics']; sys.exit(main())")


# A Ctrl-C inside an extension module's initialisation, which the import turns into another error (as
# pandas reports an interrupted numpy import: "ImportError: Unable to import required dependency numpy").
_SWALLOWED = ("import os, signal, sys, time\n"
              "class Interrupted:\n"
              "    def find_spec(self, name, path=None, target=None):\n"
              "        if name == 'recsql.cli':\n"
              "            try:\n"
              "                os.kill(os.getpid(), signal.SIGINT); time.sleep(5)\n"
              "            except KeyboardInterrupt:\n"
              "                raise ImportError('Unable to import required dependency numpy') from None\n"
              "sys.meta_path.insert(0, Interrupted())\n"
              "from recsql.entry import main\n"
              "sys.argv = ['recsql', 'metrics']; sys.exit(main())")


# A Ctrl-C that lands inside a weakref callback (as the import system's module-lock cleanup runs one):
# Python cannot raise the KeyboardInterrupt there and reports it as "Exception ignored in ...".
_IN_CALLBACK = ("import os, signal, sys, time, weakref\n"
                "class Thing:\n"
                "    pass\n"
                "class Trigger:\n"
                "    def find_spec(self, name, path=None, target=None):\n"
                "        if name == 'recsql.specs' and not hasattr(self, 'done'):\n"
                "            self.done = True\n"
                "            thing = Thing()\n"
                "            def gone(_):\n"
                "                os.kill(os.getpid(), signal.SIGINT); time.sleep(0.5)\n"
                "            self.ref = weakref.ref(thing, gone)\n"
                "            del thing\n"
                "sys.meta_path.insert(0, Trigger())\n"
                "from recsql.entry import main\n"
                "sys.argv = ['recsql', 'metrics']; sys.exit(main())")


def test_ctrl_c_inside_a_callback_python_cannot_raise_from_ends_with_one_line():
    """The run ends as interrupted (the signal was recorded), with the one line and no "Exception ignored"
    traceback before it."""
    child = subprocess.run([sys.executable, "-c", _IN_CALLBACK], capture_output=True, text=True, timeout=60)
    assert (child.returncode, child.stderr) == (130, "recsql: interrupted\n"), (child.returncode, child.stderr)


def test_ctrl_c_that_the_import_turns_into_another_error_ends_with_one_line():
    """The same when the interrupted import raises something else than KeyboardInterrupt."""
    child = subprocess.run([sys.executable, "-c", _SWALLOWED], capture_output=True, text=True, timeout=60)
    assert (child.returncode, child.stderr) == (130, "recsql: interrupted\n"), (child.returncode, child.stderr)


# A Ctrl-C that arrives just as a SIGINT handler is installed: the n-th install (1: the entry point's,
# before the import; 2: the command line's own) sends it, so the handler runs as the install returns.
_AT_INSTALL = ("import os, signal, sys\n"
               "install, calls = signal.signal, []\n"
               "def patched(signum, handler):\n"
               "    previous = install(signum, handler)\n"
               "    if signum == signal.SIGINT:\n"
               "        calls.append(handler)\n"
               "        if len(calls) == N:\n"
               "            os.kill(os.getpid(), signal.SIGINT)\n"
               "    return previous\n"
               "signal.signal = patched\n"
               "from recsql.entry import main\n"
               "sys.argv = ['recsql', 'metrics']; sys.exit(main())")


@pytest.mark.parametrize("install", [1, 2])
def test_ctrl_c_just_as_a_handler_is_installed_ends_with_one_line(install):
    """The entry point's handler and the command line's are installed where their own catching
    applies: a Ctrl-C landing the moment either takes effect is one line and status 130."""
    child = subprocess.run([sys.executable, "-c", _AT_INSTALL.replace("N:", f"{install}:")], capture_output=True,
                           text=True, timeout=60)
    assert (child.returncode, child.stderr) == (130, "recsql: interrupted\n"), (child.returncode, child.stderr)


@pytest.mark.parametrize("after", [0.0, 0.02, 0.05, 0.1, 0.2])
def test_ctrl_c_while_recsql_is_importing_ends_with_one_line(after):
    """Importing the command line (pandas, DuckDB, sqlglot) takes a moment: Ctrl-C then is one line
    and status 130, never a traceback (or, past the import, the command's own result)."""
    child = subprocess.Popen([sys.executable, "-c", _FRESH], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    assert child.stderr.readline() == "up\n"
    time.sleep(after)
    child.send_signal(signal.SIGINT)
    stdout, stderr = child.communicate(timeout=60)
    if child.returncode == -signal.SIGINT:
        # `recsql metrics` is quick: the Ctrl-C came once its output was whole and Python was exiting
        # (interpreter shutdown restores the default handler, as for any program)
        whole = subprocess.run([sys.executable, "-m", "recsql", "metrics"], capture_output=True, text=True)
        assert (stdout, stderr) == (whole.stdout, ""), (stderr, len(stdout), len(whole.stdout))
        return
    assert (child.returncode, stderr) in ((130, "recsql: interrupted\n"), (0, "")), (child.returncode, stderr)
