"""The Polymarket Gamma API client: the only module of `markets` that speaks HTTP.

Every request has a (connect, read) timeout. GETs retry with exponential backoff on
connection errors, timeouts, 429 and 5xx, honouring Retry-After (capped); after the last
attempt a GammaUnavailable says what went wrong. Records are returned as received (dicts);
parsing is `markets.parsing`'s job.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import Any

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from markets.exceptions import GammaUnavailable

logger = logging.getLogger(__name__)

PAGE_LIMIT = 500  # Gamma returns at most 500 records per offset page
ID_BATCH = 50  # ids per by-id request; keeps the query string short


class CappedRetry(Retry):
    """urllib3's Retry, with Retry-After honoured only up to a cap (a hostile header
    must not stall a run for an hour)."""

    retry_after_cap: float = 60.0

    def get_retry_after(self, response: Any) -> float | None:
        value = super().get_retry_after(response)
        return None if value is None else min(value, self.retry_after_cap)

    def new(self, **kw: Any) -> CappedRetry:
        retry = super().new(**kw)
        retry.retry_after_cap = self.retry_after_cap
        return retry


class GammaClient:
    """Read markets from the Gamma API at `base_url`."""

    def __init__(
        self,
        *,
        base_url: str,
        connect_timeout: float = 5.0,
        read_timeout: float = 30.0,
        max_retries: int = 3,
        backoff_seconds: float = 0.5,
        retry_after_cap_seconds: float = 60.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = (connect_timeout, read_timeout)
        retry = CappedRetry(
            total=max_retries,
            connect=max_retries,
            read=max_retries,
            status=max_retries,
            other=0,
            backoff_factor=backoff_seconds,
            status_forcelist=(429, 500, 502, 503, 504),
            allowed_methods=frozenset({"GET"}),
            respect_retry_after_header=True,
            raise_on_status=False,
        )
        retry.retry_after_cap = retry_after_cap_seconds
        self.session = requests.Session()
        self.session.mount("http://", HTTPAdapter(max_retries=retry))
        self.session.mount("https://", HTTPAdapter(max_retries=retry))
        self.session.headers.update(
            {"Accept": "application/json", "User-Agent": "forecaster-arena/1"}
        )

    @classmethod
    def from_settings(
        cls,
        *,
        most_retries: int | None = None,
        most_timeout: float | None = None,
        most_retry_after: float | None = None,
    ) -> GammaClient:
        """The client the settings describe; each `most_*` given caps the setting it names
        (never raises it): a read someone waits on asks for less than a background sync."""

        def capped(value: float, most: float | None) -> float:
            return value if most is None else min(value, most)

        return cls(
            base_url=settings.POLYMARKET_GAMMA_URL,
            connect_timeout=capped(settings.HTTP_CONNECT_TIMEOUT, most_timeout),
            read_timeout=capped(settings.HTTP_READ_TIMEOUT, most_timeout),
            max_retries=int(capped(settings.HTTP_MAX_RETRIES, most_retries)),
            backoff_seconds=settings.HTTP_BACKOFF_SECONDS,
            retry_after_cap_seconds=capped(settings.HTTP_RETRY_AFTER_CAP_SECONDS, most_retry_after),
        )

    def _get(self, path: str, params: list[tuple[str, str]] | dict[str, str]) -> Any:
        url = f"{self.base_url}{path}"
        try:
            response = self.session.get(url, params=params, timeout=self.timeout)
        except requests.Timeout as exc:
            raise GammaUnavailable(f"GET {path} timed out after retries: {exc}") from exc
        except requests.RequestException as exc:
            raise GammaUnavailable(f"GET {path} failed after retries: {exc}") from exc
        if response.status_code != 200:
            raise GammaUnavailable(
                f"GET {path} answered HTTP {response.status_code} after retries: "
                f"{response.text[:200]}"
            )
        try:
            return response.json(parse_int=_int_or_decimal)
        except RecursionError as exc:
            raise GammaUnavailable(
                f"GET {path} returned JSON nested too deeply to read "
                f"({len(response.content)} bytes)"
            ) from exc
        except ValueError as exc:
            raise GammaUnavailable(
                f"GET {path} returned a body that is not valid JSON "
                f"({len(response.content)} bytes): {exc}"
            ) from exc

    def _market_page(self, *, limit: int, offset: int) -> list[Any]:
        body = self._get(
            "/markets",
            {
                "limit": str(limit),
                "offset": str(offset),
                "active": "true",
                "closed": "false",
                # `order=volume` sorts the volume *string*; volumeNum is the number.
                "order": "volumeNum",
                "ascending": "false",
            },
        )
        if not isinstance(body, list):
            raise GammaUnavailable(f"GET /markets returned {type(body).__name__}, not a list")
        return body

    def fetch_top_markets(self, limit: int) -> list[Any]:
        """Return raw records of active, not-closed markets by volume, highest first, with
        `limit` distinct ids at most (repeats across offset pages are kept for the parser to
        refuse). Pages until `limit` distinct ids are seen or a page comes back short; the
        result is sorted here on volumeNum too, since the upstream order is not to be trusted.
        """
        records: list[Any] = []
        seen: set[str] = set()
        offset = 0
        while len(seen) < limit:
            wanted = min(PAGE_LIMIT, limit - len(seen))
            page = self._market_page(limit=wanted, offset=offset)
            distinct_before = len(seen)
            for record in page:
                # Repeats are kept: the parser refuses them with a stated reason.
                seen.add(str(record.get("id")) if isinstance(record, dict) else repr(record))
                records.append(record)
            if len(page) < wanted or len(seen) == distinct_before:
                break  # the listing is exhausted, or it only repeats itself
            offset += len(page)
        ordered = sorted(records, key=volume_of, reverse=True)
        if ordered != records:
            logger.warning("Gamma returned markets out of volume order; sorted them locally")
        return ordered

    def fetch_markets_by_ids(self, ids: Iterable[str]) -> list[Any]:
        """Return the raw records of the given market ids (open or closed), in batches.
        Ids Gamma does not know are simply absent from the result."""
        records: list[Any] = []
        for batch in _batches(sorted(set(ids)), ID_BATCH):
            params = [("id", market_id) for market_id in batch]
            params.append(("limit", str(len(batch))))
            body = self._get("/markets", params)
            if not isinstance(body, list):
                raise GammaUnavailable(f"GET /markets?id=… returned {type(body).__name__}")
            records.extend(body)
        return records


def _int_or_decimal(text: str) -> int | Decimal:
    """Return a JSON integer as an int, or as a Decimal past Python's digit limit for int
    (4,300): one hostile 5,000-digit field would otherwise fail the whole body, where the
    parser refuses just its record."""
    limit = sys.get_int_max_str_digits()  # 0: no limit
    return int(text) if not limit or len(text) <= limit else Decimal(text)


def volume_of(record: Any) -> float:
    if not isinstance(record, dict):
        return -1.0
    for field in ("volumeNum", "volume"):
        try:
            return float(record[field])
        except (KeyError, TypeError, ValueError):
            continue
    return -1.0


def _batches(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
