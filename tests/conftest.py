"""Test settings: hypothesis is derandomized in CI so a red build can be reproduced exactly.

CI does not shrink failing examples: shrinking an engine-backed example can take minutes per test,
and a red build must report within CI's time limit. The first failing example is printed with its
reproduction blob; run the test locally (without CI set) to get the shrunk example."""
from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True,
                          phases=[p for p in Phase if p not in (Phase.shrink, Phase.explain)],
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")
