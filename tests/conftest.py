"""Hypothesis profiles: ``ci`` (deterministic, bounded; selected by CI=true) and ``dev`` (longer)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=60,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=400, deadline=None)
settings.register_profile("default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])
elif os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")
else:
    settings.load_profile("default")
