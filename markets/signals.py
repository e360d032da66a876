"""Signals of the catalogue. `markets` imports no other app, so whoever keeps the
operations record (arena) listens here instead of being called."""

from __future__ import annotations

from django.dispatch import Signal

# Sent when fetching from the market source failed. Arguments: `operation` ("sync" or
# "refresh"), `source` (its name), `error` (why), `requested` (how many markets were asked).
market_fetch_failed = Signal()
