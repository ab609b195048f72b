"""Dify's ``time`` tools besides ``current_time``: ``weekday``, ``timezone_conversion``,
``localtime_to_timestamp`` and ``timestamp_to_localtime``, with Dify's parameters and answers."""

from __future__ import annotations

import calendar
from datetime import datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from loopwright.tools.base import Tool, ToolInvokeError
from loopwright.tools.function import function_tool

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"  # Dify's, for every time these tools read or write


def _zone(name: str) -> tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # tzdata raises IsADirectoryError for "Asia"
        raise ToolInvokeError(f"Invalid timezone: {name!r}; use an IANA name like 'Europe/Paris'") from None


def _parse(text: str) -> datetime:
    try:
        return datetime.strptime(text.strip(), TIME_FORMAT)
    except ValueError:
        raise ToolInvokeError(f"Invalid time: {text!r}; expected the form 2024-01-31 13:45:00") from None


async def weekday(year: int, month: int, day: int) -> str:
    """Calculate the day of the week of a date.

    Args:
        year: The year, e.g. 2024.
        month: The month, 1 to 12.
        day: The day of the month, 1 to 31.
    """
    try:
        date = datetime(year, month, day)
    except ValueError:
        return f"Invalid date: Year {year}, Month {month}, Day {day}."
    return f"{calendar.month_name[month]} {date.day}, {date.year} is {calendar.day_name[date.weekday()]}."


async def timezone_conversion(
    current_time: str, current_timezone: str = "Asia/Shanghai", target_timezone: str = "Asia/Tokyo"
) -> str:
    """Convert a time to the equivalent time in another time zone.

    Args:
        current_time: The time, such as 2024-01-01 00:00:00.
        current_timezone: The time zone of that time, such as Asia/Shanghai.
        target_timezone: The time zone to convert to, such as Asia/Tokyo.
    """
    local = _parse(current_time).replace(tzinfo=_zone(current_timezone))
    return local.astimezone(_zone(target_timezone)).strftime(TIME_FORMAT)


async def localtime_to_timestamp(localtime: str, timezone: str = "Asia/Shanghai") -> str:
    """Convert a local time to a Unix timestamp.

    Args:
        localtime: The local time, such as 2024-01-01 00:00:00.
        timezone: The time zone of that time, such as Asia/Shanghai.
    """
    return str(int(_parse(localtime).replace(tzinfo=_zone(timezone)).timestamp()))


async def timestamp_to_localtime(timestamp: int, timezone: str = "Asia/Shanghai") -> str:
    """Convert a Unix timestamp to the local time of a time zone.

    Args:
        timestamp: Seconds since 1970-01-01 00:00:00 UTC.
        timezone: The time zone, such as Asia/Shanghai.
    """
    try:
        return datetime.fromtimestamp(timestamp, _zone(timezone)).strftime(TIME_FORMAT)
    except (OverflowError, OSError, ValueError):
        raise ToolInvokeError(f"Invalid timestamp: {timestamp}") from None


def time_tools() -> list[Tool]:
    """Dify's time tools other than ``current_time`` (loopwright's own)."""
    return [
        function_tool(weekday),
        function_tool(timezone_conversion),
        function_tool(localtime_to_timestamp),
        function_tool(timestamp_to_localtime),
    ]
