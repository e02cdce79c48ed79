"""``recsql dbt generate``: every evaluation of a dbt project's ``recsql.yml`` as a model and its YAML.

``recsql.yml`` sits at the root of the dbt project (beside ``dbt_project.yml``)::

    adapters: [duckdb, snowflake]      # the adapters of your targets (dev and prod)
    models_dir: models/recsql          # where the models go (default)
    evaluations:
      - name: ranking_quality
        recs: ref('recs')              # or a model name: recs; or source('shop', 'recs')
        truth: ref('truth')
        metrics: [ndcg@10, map@10, recall@20]
        run_cols: [model]              # any option of recsql.evaluate
        gates:                         # optional: a worse run fails dbt build (recsql.dbt.gates)
          baseline: {model: popular}
          fail_if: ["ndcg@10 worse by 0.01"]
      - name: ranking_quality_per_user
        recs: recs
        truth: truth
        metrics: [ndcg@10]
        output: per_user

:func:`generate` writes ``<models_dir>/<name>.sql`` and ``<name>.yml`` for each evaluation and removes
the files it wrote for evaluations no longer listed; ``check=True`` writes nothing and lists what is
stale. Gates that test (recsql.dbt.gates) add the evaluation's per-user model ``<name>_per_user`` and
the project's ``recsql_t_quantiles`` (recsql.dbt.quantiles). It never writes over, or removes, a file it did not write (the first line's marker says), and
refuses a model name that another file of the project already defines.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import RecsqlError
from ..extras import require
from ..files import write_file
from ..inputs import ROLES
from ..options import yml_keys
from .adapters import ADAPTERS
from .gates import gate_test, levels, per_user_spec, tests_per_user
from . import quantiles
from .model import JINJA, MARKER_SQL, MARKER_YAML, OLD_ROLES, OPTIONS, ModelSpec, model_file, schema_entry

CONFIG = "recsql.yml"
SPEC_KEYS = ("name", "metrics", "output", "column_names", "materialized", "gates", *yml_keys("render"))
_TOP_KEYS = ("adapters", "models_dir", "evaluations")


def _yaml():
    """PyYAML (the dbt extra; dbt brings it too): a one-line error naming the extra when missing."""
    return require("yaml", "recsql dbt")


def _unknown(key: str, allowed: tuple[str, ...], where: str) -> RecsqlError:
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(allowed)}"
    return RecsqlError(f"{where}: unknown key {key!r}{hint}")


@dataclass
class Config:
    """A project's ``recsql.yml``, read and checked."""

    project: Path
    adapters: list[str]
    models_dir: Path
    specs: list[ModelSpec] = field(default_factory=list)


def _spec(entry: Any, i: int) -> ModelSpec:
    where = f"{CONFIG}: evaluations[{i}]"
    if not isinstance(entry, dict) or "name" not in entry:
        raise RecsqlError(f"{where}: each evaluation is a mapping with at least name, recs and metrics")
    for key in entry:
        if key not in (*SPEC_KEYS, *ROLES, *OPTIONS, *OLD_ROLES):
            raise _unknown(str(key), (*SPEC_KEYS, *ROLES, *OPTIONS), f"{where} ({entry['name']})")
    inputs = {role: entry[role] for role in (*ROLES, *OLD_ROLES) if entry.get(role) is not None}
    options = {key: entry[key] for key in OPTIONS if key in entry}
    own = {key: entry[key] for key in SPEC_KEYS if key in entry}
    for key in ("text_ids", "logs_run_cols"):
        if key in own:
            own[key] = (own[key],) if isinstance(own[key], str) else tuple(own[key])
    return ModelSpec(inputs=inputs, options=options, **own)


def read_config(project: Path) -> Config:
    """The project's ``recsql.yml``; a clear error for a missing project or file, or a bad entry."""
    project = Path(project)
    if not project.is_dir():
        raise RecsqlError(f"--project {str(project)!r} is not a directory; give the dbt project's folder "
                          "(the one holding dbt_project.yml)")
    if not (project / "dbt_project.yml").is_file():
        raise RecsqlError(f"--project {str(project)!r} holds no dbt_project.yml; give the dbt project's folder")
    path = project / CONFIG
    if not path.is_file():
        raise RecsqlError(f"{path} is missing: write it to list your evaluations (see `recsql dbt --help`)")
    yaml = _yaml()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise RecsqlError(f"{path} is not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise RecsqlError(f"{path}: expected a mapping with adapters and evaluations")
    for key in data:
        if key not in _TOP_KEYS:
            raise _unknown(str(key), _TOP_KEYS, CONFIG)
    adapters = data.get("adapters")
    if not isinstance(adapters, list) or not adapters:
        raise RecsqlError(f"{CONFIG}: adapters: name the dbt adapters your targets use, e.g. adapters: [duckdb]; "
                          f"supported: {', '.join(ADAPTERS)}")
    models_dir = (project / str(data.get("models_dir", "models/recsql"))).resolve()
    if project.resolve() not in models_dir.parents:
        raise RecsqlError(f"{CONFIG}: models_dir {data.get('models_dir')!r} must be a folder inside the project")
    entries = data.get("evaluations") or []
    if not isinstance(entries, list):
        raise RecsqlError(f"{CONFIG}: evaluations: a list of evaluations")
    specs = [_spec(entry, i) for i, entry in enumerate(entries)]
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise RecsqlError(f"{CONFIG}: evaluation names must differ: {', '.join(twice)} appears twice")
    derived = [per_user_spec(s) for s in specs if s.gates is not None and tests_per_user(s)]
    for spec in derived:  # the per-user models the gates that test read, written beside their summary
        if spec.name in names:
            raise RecsqlError(f"{CONFIG}: evaluation {spec.name!r} has the name of the per-user model recsql writes for "
                              f"the gates of {spec.name[:-len('_per_user')]!r}; name it otherwise")
    if derived and quantiles.MODEL in names:
        raise RecsqlError(f"{CONFIG}: evaluation {quantiles.MODEL!r} has the name of the t quantiles' model recsql "
                          "writes for the gates; name it otherwise")
    specs += derived
    return Config(project, [str(a) for a in adapters], models_dir, specs)


def _ours(path: Path) -> bool:
    """Whether recsql wrote the file (its first line is the marker)."""
    try:
        with path.open(encoding="utf-8") as handle:
            first = handle.readline()
    except (OSError, UnicodeDecodeError):
        return False
    return first.startswith((MARKER_SQL, MARKER_YAML))


def files(config: Config) -> dict[Path, str]:
    """Every file the config generates, by path."""
    yaml = _yaml()
    out: dict[Path, str] = {}
    for spec in config.specs:
        out[config.models_dir / f"{spec.name}.sql"] = model_file(spec, config.adapters, CONFIG)
        model = schema_entry(spec)
        if spec.gates is not None:
            model["data_tests"] = [gate_test(spec)]
        entry = {"version": 2, "models": [model]}
        text = (f"{MARKER_YAML} by `recsql dbt generate` from {CONFIG}: edit {CONFIG}, not this file\n"
                + yaml.safe_dump(entry, sort_keys=False, allow_unicode=True, width=120))
        if JINJA.search(text):  # dbt renders Jinja in YAML descriptions
            raise RecsqlError(f"evaluation {spec.name!r}: its YAML would hold a Jinja delimiter; rename what holds it")
        out[config.models_dir / f"{spec.name}.yml"] = text
    gated = [level for spec in config.specs if spec.gates is not None and tests_per_user(spec) for level in levels(spec)]
    if gated:  # one table of t quantiles for every gate that tests
        header = [f"{MARKER_SQL} by recsql {__version__} (`recsql dbt generate`) from {CONFIG}: edit {CONFIG}, not this file"]
        out[config.models_dir / f"{quantiles.MODEL}.sql"] = quantiles.model_text(gated, header)
    return out


def _defined_elsewhere(config: Config, wanted: dict[Path, str]) -> list[str]:
    """Model names the project defines in a file recsql does not write (dbt refuses two models of a name)."""
    clashes = []
    for name in [spec.name for spec in config.specs] + [p.stem for p in wanted if p.stem == quantiles.MODEL]:
        for path in config.project.rglob(f"{name}.*"):
            if path.suffix in (".sql", ".py") and path not in wanted and "target" not in path.parts \
                    and "dbt_packages" not in path.parts and not _ours(path):
                clashes.append(f"{name} ({path.relative_to(config.project)})")
    return clashes


def plan(config: Config) -> tuple[dict[Path, str], list[Path], list[Path]]:
    """(files to write, files of recsql's no longer listed, files in the way that recsql did not write)."""
    wanted = files(config)
    clashes = _defined_elsewhere(config, wanted)
    if clashes:
        raise RecsqlError(f"{CONFIG}: the project already has a model named {clashes[0]}; "
                          "name the evaluation otherwise")
    blocked = [p for p in wanted if p.exists() and not _ours(p)]
    leftover = sorted(p for p in config.models_dir.glob("*") if p not in wanted and p.suffix in (".sql", ".yml")
                      and _ours(p)) if config.models_dir.is_dir() else []
    return wanted, leftover, blocked


def generate(project: Path, check: bool = False) -> tuple[list[Path], list[Path]]:
    """Write the project's evaluations (``check``: write nothing); (files written or stale, files removed
    or to remove). Refuses, before writing anything, when a file recsql would write is not its own."""
    config = read_config(Path(project))
    wanted, leftover, blocked = plan(config)
    if blocked:
        raise RecsqlError(f"{blocked[0]} exists and was not written by recsql: move it away or name the "
                          "evaluation otherwise; nothing was written")
    changed = [p for p, text in wanted.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
    if not check:
        for path in changed:  # atomically, through a symbolic link, keeping a file's mode (recsql.files.write_file)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise RecsqlError(f"{path.parent} could not be created ({err.strerror or err}); check the dbt "
                                  "project's permissions") from None
            write_file(str(path), lambda temporary, text=wanted[path]: Path(temporary).write_text(text, encoding="utf-8"))
        for path in leftover:
            path.unlink()
    return changed, leftover
