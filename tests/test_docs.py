"""The documentation: the site builds, the metric reference is complete, and every example runs.

**Examples.** Every fenced code block of the README, CONTRIBUTING.md and the pages in docs/ is an
example, except a ``text`` block, which is either the output of the block just before it or plain
text (a layout, a file's lines). An example is run, in the page's order:

- a ``python`` block by ``exec`` in one namespace per page (as in a notebook), in a temporary
  directory holding ``fixtures/`` (the repository's), and what it prints must be the ``text`` block
  right after it, or nothing when no ``text`` block follows;
- a ``bash`` block by bash in that directory, with ``recsql`` the command of this checkout; what it
  prints (stdout, then stderr) must be the ``text`` block after it. A leading ``pip install ... &&``
  is the installation the tests already run in, and is not run again. The elapsed time that ends a
  ``recsql: ...`` line (``0.330 s``) is the one part of an output not compared.

A block that cannot run here (a warehouse, a dbt project, the whole test suite) has the line
``*Not run: <why>.*`` just before it, visible on GitHub and on the site. The counts of both kinds
are fixed below per page, so an example that stops running is a deliberate change of this file.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import recsql
from recsql.families import FAMILIES
from recsql.metrics import registry

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
PAGES = sorted([REPO / "README.md", REPO / "CONTRIBUTING.md", *DOCS.rglob("*.md")])
# Per page: (examples run against their output, examples marked *Not run: ...*); a page without
# examples is left out
COUNTS = {
    "CONTRIBUTING.md": (0, 2),
    "README.md": (6, 1),
    "docs/dbt.md": (2, 2),
    "docs/developer.md": (0, 2),
    "docs/guide/compare.md": (3, 1),
    "docs/guide/decisions.md": (4, 0),
    "docs/guide/engines.md": (2, 1),
    "docs/guide/logs.md": (7, 2),
    "docs/guide/metrics.md": (5, 0),
    "docs/guide/mlflow.md": (4, 0),
    "docs/guide/populations.md": (1, 0),
    "docs/guide/report.md": (3, 0),
    "docs/guide/usage.md": (7, 1),
}

_FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)(.*)$")
_NOT_RUN = re.compile(r"^\*Not run: .+\.\*$")
_ELAPSED = re.compile(r"(?m)^(recsql: .*?)[\d.]+ s$")


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    body: str
    not_run: bool
    output: str | None = None  # the text block right after it

    def where(self) -> str:
        return f"{self.page.relative_to(REPO).as_posix()}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The page's examples (every fenced block but text), each with the text block after it."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i, previous_end = 0, None
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, lang = match.group(1), match.group(2).lower()
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith(fence[0] * len(fence))
                   and not lines[j].strip(fence[0]).strip())
        body = "\n".join(lines[i + 1:end])
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        follows = previous_end is not None and all(not lines[j].strip() for j in range(previous_end + 1, i))
        if lang == "text":
            if follows and found and found[-1].output is None:
                found[-1].output = body
        else:
            found.append(Block(page, i + 1, lang, body, bool(_NOT_RUN.match(before.strip()))))
        previous_end, i = end, end + 1
    return found


def all_blocks() -> list[Block]:
    return [b for page in PAGES for b in blocks(page)]


def _same(expected: str, got: str) -> tuple[str, str]:
    def norm(text: str) -> str:
        text = _ELAPSED.sub(r"\1<elapsed> s", text)
        return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())
    return norm(expected), norm(got)


def _run_python(block: Block, namespace: dict) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.body, block.where(), "exec"), namespace)  # noqa: S102 - the documentation's own example
    return out.getvalue()


def _run_bash(block: Block, bin_dir: Path) -> str:
    script = re.sub(r"^pip install [^&\n]*&&\s*", "", block.body)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, f"{block.where()}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_example_prints_what_the_page_shows(page, tmp_path, monkeypatch):
    examples = [b for b in blocks(page) if not b.not_run]
    (tmp_path / "fixtures").symlink_to(REPO / "fixtures", target_is_directory=True)
    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    shim = bin_dir / "recsql"  # the command of this checkout, whatever else is installed
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m recsql "$@"\n')
    shim.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for block in examples:
        if block.lang == "python":
            got = _run_python(block, namespace)
        elif block.lang in ("bash", "sh", "shell"):
            got = _run_bash(block, bin_dir)
        else:
            pytest.fail(f"{block.where()}: a {block.lang or 'plain'} block cannot run; mark it *Not run: <why>.*")
        expected, actual = _same(block.output or "", got)
        assert actual == expected, f"{block.where()}: the example prints\n{got}\ninstead of\n{block.output}"


def test_the_counts_of_run_and_not_run_examples():
    counts = {}
    for page in PAGES:
        found = blocks(page)
        not_run = sum(b.not_run for b in found)
        if found:
            counts[page.relative_to(REPO).as_posix()] = (len(found) - not_run, not_run)
    assert counts == COUNTS


def test_the_convention_reads_blocks_as_documented(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("```python\nprint(1)\n```\n\n```text\n1\n```\n\n*Not run: needs a warehouse.*\n\n"
                    "```sql\nSELECT 1\n```\n\n```text\na layout\n```\n\n```python\nx = 1\n```\n")
    found = blocks(page)
    assert [(b.lang, b.output, b.not_run) for b in found] == [("python", "1", False), ("sql", "a layout", True),
                                                              ("python", None, False)]
    assert _same("recsql: 5 metric(s), 0.330 s\n", "recsql: 5 metric(s), 1.5 s")[0] == \
        _same("recsql: 5 metric(s), 0.330 s\n", "recsql: 5 metric(s), 1.5 s")[1]
    assert _same("a 0.330 s", "a 1.5 s")[0] != _same("a 0.330 s", "a 1.5 s")[1]


# ------------------------------------------------------------------------------- the site
def _hooks():
    spec = importlib.util.spec_from_file_location("recsql_docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_mkdocs_build_strict(tmp_path):
    """The site builds with every warning an error (broken links and anchors, pages outside the nav),
    and its reference page holds every metric of the registry."""
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(REPO / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                          capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    page = (tmp_path / "site" / "reference" / "index.html").read_text(encoding="utf-8")
    for name in registry():
        assert f'id="{name}"' in page, name
    assert "Järvelin" in page and "hooks.py" not in os.listdir(tmp_path / "site")


def test_links_into_the_repository_resolve():
    """A page's relative links to files outside docs/ (which the site shows as names) point at files,
    and so do the links of the README, CONTRIBUTING.md and CHANGELOG.md."""
    hooks = _hooks()
    missing = []
    for src, text in hooks._pages(DOCS):
        for match in hooks._outside_links(text):
            repo_path = hooks._outside_docs(src, match.group(3), DOCS)
            if repo_path and not (REPO / repo_path.rstrip("/")).exists():
                missing.append(f"docs/{src}: {match.group(3)}")
    for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md"):  # on GitHub, relative to the root
        for match in hooks._outside_links((REPO / name).read_text(encoding="utf-8")):
            target = match.group(3).partition("#")[0]
            if target and not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not (REPO / target).exists():
                missing.append(f"{name}: {match.group(3)}")
    assert not missing, missing


# ------------------------------------------------------------------------------- the reference
# Metrics whose SQL header does not yet describe every option in its formula. Each is a strict
# expected failure: describing the option makes it pass, and the test then says to remove it here.
UNDESCRIBED_OPTIONS: dict[str, str] = {}  # metric -> why its header does not yet describe an option (strict xfail)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=UNDESCRIBED_OPTIONS[n]))
                                  if n in UNDESCRIBED_OPTIONS else n for n in sorted(registry())])
def test_every_metric_has_a_formula_option_descriptions_and_a_citation(name):
    spec = registry()[name]
    assert _hooks().gaps(spec) == [], name


def test_a_metric_without_formula_options_or_citation_is_found():
    hooks = _hooks()
    spec = registry()["map"]
    from dataclasses import replace
    assert hooks.gaps(replace(spec, formula="", cite="")) == ["no formula", "option denominator: the formula does "
                                                              "not say what min, relevant, hits, k means", "no citation"]
    assert hooks.gaps(replace(spec, formula="AP = Σ hit_i · P@i / D; D = min(k, R) (min), R (relevant)")) == [
        "option denominator: the formula does not say what hits means"]
    assert hooks.gaps(registry()["cg"]) == []  # gain: described in sql/_gains.sql


def test_the_reference_shows_the_registry():
    hooks = _hooks()
    text = hooks.reference()
    for spec in registry().values():
        section = hooks.metric_section(spec)
        assert section in text
        assert f"`sql/{spec.name}.sql`" in section
        for p in spec.params.values():
            assert f"`{p.name}` = `{p.default}`" in section
    assert "`linear`: the relevance itself" in hooks.metric_section(registry()["cg"])


def test_the_reference_groups_the_metrics_by_family():
    """One heading per family, in recsql/families.py's order, with what it measures; each metric's
    section under its own family's heading."""
    text = _hooks().reference()
    headings = re.findall(r"^## (.+) \{#family-(\w+)\}$", text, re.M)
    assert headings == [(f.title, f.key) for f in FAMILIES.values()]
    parts = dict(zip([key for _, key in headings], re.split(r"^## .+$", text, flags=re.M)[1:]))
    for key, part in parts.items():
        assert part.lstrip("\n").startswith(FAMILIES[key].description)
        assert sorted(re.findall(r"^### `(\w+)`$", part, re.M)) == sorted(
            name for name, spec in registry().items() if spec.family == key)


# What may differ from docs/report.html when the current code writes it again: the package versions of the machine
# (the page's versions table) and what follows from the bytes of docs/users.parquet, which the script writes with
# this machine's pyarrow (its digest, and the input fingerprint over every digest). The numbers, figures and SQL may
# not.
_MACHINE = (re.compile(r'(<table class="defs"><tbody><tr><td>recsql</td>).*?(</tbody></table>)'),
            re.compile(r"(docs/users\.parquet \(1 file\(s\), their bytes\)</td><td><code>)[0-9a-f]{64}"),
            re.compile(r"(fingerprint:? ?(?:<code>)?)[0-9a-f]{16}"))


def test_the_sample_report_is_the_page_the_current_code_writes(tmp_path):
    """docs/report.html (linked from the README and the report guide) is what docs/make_report_screenshot.py writes
    at this commit: regenerate it with that script when this fails."""
    spec = importlib.util.spec_from_file_location("make_report_screenshot", DOCS / "make_report_screenshot.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    (tmp_path / "fixtures").symlink_to(REPO / "fixtures")
    (tmp_path / "docs").mkdir()
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        assert script.write_page(tmp_path) == 0

    def shown(page: Path) -> str:
        text = page.read_text(encoding="utf-8")
        for pattern in _MACHINE:
            text, found = pattern.subn(r"\1…", text)
            assert found, f"{page}: no match for {pattern.pattern}: update _MACHINE with the page's layout"
        return text
    written, published = shown(tmp_path / "docs" / "report.html"), shown(DOCS / "report.html")
    assert written == published, ("docs/report.html is not what the current code writes: run "
                                  "`python docs/make_report_screenshot.py` and commit the page and its screenshot")
