"""Settings of the worker processes the fault drills start (tests/workers.py): the
project's, except for the broker's visibility timeout when DRILL_VISIBILITY_TIMEOUT_SECONDS
asks for a short one, so that a drill sees the message of a worker lost whole come back in
seconds rather than an hour. Kombu then looks for such messages every second. The Celery queue
is the test pass's own (CELERY_TEST_QUEUE, as tests/conftest.py sets it for the test process):
the two database passes run at once.

DRILL_NOW (an ISO 8601 moment) moves the process's clock there, running on from it: a drill
whose workers start the weekly cohort needs its first day (COHORT_START_GRACE), whatever the
day the suite runs on."""

import os
from datetime import datetime

import time_machine

from forecaster.settings import *  # noqa: F403
from forecaster.settings import CELERY_BROKER_TRANSPORT_OPTIONS, CELERY_VISIBILITY_TIMEOUT_SECONDS

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

if os.environ.get("DRILL_NOW"):
    time_machine.travel(datetime.fromisoformat(os.environ["DRILL_NOW"]), tick=True).start()
