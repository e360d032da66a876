"""The Data page, where the data is downloadable from the site: what the exports are, the live
streaming downloads (every cohort or one), the API docs, and the frozen weekly releases — one
entry per cohort (its latest version), newest cohort first, 20 cohorts a page, with their
files, sizes, row counts, SHA-256, citation and changes — whose files are served from
RELEASES_ROOT and nothing else. A release's page lists the cohort's other versions and says
when it is superseded.
"""

from __future__ import annotations

import hashlib
import html
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.http import urlencode

from agents.models import BenchmarkModel
from arena.models import Cohort, DataRelease, Position, Trade
from arena.selectors.exports import DATASETS
from arena.selectors.releases import release_citation_of
from arena.services.releases import release_publish
from tests.page_world import World, build_world, panel_resolved

PUBLISHED_AT = datetime(2031, 3, 2, 1, 0, tzinfo=UTC)
EXPORTS = reverse("api:bets_csv").rsplit("/", 1)[0]  # the API's exports mount


@pytest.fixture
def root(settings: Any, tmp_path: Path) -> Path:
    settings.RELEASES_ROOT = tmp_path / "releases"
    return Path(settings.RELEASES_ROOT)


def settle(world: World, *, kinds: tuple[str, ...]) -> None:
    """Settle the open positions of the world's agents of these kinds before its last
    snapshot, their bets scored (lost)."""
    ids = list(
        Position.objects.filter(
            agent__cohort=world.cohort, agent__model__kind__in=kinds, status=Position.Status.OPEN
        ).values_list("pk", flat=True)
    )
    Trade.objects.filter(position__in=ids, kind=Trade.Kind.BUY).update(
        brier_score=0.0004, side_won=False, scored_at=world.cohort.started_at
    )
    Position.objects.filter(pk__in=ids).update(
        status=Position.Status.SETTLED,
        settlement_value=Decimal("0.00"),
        closed_at=world.cohort.started_at,
    )
    panel_resolved(world.cohort)


def publish(
    world: World, *, at: datetime = PUBLISHED_AT, baselines_open: bool = False
) -> DataRelease:
    """Complete the world's cohort with every bet of its LLM agents scored (and the
    baselines' positions settled before its last snapshot, unless `baselines_open`), and
    publish it."""
    Cohort.objects.filter(pk=world.cohort.pk).update(
        status=Cohort.Status.COMPLETED, completed_at=at - timedelta(hours=1)
    )
    kinds = () if baselines_open else (BenchmarkModel.Kind.BASELINE,)
    settle(world, kinds=(BenchmarkModel.Kind.LLM, *kinds))
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
    """Three releases, oldest first: the first cohort's r1; the second's r1, with its
    baselines' positions open at release time, and its r2 once they settled."""
    first, second = build_world(scale=1), build_world(scale=1)
    published = [
        publish(first),
        publish(second, at=PUBLISHED_AT + timedelta(weeks=1), baselines_open=True),
    ]
    settle(second, kinds=(BenchmarkModel.Kind.BASELINE,))
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
@pytest.mark.parametrize(
    "cohort", ["abc", "-1", "999999", "1' OR '1'='1", "9" * 40, "", "²", "5001²", "９", "9" * 5000]
)
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

    assert (
        "No release yet: the first is published when a cohort has completed and every bet of "
        "its LLM agents is scored (or its market cancelled)." in text
    )


@pytest.mark.django_db
def test_the_page_says_when_a_release_is_published_and_that_a_change_is_the_next_release(
    client: Client,
) -> None:
    text = " ".join(page(client, reverse("arena:data")).split())

    assert (
        "A cohort's release is published once the cohort has completed and nothing its LLM "
        "agents are ranked by can change: every bet of theirs scored, or its market cancelled"
        in text
    )
    assert "Baseline and outside agents never hold it back" in text
    assert (
        "the cohort's next release — <code>cohort-N-r2</code>, <code>r3</code>, … — holds it "
        "and says what changed" in text
    )
    assert "Releases are numbered r1, r2, …; v1 is the methodology's version" in text


def test_each_cohort_is_listed_once_at_its_latest_version_newest_cohort_first(
    client: Client, releases: list[DataRelease]
) -> None:
    first, superseded, correction = releases
    text = page(client, reverse("arena:data"))

    assert f'id="release-{superseded.name}"' not in text  # v1 of the corrected cohort
    shown = [first, correction]
    positions = [text.index(f'id="release-{r.name}"') for r in shown]
    assert positions == sorted(positions, reverse=True)  # the later cohort first
    for release in shown:
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
    block = text[text.index(f'id="release-{correction.name}"') :].split("</section>", 1)[0]
    assert "r2 — supersedes r1" in block
    assert "<dt>Release</dt><dd>r2 · methodology v2</dd>" in block
    assert "Open at release time" not in block  # r2 holds them settled
    assert f'href="{reverse("arena:release", args=[correction.name])}#versions"' in block
    assert correction.changes
    for line in correction.changes.splitlines():
        assert line in block
    first_block = text[text.index(f'id="release-{first.name}"') :].split("</section>", 1)[0]
    assert "supersedes" not in first_block


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
    assert "Superseded by" not in text  # the latest version
    v1_text = page(client, reverse("arena:release", args=[v1.name]))
    assert "None: the first release of this cohort." in v1_text


def test_a_superseded_release_says_so_and_links_its_successor(
    client: Client, releases: list[DataRelease]
) -> None:
    first, superseded, correction = releases

    text = page(client, reverse("arena:release", args=[superseded.name]))

    notice = text[text.index('class="notice superseded"') :].split("</p>", 1)[0]
    assert re.search(rf"Superseded by <a href=\"[^\"]+\">{correction.name}</a>", notice)
    assert f'href="{reverse("arena:release", args=[correction.name])}"' in notice
    assert text.index("Superseded by") < text.index('id="files"')  # before anything else
    # what it held open, which its successor holds settled
    held = superseded.open_at_release
    assert held["positions"]
    assert held["bets"]
    assert all(p["model_kind"] == "baseline" for p in held["positions"])
    assert (
        f"{len(held['positions'])} positions and {len(held['bets'])} bets of baseline or "
        "outside agents, in the files as open" in " ".join(text.split())
    )
    assert "release r1" in text
    assert "Superseded by" not in page(client, reverse("arena:release", args=[first.name]))


def bare_releases(count: int, *, start: int = 7000) -> None:
    """`count` cohorts with a bare release row each (no files on the disk): enough to page."""
    for k in range(count):
        cohort = Cohort.objects.create(
            number=start + k,
            week_start=(FIRST_SUNDAY + timedelta(weeks=k)).date(),
            started_at=FIRST_SUNDAY + timedelta(weeks=k),
            status=Cohort.Status.COMPLETED,
            completed_at=FIRST_SUNDAY + timedelta(weeks=k + 1),
        )
        DataRelease.objects.create(
            cohort=cohort,
            version=1,
            name=f"cohort-{cohort.number}-v1",
            published_at=FIRST_SUNDAY + timedelta(weeks=k + 1),
            methodology_version="v1",
            manifest={"files": []},
            files=[],
            sha256="0" * 64,
            total_bytes=0,
        )


FIRST_SUNDAY = datetime(2040, 1, 1, tzinfo=UTC)


@pytest.mark.django_db
def test_releases_are_paginated_twenty_cohorts_a_page(client: Client) -> None:
    bare_releases(45)
    url = reverse("arena:data")

    def shown(text: str) -> list[int]:
        return [int(n) for n in re.findall(r'id="release-cohort-(\d+)-v1"', text)]

    first, second, third = (page(client, f"{url}?page={n}") for n in (1, 2, 3))
    assert shown(first) == list(range(7044, 7024, -1))
    assert shown(second) == list(range(7024, 7004, -1))
    assert shown(third) == list(range(7004, 6999, -1))
    assert "page 2 of 3" in second
    assert f'href="{url}?page=3#releases"' in second
    assert f'href="{url}?page=1#releases"' in second
    assert shown(page(client, url)) == shown(first)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("value", "expected_page"),
    [("abc", 1), ("", 1), ("²", 1), ("1.5", 1), ("9" * 5000, 1), ("0", 2), ("-3", 2), ("99", 2)],
)
def test_a_page_that_is_not_a_page_shows_the_first_or_the_last(
    client: Client, value: str, expected_page: int
) -> None:
    bare_releases(21)

    text = page(client, reverse("arena:data") + "?" + urlencode({"page": value}))

    assert f"page {expected_page} of 2" in text


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


@pytest.mark.django_db
def test_the_pages_read_the_same_queries_whatever_the_number_of_releases(
    client: Client, root: Path
) -> None:
    def queries(url: str) -> int:
        client.get(url)  # warm the per-process caches (content types, session)
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    world = build_world(scale=1)
    first = publish(world)
    data_url = reverse("arena:data")
    release_url = reverse("arena:release", args=[first.name])
    few = (queries(data_url), queries(release_url))

    Trade.objects.filter(agent__cohort=world.cohort, brier_score__isnull=True).update(
        brier_score=0.25
    )
    assert release_publish(cohort_number=world.cohort.number).status == "published"
    bare_releases(30)

    assert (queries(data_url), queries(release_url)) == few
    assert few[0] <= 3  # the cohort numbers, the releases' count, one page of them
    assert few[1] <= 2  # the release, its cohort's versions
