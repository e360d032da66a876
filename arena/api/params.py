"""Parameter types the routers share."""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated

from pydantic import BeforeValidator

ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")  # ASCII digits only, as the schema says


def _written_as_a_day(value: object) -> object:
    """A day is written YYYY-MM-DD, as the schema says. pydantic alone would also read a number
    as a Unix timestamp (`until=0` the first day of 1970), which no reader of the schema expects."""
    if isinstance(value, str) and not ISO_DAY.fullmatch(value):
        raise ValueError("must be a day written YYYY-MM-DD")
    return value


IsoDate = Annotated[date, BeforeValidator(_written_as_a_day)]
