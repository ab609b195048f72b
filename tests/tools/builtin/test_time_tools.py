"""Dify's time tools, through the engine: Dify's parameters and answers, and clear errors."""

from __future__ import annotations

from typing import Any

import pytest

from loopwright.tools.builtin.time_tools import time_tools
from loopwright.tools.engine import ToolEngine


async def call(name: str, **args: Any) -> str:
    return (await ToolEngine(time_tools()).invoke(name, args)).observation


async def test_weekday() -> None:
    assert await call("weekday", year=2024, month=2, day=29) == "February 29, 2024 is Thursday."
    assert await call("weekday", year=2023, month=2, day=29) == "Invalid date: Year 2023, Month 2, Day 29."


async def test_timezone_conversion_follows_daylight_saving() -> None:
    winter = await call(
        "timezone_conversion",
        current_time="2024-01-15 12:00:00",
        current_timezone="Europe/Paris",
        target_timezone="America/New_York",
    )
    summer = await call(
        "timezone_conversion",
        current_time="2024-07-15 12:00:00",
        current_timezone="Europe/Paris",
        target_timezone="America/New_York",
    )
    assert (winter, summer) == ("2024-01-15 06:00:00", "2024-07-15 06:00:00")
    assert await call("timezone_conversion", current_time="2024-01-01 00:00:00") == "2024-01-01 01:00:00"


async def test_timestamps_both_ways() -> None:
    stamp = await call("localtime_to_timestamp", localtime="2024-01-01 09:00:00", timezone="Asia/Tokyo")
    assert stamp == "1704067200"  # 2024-01-01 00:00:00 UTC
    back = await call("timestamp_to_localtime", timestamp=1704067200, timezone="America/Sao_Paulo")
    assert back == "2023-12-31 21:00:00"


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("timezone_conversion", {"current_time": "noon", "target_timezone": "UTC"}, "Invalid time"),
        (
            "localtime_to_timestamp",
            {"localtime": "2024-01-01 00:00:00", "timezone": "Mars/Base"},
            "Invalid timezone",
        ),
        ("timestamp_to_localtime", {"timestamp": 10**20, "timezone": "UTC"}, "Invalid timestamp"),
    ],
)
async def test_bad_input_is_an_observation(name: str, args: dict[str, Any], message: str) -> None:
    observation = await call(name, **args)
    assert observation.startswith("tool invoke error") and message in observation
