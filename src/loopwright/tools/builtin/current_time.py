"""``current_time``: the current date and time in a timezone."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from loopwright.model.entities import ToolExample
from loopwright.tools.base import Tool, ToolInvokeError
from loopwright.tools.function import function_tool
from loopwright.zones import zone_of_city


async def current_time(timezone: str = "UTC") -> str:
    """The time now: the current date, time and day of the week.

    Args:
        timezone: An IANA timezone name such as "UTC", "Europe/Paris" or "Asia/Tokyo", or the city
            of one ("Paris", "Tokyo", "New York").
    """
    name = zone_of_city(timezone) or timezone.strip()
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # tzdata raises IsADirectoryError for "Asia"
        raise ToolInvokeError(
            f"unknown timezone {timezone!r}; use an IANA name like 'Europe/Paris' or a city like 'Tokyo'"
        ) from None
    now = datetime.now(zone)
    return now.strftime(f"%Y-%m-%d %H:%M:%S %A ({name}, UTC%z)")


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
    return function_tool(current_time, examples=CURRENT_TIME_EXAMPLES, from_question={"timezone": "place"})
