"""Arithmetic as people write it, rewritten into the calculator's expression syntax.

"17 times 23", "12% of 250", "the square root of 625", "subtract 89 from 250", "increase 80 by 10
percent", "50 as a percentage of 200": a caller (a person, or a small model copying the words of a
question) need not translate them into symbols first. The result is an ordinary expression, which
the calculator's safe evaluator then reads; nothing here evaluates anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# Words that ask for a result rather than state it — up to the asking verb ("use the calculator to
# compute …") — and, at the end, punctuation and the tool named ("… with the calculator").
_LEAD = re.compile(
    r"^(?:[a-z ]*?\b)?(?:what(?:'s|\s+is|\s+are)|how\s+(?:much|long|far|heavy|tall|big|hot|cold)\s+"
    r"(?:is|are)|calculate|compute|evaluate|work\s+out|find|solve)\s+"
)
_TRAIL = re.compile(r"(?:\s+(?:with|using|on|in)\s+(?:the\s+|a\s+)?calculator)?[\s?!.=]*$")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_ORDINAL = re.compile(r"(?<=\d)(?:st|nd|rd|th)\b")
_PERCENT = r"\s*(?:%|percent|per\s+cent)"

_Build = Callable[..., str]


def _form(pattern: str, build: _Build) -> tuple[re.Pattern[str], _Build]:
    return re.compile(pattern), build


# Whole phrases with operands (matched against the whole text, first match wins; the operands are
# themselves phrases). Percentages of a number ("12% of 250") are operators, below.
_FORMS: list[tuple[re.Pattern[str], _Build]] = [
    _form(r"add (.+) (?:and|to) (.+)", lambda a, b: f"({a}) + ({b})"),
    _form(r"(?:the )?sum of (.+) and (.+)", lambda a, b: f"({a}) + ({b})"),
    _form(r"subtract (.+) from (.+)", lambda a, b: f"({b}) - ({a})"),
    _form(r"(?:the )?difference (?:between|of) (.+) and (.+)", lambda a, b: f"({a}) - ({b})"),
    _form(r"multiply (.+) (?:by|and|with) (.+)", lambda a, b: f"({a}) * ({b})"),
    _form(r"(?:the )?product of (.+) and (.+)", lambda a, b: f"({a}) * ({b})"),
    _form(r"divide (.+) by (.+)", lambda a, b: f"({a}) / ({b})"),
    _form(r"(?:the )?quotient of (.+) and (.+)", lambda a, b: f"({a}) / ({b})"),
    _form(rf"(?:increase|raise) (.+) by (.+?){_PERCENT}", lambda a, b: f"({a}) * (1 + ({b}) / 100)"),
    _form(rf"(?:decrease|reduce|lower) (.+) by (.+?){_PERCENT}", lambda a, b: f"({a}) * (1 - ({b}) / 100)"),
    _form(r"(.+) as an? (?:percentage|percent) of (.+)", lambda a, b: f"({a}) / ({b}) * 100"),
    _form(r"(.+) is what (?:percentage|percent|%) of (.+)", lambda a, b: f"({a}) / ({b}) * 100"),
    _form(r"what (?:percentage|percent|%) of (.+) is (.+)", lambda a, b: f"({b}) / ({a}) * 100"),
    _form(r"(?:the )?square root of (.+)", lambda a: f"sqrt({a})"),
    _form(r"(?:the )?cube root of (.+)", lambda a: f"({a}) ** (1 / 3)"),
    _form(r"(.+) squared", lambda a: f"({a}) ** 2"),
    _form(r"(.+) cubed", lambda a: f"({a}) ** 3"),
    _form(
        r"(.+?) (?:raised )?to the (?:power of )?(.+?)(?: power)?",
        lambda a, b: f"({a}) ** ({b})",
    ),
]

# Operator words inside an expression ("17 times 23 plus 4").
_WORDS: list[tuple[re.Pattern[str], str]] = [
    # "12% of 250" binds as tightly as a product: "64 - 18% of 64" is 64 - 0.18 * 64.
    (re.compile(rf"(\d+(?:\.\d+)?|\)){_PERCENT} of\b"), r"\1 / 100 *"),
    (re.compile(r"\bmultiplied by\b|\btimes\b|(?<=\d)\s*x\s*(?=[\d(])"), " * "),
    (re.compile(r"\bdivided by\b|\bover\b"), " / "),
    (re.compile(r"\bplus\b"), " + "),
    (re.compile(r"\bminus\b"), " - "),
    (re.compile(r"\bmod(?:ulo)?\b"), " % "),
    (re.compile(r"\bsquared\b"), " ** 2"),
    (re.compile(r"\bcubed\b"), " ** 3"),
    (re.compile(r"\bto the power of\b"), " ** "),
]


def to_expression(text: str) -> str:
    """The expression a phrase stands for (unchanged when it has no words this module knows)."""
    phrase = clean(text)
    for pattern, build in _FORMS:
        found = pattern.fullmatch(phrase)
        if found is not None:
            return build(*(to_expression(part) for part in found.groups()))
    for pattern, symbol in _WORDS:
        phrase = pattern.sub(symbol, phrase)
    return " ".join(phrase.split())


def clean(text: str) -> str:
    """Lower case, without the words that ask for a result, a trailing question mark, thousands
    separators, currency signs or ordinal suffixes ("the 16th power")."""
    phrase = " ".join(text.lower().replace("$", "").replace("€", "").replace("£", "").split())
    phrase = _TRAIL.sub("", _LEAD.sub("", phrase))
    if "(" not in phrase:  # "min(1,250)" separates arguments, not thousands
        phrase = _THOUSANDS.sub("", phrase)
    return _ORDINAL.sub("", phrase)
