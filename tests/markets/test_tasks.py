"""The catalogue sync as a Celery task, delivered through Redis to a real worker."""

from __future__ import annotations

from typing import Any

import pytest

from markets.models import Market
from markets.tasks import sync_markets
from tests.replay import ReplayServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery_worker]


def test_sync_task_runs_in_a_worker_and_fills_the_catalogue(
    gamma_listing: ReplayServer, celery_worker_on_redis: Any
) -> None:
    summary = sync_markets.delay(limit=500).get(timeout=30)
    assert summary.startswith("synced 500 markets from gamma")
    assert Market.objects.count() == 500
    assert len(gamma_listing.requests_to("/markets")) == 1
