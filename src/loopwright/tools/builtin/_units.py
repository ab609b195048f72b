"""Unit conversions for the calculator: "5 inches to cm", "how many minutes are in 3.5 hours".

The units, their factors and offsets (temperatures) come from ``pint``'s registry, which knows far
more units, spellings and plurals than a table kept here would. Only unit names go to pint; the
quantity's number is read by the calculator's own safe evaluator (``evaluate``), so pint never
parses anything but units.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable
from typing import Any

# "how many <unit> [are] in <quantity>" (first: it holds an " in " too) and
# "[convert] <quantity> to|in|into <unit>".
_CONVERSIONS = (
    re.compile(
        r"how many (?P<unit>[^\d()]+?) (?:are |is |are there |is there |there are |make |makes )?"
        r"(?:in|per|to|for) (?P<quantity>.+)"
    ),
    re.compile(r"(?:convert |change )?(?P<quantity>.+?) (?:to|into|in|as) (?P<unit>[^\d()]+)"),
)
# A quantity: a number (or an expression) and then the unit, as words.
_QUANTITY = re.compile(r"(?P<number>.*?)\s*(?P<unit>[a-z°µ][a-z°µ _/^*\d-]*)")
_ONE = re.compile(r"^(?:an?|one|per)$")
# "degrees Celsius" is one unit (pint would read "degrees" times "Celsius").
_DEGREES = re.compile(r"^deg(?:ree)?s? (?=celsius|fahrenheit|kelvin|rankine|c$|f$)")
_TEMPERATURE_LETTER = {"c": "degC", "f": "degF"}


@functools.cache
def _registry() -> Any:
    # pint is imported and its registry built (about half a second) on the first conversion only.
    import pint

    return pint.UnitRegistry()


_registry_lock = threading.Lock()


def registry() -> Any:
    with _registry_lock:  # two first conversions at once build one registry
        return _registry()


def convert(phrase: str, number: Callable[[str], float]) -> float | None:
    """The quantity converted to the unit asked for, or ``None`` when the phrase is not a
    conversion. ``number`` reads the quantity's number. Raises ValueError for unknown units and
    for units of different kinds (metres to seconds)."""
    for pattern in _CONVERSIONS:
        found = pattern.fullmatch(phrase)
        if found is None:
            continue
        quantity = _QUANTITY.fullmatch(found["quantity"])
        if quantity is None:
            continue
        target = _unit(found["unit"])
        source = _unit(quantity["unit"])
        text = quantity["number"].strip()
        value = 1.0 if not text or _ONE.match(text) else number(text)
        return _to(value, source, target)
    return None


def _unit(text: str) -> Any:
    import pint

    words = _DEGREES.sub("", text.strip().removeprefix("the ").removeprefix("a ").removeprefix("an "))
    words = _TEMPERATURE_LETTER.get(words, words).replace(" per ", "/")
    ureg = registry()
    for spelling in (words, words.replace(" ", "_")):
        try:
            return ureg.parse_units(spelling)
        except (pint.errors.UndefinedUnitError, pint.errors.DefinitionSyntaxError, AttributeError, TypeError):
            continue
        except Exception:  # pint's tokenizer raises plain errors on odd input; it is not a unit either
            continue
    raise ValueError(f"unknown unit {text.strip()!r}")


def _to(value: float, source: Any, target: Any) -> float:
    import pint

    ureg = registry()
    try:
        converted = ureg.Quantity(value, source).to(target)
    except pint.errors.DimensionalityError:
        raise ValueError(f"cannot convert {source:~} to {target:~}: they measure different things") from None
    return float(converted.magnitude)
