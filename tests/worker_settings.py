"""Settings of the worker processes the fault drills start (tests/workers.py): the
project's, except for the broker's visibility timeout when DRILL_VISIBILITY_TIMEOUT_SECONDS
asks for a short one, so that a drill sees the message of a worker lost whole come back in
seconds rather than an hour. Kombu then looks for such messages every second. The Celery queue
is the test pass's own (CELERY_TEST_QUEUE, as tests/conftest.py sets it for the test process):
the two database passes run at once.

DRILL_NOW (an ISO 8601 moment) moves the process's clock there, running on from it: a drill
whose workers start the weekly cohort needs its first day (COHORT_START_GRACE), whatever the
day the suite runs on. With DRILL_NOW_SET_AT (the Unix time DRILL_NOW was set at) the clock
runs on from DRILL_NOW as if from then: a process started later (a web worker replacing a
killed one) keeps the same clock as those started before it. SUITE_NOW and SUITE_NOW_SET_AT
do the same for the suite's own clock when a run near a week's seal moved it
(tests/suite_clock.py); a drill's moment applies on top.

DRILL_SUBMISSION_CLAIM_SECONDS shortens OUTSIDE_SUBMISSION_CLAIM_SECONDS, so that a drill's
team can take over a dead web worker's submission in seconds.

DRILL_HOLD_AFTER_DECISIONS_SENT=N holds the worker the N+1th time it is about to send a
decision task (Celery's `before_task_publish`), after writing the file DRILL_HOLD_MARKER names:
a drill then knows the worker is part-way through queueing a run, with N chains sent, and
kills it there."""

import os
import time
from datetime import datetime, timedelta

import time_machine

from forecaster.settings import *  # noqa: F403
from forecaster.settings import (
    CELERY_BROKER_TRANSPORT_OPTIONS,
    CELERY_VISIBILITY_TIMEOUT_SECONDS,
    OUTSIDE_SUBMISSION_CLAIM_SECONDS,
)

CELERY_VISIBILITY_TIMEOUT_SECONDS = int(
    os.environ.get("DRILL_VISIBILITY_TIMEOUT_SECONDS", CELERY_VISIBILITY_TIMEOUT_SECONDS)
)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    **CELERY_BROKER_TRANSPORT_OPTIONS,
    "visibility_timeout": CELERY_VISIBILITY_TIMEOUT_SECONDS,
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
}
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TEST_QUEUE", "celery")

OUTSIDE_SUBMISSION_CLAIM_SECONDS = int(
    os.environ.get("DRILL_SUBMISSION_CLAIM_SECONDS", OUTSIDE_SUBMISSION_CLAIM_SECONDS)
)

# The suite's clock first, when the suite moved it (tests/suite_clock.py: SUITE_NOW_SET_AT is
# real time), then a drill's own moment on top: its DRILL_NOW_SET_AT was read on the test
# process's clock, the suite's, which this process now shares.
for _now, _set_at in (("SUITE_NOW", "SUITE_NOW_SET_AT"), ("DRILL_NOW", "DRILL_NOW_SET_AT")):
    if os.environ.get(_now):
        _moment = datetime.fromisoformat(os.environ[_now])
        if os.environ.get(_set_at):
            _moment += timedelta(seconds=time.time() - float(os.environ[_set_at]))
        time_machine.travel(_moment, tick=True).start()

if os.environ.get("DRILL_HOLD_AFTER_DECISIONS_SENT"):
    from pathlib import Path

    from celery.signals import before_task_publish

    _sends_before_hold = int(os.environ["DRILL_HOLD_AFTER_DECISIONS_SENT"])
    _sent: list[str] = []

    @before_task_publish.connect(weak=False)
    def _hold_while_queueing(sender: str | None = None, **kwargs: object) -> None:
        if sender != "arena.run_agent_decision":
            return
        if len(_sent) == _sends_before_hold:
            Path(os.environ["DRILL_HOLD_MARKER"]).write_text("holding")
            while True:  # until the drill kills this worker
                time.sleep(1)
        _sent.append(str(sender))
