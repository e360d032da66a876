"""The operations record: system events kept in the database and shown to staff."""

from __future__ import annotations

import pytest
from django.test import Client

from arena.models import SystemEvent
from arena.services.events import Kind, Level, event_record

pytestmark = pytest.mark.django_db


def test_an_event_is_recorded_with_hostile_text_made_storable() -> None:
    event = event_record(
        kind=Kind.DECISION_FAILED,
        level=Level.ERROR,
        message="model said \x00 and \ud800",
        data={"traceback": "line \x00", "nested": ["\udfff"]},
    )

    assert event is not None
    stored = SystemEvent.objects.get(pk=event.pk)
    assert stored.message == "model said \\u0000 and \\ud800"
    assert stored.data == {"traceback": "line \\u0000", "nested": ["\\udfff"]}


def test_staff_see_events_newest_first_filtered_by_level_and_escaped(
    admin_client: Client,
) -> None:
    event_record(kind=Kind.RUN_STARTED, message="run 1 started")
    event_record(
        kind=Kind.SYNC_FAILED, level=Level.WARNING, message="<script>alert(1)</script> failed"
    )

    page = admin_client.get("/admin/arena/systemevent/")
    body = page.content.decode()

    assert page.status_code == 200
    assert body.index("&lt;script&gt;alert(1)&lt;/script&gt; failed") < body.index("run 1 started")
    assert "<script>alert(1)</script>" not in body
    warnings = admin_client.get("/admin/arena/systemevent/?level__exact=warning").content.decode()
    assert "run 1 started" not in warnings
    event = SystemEvent.objects.get(kind=Kind.SYNC_FAILED)
    change = admin_client.get(f"/admin/arena/systemevent/{event.pk}/change/")
    assert change.status_code == 200
    assert 'name="_save"' not in change.content.decode()  # read-only: evidence
