"""mkdocs hooks (``hooks:`` in mkdocs.yml): what the site generates when it is built.

1. **The metric reference** (``docs/reference.md``): the marker line of that page is replaced by
   every metric of the registry (``recsql.metrics.registry()``, read from the headers of
   ``sql/*.sql``), under a heading per family (their ``family:`` lines, ``recsql/families.py``): how
   it is written, its formula, its options with their choices and defaults, its range, the inputs it
   needs and its citation. Nothing of it is committed, so it cannot go stale;
   ``tests/test_docs.py`` fails for a metric whose header lacks a formula, an option description or
   a citation (:func:`gaps`).
2. **Links into the repository.** A page links a file outside ``docs/`` relatively
   (``../sql/ndcg.sql``), so the link works on GitHub. The site holds no source files: such a link
   becomes its text (the file's name, in code), except an image, which is copied into the site.

Run ``python docs/hooks.py`` to print the reference as Markdown.
"""
from __future__ import annotations

import posixpath
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MARKER = "<!-- the metric reference is generated here when the site is built (docs/hooks.py) -->"
IMAGES = (".png", ".svg", ".jpg", ".jpeg", ".gif")
# the options every gain- or discount-using metric shares: each choice is described once, by a header
# line `-- <choice>: ...` of the file that defines it
SHARED = {"gain": "_gains", "discount": "_discounts"}

_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _recsql():
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from recsql import families, metrics, templates
    return metrics, templates, families


# ------------------------------------------------------------------------------- the reference
def shared_choices(option: str) -> dict[str, str]:
    """``{choice: description}`` of a shared option, from its file's header (``sql/_gains.sql``)."""
    _, templates, _ = _recsql()
    header, _ = templates.read_template(SHARED[option])
    return {key: value for key, value in header.items() if value}


def _named(word: str, text: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", text) is not None


def option_gaps(spec) -> list[str]:
    """The options of a metric its header does not describe. A shared option (gain, discount) is
    described when every choice has its line in the shared file; any other option when its formula
    names every choice of an enumeration, or the option itself for a number."""
    gaps = []
    for p in spec.params.values():
        if p.name in SHARED:
            described = shared_choices(p.name)
            missing = [c for c in p.choices if c not in described]
        elif p.kind == "enum":
            missing = [c for c in p.choices if not _named(c, spec.formula)]
        else:
            missing = [] if _named(p.name, spec.formula) else [p.name]
        if missing:
            gaps.append(f"option {p.name}: the formula does not say what {', '.join(missing)} means")
    return gaps


def gaps(spec) -> list[str]:
    """What the reference would lack for this metric: a formula, an option's description, a citation."""
    found = [] if spec.formula.strip() else ["no formula"]
    found += option_gaps(spec)
    return found + ([] if spec.cite.strip() else ["no citation"])


def _text(value: str) -> str:
    """A header's words as Markdown text: nothing in them is read as emphasis or HTML."""
    value = value.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([*_`\[\]|])", r"\\\1", value)


_WRITTEN = {"required": "`{n}@k` (a cutoff is required)",
            "optional": "`{n}@k`, or `{n}` for the whole list",
            "none": "`{n}` (no cutoff: the whole list)"}
_POPULATION = {"truth": "the users of the ranked-rows stage's population (needs truth)",
               "lists": "the users with recommendations (no truth needed)",
               "intents": "the users of intents in `population=` (intents in the role of truth)",
               "global": "one value per run, over every user's list (in the summary only)"}


def _option(p) -> str:
    if p.kind == "number":
        takes = "a number" if p.interval == "(-inf, inf)" else f"a number in {p.interval}"
        takes = f"`auto` or {takes}" if p.default == "auto" else takes
    else:
        takes = " | ".join(f"`{c}`" for c in p.choices) + (" | an SQL expression in `rank`" if p.kind == "discount" else "")
    meaning = f" ({_text(p.meaning)})" if p.meaning else ""
    line = f"- `{p.name}` = `{p.default}`{meaning}; takes {takes}."
    if p.name in SHARED:
        described = shared_choices(p.name)
        line += "".join(f"\n    - `{c}`: {_text(described[c])}" for c in p.choices if c in described)
    return line


def metric_section(spec) -> str:
    out = [f"### `{spec.name}`", ""]
    facts = [f"Written {_WRITTEN[spec.k_rule].format(n=spec.name)}"]
    if spec.aliases:
        facts.append("aliases " + ", ".join(f"`{a}`" for a in spec.aliases))
    facts.append(f"averaged over {_POPULATION[spec.population]}" if spec.population != "global"
                 else _POPULATION["global"])
    if spec.summary == "sum":
        facts.append("the summary is the **sum** over users")
    out += ["; ".join(facts) + ".", ""]
    out += [f"**Formula.** {_text(spec.formula)}", ""]
    if spec.params:
        out += ["**Options.**", "", *(_option(p) for p in spec.params.values()), ""]
    ranges = "; ".join(r if opt is None else f"{r} if {opt} = {value}" for r, opt, value in spec.ranges)
    first = " (the first that applies)" if len(spec.ranges) > 1 else ""
    out += [f"**Range.** {_text(ranges)}{first}: every per-user and summary value lies in it.", ""]
    if spec.needs_when:
        needs = "; ".join(n if opt is None else f"{n} when {opt} = {value}" for n, opt, value in spec.needs_when)
        out += [f"**Needs.** {_text(needs)}", ""]
    if spec.ties:
        out += [f"**Ties.** exact under `ties=\"average\"`{_text(spec.ties.removeprefix('average'))}", ""]
    out += [f"**Citation.** {_text(spec.cite)}", ""]
    out += [f"Defined in `sql/{spec.name}.sql`.", ""]
    return "\n".join(out)


def family_section(family, specs) -> str:
    """A family's heading (its own anchor, ``family-<key>``: a family may share a metric's name), what
    it measures, and its metrics' sections."""
    return "\n".join([f"## {family.title} {{#family-{family.key}}}", "", _text(family.description), "",
                      *(metric_section(s) for s in specs)])


def reference() -> str:
    """The whole reference, as Markdown: an index, then one heading per family (``recsql/families.py``,
    in its order) with one section per metric, by name."""
    metrics, _, families = _recsql()
    specs = list(metrics.registry().values())
    index = ", ".join(f"[`{s.name}`](#{s.name})" for s in specs)
    grouped = families.grouped(specs, lambda s: s.family)
    return "\n".join([f"{len(specs)} metrics: {index}.", "", *(family_section(f, members) for f, members in grouped)])


# ------------------------------------------------------------------------------- the hooks
def _outside_docs(page_src: str, target: str, docs: Path) -> str | None:
    """The repository path a relative link points at when that is outside docs/, else None."""
    if re.match(r"^[a-z][a-z0-9+.-]*:|^#|^/", target):
        return None
    path, _, _ = target.partition("#")
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(page_src), path))
    if not resolved.startswith("../"):
        return None
    repo_path = posixpath.normpath(posixpath.join(docs.name, resolved))
    return repo_path if not repo_path.startswith("../") else None


def _pages(docs: Path):
    for md in sorted(docs.rglob("*.md")):
        yield md.relative_to(docs).as_posix(), md.read_text(encoding="utf-8")


def _outside_links(markdown: str):
    fenced = False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield from _LINK.finditer(line)


def on_files(files, config):
    """Copy the images the pages show from outside docs/ into the site, at their repository path."""
    from mkdocs.structure.files import File

    docs = Path(config["docs_dir"])
    wanted = set()
    for src, text in _pages(docs):
        for match in _outside_links(text):
            repo_path = _outside_docs(src, match.group(3), docs)
            if repo_path and match.group(1) and repo_path.lower().endswith(IMAGES) and (REPO / repo_path).is_file():
                wanted.add(repo_path)
    for repo_path in sorted(wanted):
        files.append(File(repo_path, str(REPO), config["site_dir"], config["use_directory_urls"]))
    return files


def on_page_markdown(markdown, page, config, files):
    docs = Path(config["docs_dir"])
    src = page.file.src_uri

    def relink(match):
        bang, text, target = match.groups()
        repo_path = _outside_docs(src, target, docs)
        if repo_path is None:
            return match.group(0)
        if bang and files.get_file_from_path(repo_path) is not None:
            return f"{bang}[{text}]({posixpath.relpath(repo_path, posixpath.dirname(src) or '.')})"
        return text if text.startswith("`") else f"`{text}`"

    out, fenced = [], False
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            line = _LINK.sub(relink, line)
            if line.strip() == MARKER:
                line = reference()
        out.append(line)
    return "\n".join(out)


if __name__ == "__main__":
    print(reference())
