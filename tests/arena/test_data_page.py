"""Issue 10, "Downloadable from the site (a Data page)": what the exports are, the live
streaming downloads (every cohort or one), the API docs, and the frozen weekly releases —
newest first, with their files, sizes, row counts, SHA-256, citation and changes — whose files
are served from RELEASES_ROOT and nothing else.
"""

from __future__ import annotations

import hashlib
import html
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.http import urlencode

from arena.models import Cohort, DataRelease, Trade
from arena.selectors.exports import DATASETS
from arena.selectors.releases import release_citation_of
from arena.services.releases import release_publish
from tests.page_world import World, build_world

PUBLISHED_AT = datetime(2031, 3, 2, 1, 0, tzinfo=UTC)
EXPORTS = reverse("api:bets_csv").rsplit("/", 1)[0]  # the API's exports mount


@pytest.fixture
def root(settings: Any, tmp_path: Path) -> Path:
    settings.RELEASES_ROOT = tmp_path / "releases"
    return Path(settings.RELEASES_ROOT)


def publish(world: World, *, at: datetime = PUBLISHED_AT) -> DataRelease:
    Cohort.objects.filter(pk=world.cohort.pk).update(
        status=Cohort.Status.COMPLETED, completed_at=at - timedelta(hours=1)
    )
    release = release_publish(cohort_number=world.cohort.number, now=at).release
    assert release is not None
    return release


def page(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return html.unescape(response.content.decode())


def hrefs(text: str) -> set[str]:
    return set(re.findall(r'href="([^"]+)"', text))


@pytest.fixture
def releases(root: Path, db: None) -> list[DataRelease]:
    """Three weeks' releases, oldest first, the last a correction (version 2)."""
    first, second = build_world(scale=1), build_world(scale=1)
    published = [publish(first), publish(second, at=PUBLISHED_AT + timedelta(weeks=1))]
    Trade.objects.filter(agent__cohort=second.cohort, brier_score__isnull=True).update(
        brier_score=0.25, side_won=False
    )
    correction = release_publish(
        cohort_number=second.cohort.number, now=PUBLISHED_AT + timedelta(weeks=2)
    ).release
    assert correction is not None
    assert correction.version == 2
    return [*published, correction]


@pytest.mark.django_db
def test_the_data_page_describes_every_dataset_with_its_columns(client: Client) -> None:
    text = page(client, reverse("arena:data"))

    for name, dataset in DATASETS.items():
        assert f'id="dataset-{name}"' in text
        assert dataset.description in text
        for column in dataset.columns:
            assert f"<code>{column.name}</code>" in text
            assert column.description in text


@pytest.mark.django_db
def test_the_data_page_links_the_live_exports_their_manifest_and_the_api_docs(
    client: Client,
) -> None:
    links = hrefs(page(client, reverse("arena:data")))

    for name in DATASETS:
        assert f"{EXPORTS}/{name}.csv" in links
        assert f"{EXPORTS}/{name}.jsonl" in links
    assert f"{EXPORTS}/manifest.json" in links
    assert "/api/v1/docs" in links
    assert f"{EXPORTS}/bets.csv" == reverse("api:bets_csv")


@pytest.mark.django_db
def test_the_data_page_links_one_cohorts_exports_when_asked(client: Client) -> None:
    world = build_world(scale=1)
    number = world.cohort.number

    links = hrefs(page(client, reverse("arena:data") + f"?cohort={number}"))

    query = urlencode({"cohort": number})
    for name in DATASETS:
        assert f"{EXPORTS}/{name}.csv?{query}" in links
        assert f"{EXPORTS}/{name}.jsonl?{query}" in links
    assert f"{EXPORTS}/manifest.json?{query}" in links
    assert f"{EXPORTS}/bets.csv" not in links


@pytest.mark.django_db
@pytest.mark.parametrize("cohort", ["abc", "-1", "999999", "1' OR '1'='1", "9" * 40, ""])
def test_a_cohort_parameter_naming_no_cohort_shows_every_cohorts_links(
    client: Client, cohort: str
) -> None:
    links = hrefs(page(client, reverse("arena:data") + "?" + urlencode({"cohort": cohort})))

    assert f"{EXPORTS}/bets.csv" in links
    assert not any("cohort=" in link for link in links)


@pytest.mark.django_db
def test_the_nav_links_the_data_page(client: Client) -> None:
    text = page(client, reverse("arena:leaderboard"))

    assert re.search(r'<nav>.*<a href="/data/">Data</a>.*</nav>', text, flags=re.S)


@pytest.mark.django_db
def test_with_no_release_the_page_says_when_the_first_comes(client: Client) -> None:
    text = page(client, reverse("arena:data"))

    assert "No release yet: the first is published when a cohort completes." in text


def test_releases_are_listed_newest_first_with_files_sizes_rows_sha256_citation_changes(
    client: Client, releases: list[DataRelease]
) -> None:
    text = page(client, reverse("arena:data"))

    positions = [text.index(f'id="release-{r.name}"') for r in releases]
    assert positions == sorted(positions, reverse=True)  # newest first
    for release in releases:
        block = text[text.index(f'id="release-{release.name}"') :]
        block = block[: block.index("</section>")]
        assert release.sha256 in block
        assert release_citation_of(release) in block
        for entry in release.files:
            url = reverse("arena:release_file", args=[release.name, entry["name"]])
            assert f'href="{url}"' in block
            assert entry["sha256"] in block
            if entry.get("rows") is not None:
                row = block[block.index(f'href="{url}"') :].split("</tr>", 1)[0]
                assert f'<td class="num">{entry["rows"]}</td>' in row
    correction = releases[-1]
    assert correction.changes
    for line in correction.changes.splitlines():
        assert line in text


def test_the_release_page_shows_its_files_citation_changes_and_versions(
    client: Client, releases: list[DataRelease]
) -> None:
    v1 = DataRelease.objects.get(cohort=releases[-1].cohort, version=1)
    correction = releases[-1]

    text = page(client, reverse("arena:release", args=[correction.name]))

    assert f"Data release {correction.name}" in text
    assert release_citation_of(correction) in text
    for line in correction.changes.splitlines():
        assert line in text
    for entry in correction.files:
        assert entry["sha256"] in text
    assert f'href="{reverse("arena:release", args=[v1.name])}"' in text
    v1_text = page(client, reverse("arena:release", args=[v1.name]))
    assert "None: the first release of this cohort." in v1_text


@pytest.mark.parametrize(
    ("name", "content_type", "attachment"),
    [
        ("bets.csv", "text/csv; charset=utf-8", True),
        ("decisions.jsonl", "application/x-ndjson; charset=utf-8", True),
        ("manifest.json", "application/json", False),
        ("README.md", "text/markdown; charset=utf-8", False),
        ("SHA256SUMS", "text/plain; charset=utf-8", False),
    ],
)
def test_a_release_file_is_served_whole_with_its_content_type(
    client: Client,
    releases: list[DataRelease],
    root: Path,
    name: str,
    content_type: str,
    attachment: bool,
) -> None:
    release = releases[0]

    response = client.get(reverse("arena:release_file", args=[release.name, name]))

    assert response.status_code == 200
    assert response["Content-Type"] == content_type
    assert response["Content-Disposition"].startswith("attachment" if attachment else "inline")
    body = b"".join(response.streaming_content)  # type: ignore[attr-defined]
    assert body == (root / release.name / name).read_bytes()
    listed = next(f for f in release.files if f["name"] == name)
    assert hashlib.sha256(body).hexdigest() == listed["sha256"]
    assert "immutable" in response["Cache-Control"]


def test_names_a_release_does_not_list_are_refused(
    client: Client, releases: list[DataRelease], root: Path
) -> None:
    release = releases[0]
    folder = root / release.name
    # a file on the disk, in the folder, that the release does not list
    folder.chmod(0o755)
    (folder / "secret.txt").write_text("not part of the release")
    (root / "outside.csv").write_text("outside every release")
    base = reverse("arena:release", args=[release.name])
    refused = [
        base + "secret.txt",
        base + ".partial-x",
        base + "..",
        base + "%2E%2E",
        base + "..%2Foutside.csv",
        base + "..%2F..%2Fsettings.py",
        base + "%2Fetc%2Fpasswd",
        base + "..\\outside.csv",
        base + "bets.csv%00",
        "/data/releases/../outside.csv",
        "/data/releases/..%2Foutside.csv/bets.csv",
        "/data/releases/no-such-release/bets.csv",
        "/data/releases/no-such-release/",
    ]
    for url in refused:
        response = client.get(url)
        assert response.status_code == 404, url
        assert b"not part of the release" not in response.content
        assert b"outside every release" not in response.content


def test_a_listed_file_missing_from_the_disk_is_not_found(
    client: Client, releases: list[DataRelease], root: Path
) -> None:
    release = releases[0]
    (root / release.name).chmod(0o755)
    (root / release.name / "bets.csv").unlink()

    response = client.get(reverse("arena:release_file", args=[release.name, "bets.csv"]))

    assert response.status_code == 404


def test_the_data_page_reads_the_same_queries_whatever_the_number_of_releases(
    client: Client, releases: list[DataRelease], django_assert_max_num_queries: Any
) -> None:
    url = reverse("arena:data")
    client.get(url)  # warm the per-process caches (content types, session)
    with django_assert_max_num_queries(2):
        assert client.get(url).status_code == 200
    with django_assert_max_num_queries(2):
        assert client.get(reverse("arena:release", args=[releases[-1].name])).status_code == 200
