"""Places in the time zone database: a city's zone and the zones a question names."""

from __future__ import annotations

import pytest

from loopwright.zones import zone_of_city, zones_named_in


@pytest.mark.parametrize(
    ("question", "zones"),
    [
        ("Give me the current time in Berlin.", ["Europe/Berlin"]),
        ("What is the date in Los Angeles today?", ["America/Los_Angeles"]),
        ("What time is it in Tokyo?", ["Asia/Tokyo"]),
        ("How late is it in Buenos Aires?", ["America/Argentina/Buenos_Aires"]),
        ("what time is it in new york", ["America/New_York"]),  # all lower case: still a place
        ("The time in America/New_York, please.", ["America/New_York"]),  # a zone by its own name
        ("What time is it in UTC?", ["UTC"]),
        ("Is it morning in Sydney or in London?", ["Australia/Sydney", "Europe/London"]),
        ("Tokyo or Tokyo?", ["Asia/Tokyo"]),  # each once
    ],
)
def test_the_zones_a_question_names(question: str, zones: list[str]) -> None:
    assert zones_named_in(question) == zones


@pytest.mark.parametrize(
    "question",
    [
        "What time is it?",
        "What time will it be when I wake?",  # "wake" is Pacific/Wake only as a proper noun
        "Is it central heating time?",
        "What is the date in Berlinale season?",  # a name inside a longer word is not the name
    ],
)
def test_a_question_that_names_no_place(question: str) -> None:
    assert zones_named_in(question) == []


def test_a_citys_zone() -> None:
    assert zone_of_city("Tokyo") == "Asia/Tokyo"
    assert zone_of_city(" new_york ") == "America/New_York"
    assert zone_of_city("Atlantis") is None
