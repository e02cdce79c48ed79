"""The repository stands alone: no file names a path outside it or a document that is not in it,
and every fixture file the tests read is inside it.

A fresh clone has nothing beside it, so a test, docstring, SQL comment or README line that points
at a sibling directory, an absolute path of the machine it was written on, or a planning document
kept elsewhere is a broken reference. Definitions are cited from the documentation in docs/ instead.

The forbidden strings are assembled from pieces below, so this file does not match its own
patterns and needs no exception.
"""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from pathlib import Path

from support.cases import FIXTURES, TREC_EVAL

REPO = Path(__file__).resolve().parent.parent

# Directories never scanned when walking a tree that is not a git checkout (an unpacked sdist).
SKIP_DIRS = {".git", "build", "dist", "__pycache__", ".venv", "venv", ".hypothesis", ".pytest_cache", ".benchmarks",
             "node_modules"}
SKIP_RELATIVE = {"benchmarks/data"}  # generated benchmark inputs (ignored by git)
# Binary formats: never read as text (a NUL byte in the first block also marks a file as binary).
BINARY_SUFFIXES = {".parquet", ".png", ".jpg", ".jpeg", ".gif", ".pdf", ".duckdb", ".db", ".sqlite", ".gz", ".zip",
                   ".whl", ".pyc", ".arrow", ".feather", ".npy", ".xlsx"}

_SPEC = "SP" + "EC"
_SEP = "/"
_ABSOLUTE = r"(?<![\w.~/-])"  # the path starts here: not the tail of a relative path such as data/work/...
FORBIDDEN = [
    ("a sibling directory of the checkout", re.compile(re.escape(".." + _SEP + "shared"))),
    ("the shared oracle directory", re.compile(re.escape("shared" + _SEP + "oracles"))),
    ("an absolute path of the development machine", re.compile(_ABSOLUTE + re.escape(_SEP + "work" + _SEP))),
    ("a home directory", re.compile(_ABSOLUTE + "/(?:home|root|Users)/")),
    ("the planning document", re.compile(re.escape(_SPEC + ".md"))),
    ("a planning-document section", re.compile(re.escape(_SPEC) + r"\s*(?:§|section\b|seed\b|\d)")),
]


def repository_files() -> list[Path]:
    """The files a clone (or a commit of this working tree) holds: tracked plus untracked-not-ignored
    files in a git checkout; otherwise every file of the tree but build output and caches."""
    if (REPO / ".git").exists() and shutil.which("git"):
        listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                capture_output=True, check=True).stdout.decode("utf-8").split("\0")
        return sorted({REPO / name for name in listed if name and (REPO / name).is_file()})
    found = []
    for root, dirs, files in os.walk(REPO):
        rel = Path(root).relative_to(REPO).as_posix()
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")
                   and (f"{rel}/{d}" if rel != "." else d) not in SKIP_RELATIVE]
        found += [Path(root) / f for f in files]
    return sorted(found)


def text_of(path: Path) -> str | None:
    if path.suffix.lower() in BINARY_SUFFIXES:
        return None
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def test_no_file_points_outside_the_repository():
    files = repository_files()
    assert any(f.name == "README.md" and f.parent == REPO for f in files), "the repository's files were not found"
    hits = []
    for path in files:
        text = text_of(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for what, pattern in FORBIDDEN:
                if pattern.search(line):
                    hits.append(f"{path.relative_to(REPO).as_posix()}:{number}: {what}: {line.strip()[:160]}")
    assert not hits, ("files that name a path outside the repository or a document not in it "
                      "(cite the documentation or a file in the repository instead):\n" + "\n".join(hits))


def test_the_forbidden_patterns_match_what_they_should():
    """Guard the guard: each pattern catches its case, and relative paths inside the repository pass."""
    bad = [".." + _SEP + "shared" + _SEP + "x", "shared" + _SEP + "oracles", _SEP + "work" + _SEP + "main",
           "'" + _SEP + "home" + _SEP + "me", _SEP + "root" + _SEP + "x", _SPEC + ".md", _SPEC + " §4",
           _SPEC + " seed 001", _SPEC + " 2.5", _SPEC + " section 4"]
    good = ["benchmarks/data/work/1M/recsql.log", "SPECIAL", "fixtures/trec_eval/qrels.test", "the shared stage"]
    for text in bad:
        assert any(p.search(text) for _, p in FORBIDDEN), text
    for text in good:
        assert not any(p.search(text) for _, p in FORBIDDEN), text


# ---------------------------------------------------------------- fixtures the tests read are here
# trec_eval's file names (qrels.test, out.test.aq, results.trunc), not a test's own temporary
# outputs (out.duckdb, results.parquet)
_TREC_NAME = re.compile(r"^(?:out|qrels|results)\.(?!(?:[\w.-]*\.)?(?:duckdb|parquet|csv|json)$)[\w.-]+$")
_FIXTURE_PATH = re.compile(r"^(?:worked|oracles)/[\w.-]+\.json$")  # cases.load("worked/seeds.json")


def _string_literals() -> list[tuple[str, int, str]]:
    out = []
    for path in sorted((REPO / "tests").rglob("*.py")):  # the test modules and tests/support/
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.append((path.relative_to(REPO).as_posix(), node.lineno, node.value))
    return out


def test_fixture_files_the_tests_read_are_in_the_repository():
    assert TREC_EVAL.resolve().is_relative_to(REPO) and FIXTURES.resolve().is_relative_to(REPO)
    literals = _string_literals()
    trec_names = {value for _, _, value in literals if _TREC_NAME.match(value)}
    assert {"qrels.test", "results.test", "out.test"} <= trec_names, "the trec_eval tests' file names were not found"
    missing = [f"{file}:{line}: fixtures/trec_eval/{value}" for file, line, value in literals
               if _TREC_NAME.match(value) and not (TREC_EVAL / value).is_file()]
    missing += [f"{file}:{line}: fixtures/{value}" for file, line, value in literals
                if _FIXTURE_PATH.match(value) and not (FIXTURES / value).is_file()]
    assert not missing, "fixture files read by the tests but missing from the repository:\n" + "\n".join(missing)
    # only the files the tests use are kept, each with the licence and a README saying where they come from
    unused = sorted(p.name for p in TREC_EVAL.iterdir() if p.name not in trec_names | {"README.md", "LICENSE.md"})
    assert not unused, f"fixtures/trec_eval files no test reads: {unused}"
    assert (TREC_EVAL / "LICENSE.md").is_file() and (TREC_EVAL / "README.md").is_file()
    for name in ("ranx", "pytrec_eval", "ir_measures", "replay", "msr"):  # read as f"oracles/{name}.json"
        assert (FIXTURES / "oracles" / f"{name}.json").is_file(), name
    for tool in ("ranx", "pytrec_eval", "ir_measures"):
        assert (FIXTURES / "oracles" / "LICENSES" / f"{tool}.txt").is_file(), f"no licence for the {tool} cases"
