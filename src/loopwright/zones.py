"""Places in the IANA time zone database: which zone a city names, and which zones a text names.

The names are the database's own (``zoneinfo.available_timezones``, from the system or the ``tzdata``
package): a zone's last part is its city ("America/Los_Angeles" → "Los Angeles"), and a zone is also
named by itself ("Europe/Berlin", "UTC"). No list of places is kept here.
"""

from __future__ import annotations

import functools
import re
from zoneinfo import available_timezones

# The database's own groups that are not places: legacy aliases and the placeholder "Factory" zone.
_NOT_PLACES = ("Etc/", "SystemV/", "posix/", "right/")
_NOT_A_PLACE = frozenset({"Factory", "localtime", "posixrules"})


@functools.cache
def _cities() -> dict[str, str]:
    """IANA zone names by their city, in lower case with spaces ("new york" → "America/New_York")."""
    cities: dict[str, str] = {}
    for zone in sorted(available_timezones()):
        area, _, city = zone.rpartition("/")
        if area and not zone.startswith(_NOT_PLACES) and city:
            cities.setdefault(city.replace("_", " ").lower(), zone)
    return cities


@functools.cache
def _names() -> dict[str, str]:
    """Every way a text may name a zone, in lower case: its city, and the zone's whole name."""
    names = dict(_cities())
    for zone in available_timezones():
        if zone not in _NOT_A_PLACE and not zone.startswith(_NOT_PLACES):
            names.setdefault(zone.lower(), zone)
            names.setdefault(zone.replace("_", " ").lower(), zone)
    return names


@functools.cache
def _pattern() -> re.Pattern[str]:
    # Longest names first: "New York" before "York", "America/New_York" before "New York".
    names = sorted(_names(), key=len, reverse=True)
    alternatives = "|".join(re.escape(n).replace(r"\ ", r"[\s_]+") for n in names)
    return re.compile(rf"(?<![\w/])(?:{alternatives})(?![\w/])", re.IGNORECASE)


def zone_of_city(text: str) -> str | None:
    """The zone whose city ``text`` is ("Tokyo" → "Asia/Tokyo"), or None."""
    return _cities().get(re.sub(r"[\s_]+", " ", text).strip().lower())


def zones_named_in(text: str) -> list[str]:
    """The zones ``text`` names, in order of appearance, each once ("the time in Berlin" →
    ["Europe/Berlin"]). A place is a proper noun: a match counts when it is capitalized in the text,
    or when the text is written in lower case throughout ("what time is it in berlin") — so "when I
    wake" is not Pacific/Wake."""
    lower_case = text == text.lower()
    found: dict[str, None] = {}
    for match in _pattern().finditer(text):
        words = match.group(0)
        if not (lower_case or words[0].isupper()):
            continue
        key = re.sub(r"[\s_]+", " ", words).lower()
        zone = _names().get(key) or _names().get(words.lower())
        if zone is not None:
            found[zone] = None
    return list(found)
