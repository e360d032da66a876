"""How many examples hypothesis tries, by profile, chosen with HYPOTHESIS_PROFILE.

- `ci` (what `make test` and `.ci/run` use): derandomized, so a run is reproducible from the
  commit alone, with every test's full count of examples.
- `dev` (the default, and `make test-fast`): a tenth of the examples, for the inner loop.
- `thorough`: ten times the examples, for a nightly or manual run.

A test that fixes its own count writes `max_examples=example_count(60)`: 60 under `ci`, scaled by
the same factor as hypothesis' default count under the others. No deadline in any profile:
under two database passes at once on two cores an example's wall time says nothing about the
code, and the suite's per-test budget (tests/conftest.py) bounds the time instead.
"""

from __future__ import annotations

import os

from hypothesis import settings

DEFAULT_EXAMPLES = 100  # hypothesis' own default count, the `ci` profile's
SCALE = {"ci": 1.0, "dev": 0.1, "thorough": 10.0}
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "dev")
if PROFILE not in SCALE:
    raise SystemExit(f"HYPOTHESIS_PROFILE={PROFILE!r}: expected one of {', '.join(SCALE)}")


def example_count(count: int) -> int:
    """Return `count` examples scaled for the active profile (never fewer than one)."""
    return max(1, round(count * SCALE[PROFILE]))


settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
for name in ("dev", "thorough"):
    settings.register_profile(
        name, max_examples=round(DEFAULT_EXAMPLES * SCALE[name]), deadline=None
    )
settings.load_profile(PROFILE)
