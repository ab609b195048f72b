"""``current_time``: the current date and time in a timezone."""

from __future__ import annotations

import functools
import re
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from loopwright.model.entities import ToolExample
from loopwright.tools.base import Tool, ToolInvokeError
from loopwright.tools.function import function_tool


async def current_time(timezone: str = "UTC") -> str:
    """Get the current date and time.

    Args:
        timezone: An IANA timezone name such as "UTC", "Europe/Paris" or "Asia/Tokyo", or the city
            of one ("Paris", "Tokyo", "New York").
    """
    name = _zone_of_city(timezone) or timezone.strip()
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # tzdata raises IsADirectoryError for "Asia"
        raise ToolInvokeError(
            f"unknown timezone {timezone!r}; use an IANA name like 'Europe/Paris' or a city like 'Tokyo'"
        ) from None
    now = datetime.now(zone)
    return now.strftime(f"%Y-%m-%d %H:%M:%S %A ({name}, UTC%z)")


@functools.cache
def _cities() -> dict[str, str]:
    """IANA zone names by their city, in lower case with spaces ("new york" → "America/New_York");
    the zones' own database, so no list is kept here."""
    cities: dict[str, str] = {}
    for zone in sorted(available_timezones()):
        area, _, city = zone.rpartition("/")
        if area and not area.startswith("Etc") and city:
            cities.setdefault(city.replace("_", " ").lower(), zone)
    return cities


def _zone_of_city(text: str) -> str | None:
    return _cities().get(re.sub(r"[\s_]+", " ", text).strip().lower())


# A worked example for small models (few-shot): a zone named in the question, the answer read
# from the result.
CURRENT_TIME_EXAMPLES = (
    ToolExample(
        question="Is it morning or evening in Sydney now?",
        arguments={"timezone": "Australia/Sydney"},
        result="2025-03-14 21:05:41 Friday (Australia/Sydney, UTC+1100)",
        answer="In Sydney it is 21:05 on Friday 2025-03-14: evening.",
    ),
)


def current_time_tool() -> Tool:
    return function_tool(current_time, examples=CURRENT_TIME_EXAMPLES, from_question={"timezone": "phrase"})
