"""The catalogue sync as a Celery task, delivered through Redis to a real worker."""

from __future__ import annotations

from typing import Any

import pytest

from markets.models import Market
from markets.tasks import sync_markets
from tests.replay import ReplayServer

# serialized_rollback, as every transactional test of the suite: the flush after each test then
# recreates nothing, and the next transactional test restores the migrations' rows (content
# types, the lineup) into empty tables, whatever ran before it in the same process.
pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.celery_worker,
]


def test_sync_task_runs_in_a_worker_and_fills_the_catalogue(
    gamma_listing: ReplayServer, celery_worker_on_redis: Any
) -> None:
    summary = sync_markets.delay(limit=500).get(timeout=30)
    assert summary.startswith("synced 500 markets from gamma")
    assert Market.objects.count() == 500
    assert len(gamma_listing.requests_to("/markets")) == 1
