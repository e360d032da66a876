"""Downloads that never hold the site (arena/services/downloads.py): an export is written whole
to a file, then sent with its length, in one of the web process's few download slots; past
them a download is told to come back, and a slot comes back when its download ends however it
ends. The drill with a slow client on a real server is in tests/test_web_drills.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from django.db import connection
from django.http import FileResponse
from django.test import Client

from arena.selectors.exports import DATASETS
from arena.services import downloads
from arena.services.exports import export_stream
from tests.api.helpers import assert_envelope
from tests.page_world import World, build_world, published_release
from tests.worlds import ModuleWorld, module_world

pytestmark = pytest.mark.django_db

DOWNLOAD = "/api/v1/exports/decisions.csv"


@module_world()
def download_world() -> World:
    return build_world(scale=2, text='Yes, "quoted"\nand ünïcode')


@pytest.fixture
def world(db: None, download_world: ModuleWorld[World]) -> World:
    return download_world.value.refetched()


@pytest.fixture
def one_slot(settings: Any) -> Iterator[None]:
    """One download slot, fresh for the test: a slot a failed test never gave back stays
    with it."""
    settings.DOWNLOADS_PER_PROCESS = 1
    yield
    downloads._slots["size"] = None


def body_of(response: Any) -> bytes:
    """The whole body: the test client closes the response once it is read, as a server does."""
    return b"".join(response.streaming_content)


def hang_up(response: Any) -> None:
    """Close the response as the server does when its client goes, leaving open the test's
    database connection (which the request's end would close: it is in a transaction)."""
    with patch.object(connection, "close_if_unusable_or_obsolete"):
        response.close()


def test_a_download_is_the_exports_bytes_with_their_length(world: World, client: Client) -> None:
    response = client.get(DOWNLOAD, {"cohort": world.cohort.number})

    assert response.status_code == 200
    assert isinstance(response, FileResponse)
    body = body_of(response)
    expected = b"".join(export_stream(DATASETS["decisions"], "csv", cohort=world.cohort.number))
    assert body == expected
    assert int(response["Content-Length"]) == len(expected) > 0
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="decisions-cohort-{world.cohort.number}.csv"'
    )


@pytest.mark.usefixtures("one_slot")
def test_past_the_slots_a_download_is_told_to_come_back_until_one_ends(
    world: World, client: Client
) -> None:
    sending = client.get(DOWNLOAD)  # a client reading slowly: its response is still open
    assert sending.status_code == 200

    busy = client.get("/api/v1/exports/trades.jsonl")
    assert_envelope(busy.json(), 503, "downloads_busy")
    assert busy["Retry-After"] == str(downloads.RETRY_AFTER_SECONDS)

    body_of(sending)  # sent: the slot comes back
    assert client.get("/api/v1/exports/trades.jsonl").status_code == 200


@pytest.mark.usefixtures("one_slot")
def test_a_client_gone_mid_download_gives_its_slot_back(world: World, client: Client) -> None:
    cut = client.get(DOWNLOAD)
    next(iter(cut.streaming_content))  # type: ignore[attr-defined]  # a block, then it hangs up
    hang_up(cut)

    assert client.get(DOWNLOAD).status_code == 200


@pytest.mark.usefixtures("one_slot")
def test_an_export_that_fails_while_written_gives_its_slot_back(
    world: World, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Iterator[bytes]:
        yield b"id,cohort\n"
        raise OSError("No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(downloads, "export_stream", broken)
        with pytest.raises(OSError, match="No space left"):
            client.get(DOWNLOAD)

    assert client.get(DOWNLOAD).status_code == 200


@pytest.mark.usefixtures("one_slot")
def test_a_release_file_takes_a_slot_too(
    world: World, client: Client, settings: Any, tmp_path: Path
) -> None:
    settings.RELEASES_ROOT = tmp_path
    release = published_release(
        world.cohort,
        files=[{"name": "README.md", "bytes": 6, "sha256": "0" * 64}],
    )
    folder = tmp_path / release.name
    folder.mkdir()
    (folder / "README.md").write_bytes(b"hello\n")
    url = f"/data/releases/{release.name}/README.md"
    sending = client.get(DOWNLOAD)

    busy = client.get(url)
    assert busy.status_code == 503
    assert busy["Retry-After"] == str(downloads.RETRY_AFTER_SECONDS)

    body_of(sending)
    served = client.get(url)
    assert served.status_code == 200
    assert body_of(served) == b"hello\n"


@pytest.mark.usefixtures("one_slot")
def test_a_manifest_not_yet_kept_waits_for_a_slot_too(world: World, client: Client) -> None:
    sending = client.get(DOWNLOAD)

    busy = client.get("/api/v1/exports/manifest.json", {"cohort": world.cohort.number})
    assert_envelope(busy.json(), 503, "downloads_busy")
    assert busy["Retry-After"] == str(downloads.RETRY_AFTER_SECONDS)

    body_of(sending)
    assert client.get("/api/v1/exports/manifest.json").status_code == 200
