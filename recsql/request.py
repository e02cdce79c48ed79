"""One evaluation's request: the metrics and inputs checked (:func:`checked_request`), then bound
to an engine with a validated plan (:func:`bound`), what :func:`recsql.evaluate` and
:func:`recsql.compare` share."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from .compose import Plan, check_inputs, fit_to_inputs, given_roles
from .engines import runner_for
from .engines.base import Runner
from .errors import RecsqlError
from .inputs import Inputs
from .metrics import Metric, parse_metrics
from .plans import validated_plan
from .sources import Source, bind


@dataclass
class Request:
    """One evaluation's inputs and options, checked: what :func:`recsql.evaluate` and
    :func:`recsql.compare` share (the options are evaluate's keywords, described once there)."""

    metrics: list[Metric]
    cols: dict[str, Any]
    inputs: dict[str, Any]
    con: Any
    progress: bool


def checked_request(metrics: Any, inputs: Inputs, *, con: Any = None, progress: bool = False) -> Request:
    """The checked request: ``metrics`` parsed, ``inputs``' options checked (:meth:`Inputs.options`),
    and the metrics fitted to, and checked against, the inputs given; ``con`` and ``progress`` as
    :func:`recsql.evaluate`'s."""
    parsed = parse_metrics(metrics)
    cols = inputs.options()
    if inputs.recs is None:
        raise RecsqlError("recs is required: the recommendations to evaluate")
    given_inputs = inputs.given()
    given = {role for role, obj in given_inputs.items() if obj is not None}
    given = given_roles(given, inputs.head_col, inputs.slate_propensity_col, inputs.cascade_propensity_col)
    parsed = [fit_to_inputs(m, given) for m in parsed]  # novelty: p=items when only items are given
    check_inputs(parsed, given, {need: getattr(inputs, f"{need}_col") for need in
                                 ("user", "item", "price", "probability", "category", "features", "feature", "value",
                                  "intent", "position", "propensity", "reward")})
    return Request(metrics=parsed, cols=cols, inputs=given_inputs, con=con, progress=progress)


@contextmanager
def bound(request: Request) -> Iterator[tuple[Runner, Plan, dict[str, Source]]]:
    """The request's runner, validated plan and bound inputs; the inputs are unbound afterwards,
    also when the run fails or is interrupted."""
    with runner_for(request.con, progress=request.progress) as runner:
        sources: dict[str, Source] = {}
        try:
            for role, obj in request.inputs.items():
                if obj is not None:
                    sources[role] = bind(role, obj, runner)  # its name in messages
            yield runner, validated_plan(runner, sources, request.cols, request.metrics), sources
        finally:
            for src in sources.values():
                src.cleanup()
