"""recsql's deprecation warnings are the ones pyproject.toml's filterwarnings turns into errors: each
FutureWarning or DeprecationWarning recsql raises says "in the next release", the words the filter
matches, so a test or a documentation example still using an old spelling fails the suite."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEPRECATIONS = {"FutureWarning", "DeprecationWarning"}


def deprecation_warnings() -> list[tuple[str, int, str]]:
    """Every ``warnings.warn(message, FutureWarning | DeprecationWarning)`` in recsql/: where, and the
    message's literal text (the f-string's constant parts)."""
    found = []
    for path in sorted((ROOT / "recsql").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and ast.unparse(node.func) in ("warnings.warn", "warn")):
                continue
            category = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "category"), None)
            if category is not None and ast.unparse(category) in DEPRECATIONS:
                text = "".join(c.value for c in ast.walk(node.args[0])
                               if isinstance(c, ast.Constant) and isinstance(c.value, str))
                found.append((path.relative_to(ROOT).as_posix(), node.lineno, text))
    return found


def test_every_deprecation_is_one_the_suite_fails_on():
    found = deprecation_warnings()
    assert found, "no deprecation warning found in recsql/: the scan is broken"
    assert [w for w in found if "in the next release" not in w[2]] == []
