"""Reading a question's numbers for the embedded model's grammar: word problems and plain answers.

A question states its calculation in one clause ("What is 17 * 23?", "Subtract 89 from 250", "15% of
80"), which a small model copies into the calculator well; or it is a word problem, whose numbers are
spread over a sentence ("I have 3 boxes of 48 eggs. How many eggs is that?") or written in words
("twelve times seven"), which no clause of it states. For a word problem the model writes the
expression itself, over the question's numbers only (``written_expression_pattern``): copying a clause
such as "how many eggs is that" into the calculator fails every time.

After a tool returned a number, the answer states it in a plain sentence, "<what> is <number>[ unit].":
``answer_subjects`` are the ways the question names what was computed ("3 boxes of 48 eggs", "15% of
80"), ``unit_words`` the words that may follow the number ("eggs", "kilometers").

Nothing here knows a tool: it reads English numbers and the words that join two of them in a stated
calculation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_WORD_VALUES: dict[str, int] = {
    **{w: i for i, w in enumerate(_UNITS)},
    **{w: 20 + 10 * i for i, w in enumerate(_TENS)},
    "dozen": 12,
}
_NUMBER_WORD = "|".join(sorted([*_WORD_VALUES, *_SCALES], key=len, reverse=True))
# A number in words: "seven", "twenty-five", "three hundred and twelve", "a dozen" (one run of words)
_WORDS_RUN = re.compile(rf"\b(?:{_NUMBER_WORD})(?:(?:[\s-]+|\s+and\s+)(?:{_NUMBER_WORD}))*\b", re.IGNORECASE)
_DIGITS = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|\d+(?:\.\d+)?")
_CLAUSE_END = re.compile(r"[.;:!?](?:\s+|$)|,\s+")
# The words that join two numbers in a calculation the question states: "17 times 23", "89 from
# 250", "12% of 250", "2 to the power of 10", "345 and 789" ("add 345 and 789"), "50 as a percentage
# of 200" (which the calculator reads as it is written).
_JOINING = frozenset(
    [
        "as",
        "a",
        "an",
        "percentage",
        "plus",
        "minus",
        "times",
        "x",
        "multiplied",
        "divided",
        "by",
        "over",
        "of",
        "from",
        "and",
        "to",
        "the",
        "power",
        "percent",
        "per",
        "cent",
        "%",
        "mod",
        "modulo",
        "+",
        "-",
        "*",
        "/",
        "^",
        "×",
        "÷",
        "**",
    ]
)
_ASKING = re.compile(
    r"^(?:please\s+)?(?:what(?:'s|\s+is|\s+are)|how\s+much\s+(?:is|are)|calculate|compute|"
    r"evaluate|work\s+out|find|tell\s+me|convert|how\s+many\s+[A-Za-z]+\s+(?:are|is)\s+(?:there\s+)?in)\s+",
    re.IGNORECASE,
)
EXPRESSION_MAX_OPERATORS = 4
RESULT_SUBJECT = "The result"  # an answer that names nothing of the question: "The result is 161."


def _word_number(words: str) -> int | None:
    """The value of a number in words ("three hundred and twelve" is 312)."""
    total, current = 0, 0
    for word in re.split(r"[\s-]+", words.lower()):
        if word == "and":
            continue
        if word in _SCALES:
            current = max(current, 1) * _SCALES[word]
            if _SCALES[word] >= 1000:
                total, current = total + current, 0
        elif word in _WORD_VALUES:
            current += _WORD_VALUES[word]
        else:
            return None
    return total + current


def _numbers_in(text: str) -> list[tuple[int, int, str]]:
    """The numbers of ``text``, in order: (start, end, value as digits)."""
    found = [(m.start(), m.end(), m.group().replace(",", "")) for m in _DIGITS.finditer(text)]
    for m in _WORDS_RUN.finditer(text):
        if m.group().lower() == "and":
            continue
        value = _word_number(m.group())
        if value is not None:
            found.append((m.start(), m.end(), str(value)))
    return sorted(found)


def has_number_words(question: str) -> bool:
    return _WORDS_RUN.search(question) is not None


def question_numbers(question: str) -> list[str]:
    """The question's numbers as digits, each once, in order ("twelve" is "12")."""
    return list(dict.fromkeys(value for _, _, value in _numbers_in(question)))


def _clauses(question: str) -> list[str]:
    return [c.strip() for c in _CLAUSE_END.split(question) if c.strip()]


def _states_calculation(clause: str) -> bool:
    """Whether two numbers of the clause are joined only by calculation words ("48 by 12")."""
    numbers = _numbers_in(clause)
    for (_, end, _), (start, _, _) in zip(numbers, numbers[1:], strict=False):
        between = clause[end:start].lower().replace("%", " % ").split()
        if all(word in _JOINING for word in between):
            return True
    return False


def is_word_problem(question: str) -> bool:
    """Whether the model should write the calculation itself: the question has numbers in words, or
    two numbers or more that no clause of it joins in a stated calculation."""
    if has_number_words(question):
        return len(question_numbers(question)) >= 1
    if len(question_numbers(question)) < 2:
        return False  # "7 squared", "5 miles in km": the clause states it
    return not any(_states_calculation(clause) for clause in _clauses(question))


def written_expression_pattern(question: str) -> str | None:
    """A regular expression (JSON Schema ``pattern``) for an arithmetic expression over the question's
    numbers (and 100 when it speaks of percent): numbers joined by + - * /, a parenthesised group or
    two. None when the question has no number."""
    numbers = question_numbers(question)
    if re.search(r"%|percent|per cent", question, re.IGNORECASE) and "100" not in numbers:
        numbers.append("100")
    if not numbers:
        return None
    number = "(" + "|".join(re.escape(n) for n in numbers) + ")"
    op = r" [-+*/] "
    group = rf"(\({number}({op}{number}){{1,3}}\)|{number})"
    return rf"^{group}({op}{group}){{1,{EXPRESSION_MAX_OPERATORS}}}$"


def answer_subjects(question: str, arguments: Iterable[str] = ()) -> list[str]:
    """How the answer may name what was computed: each clause with a number, from its first number
    on ("3 boxes of 48 eggs", "15% of 80") and without its asking words ("Subtract 89 from 250"),
    a written expression that was the tool's argument ("3 * 48"); "The result" when there is none."""
    subjects: dict[str, None] = {}
    for clause in _clauses(question):
        numbers = _numbers_in(clause)
        if not numbers:
            continue
        start = numbers[0][0]
        while start > 0 and clause[start - 1] == "(":
            start -= 1  # "(15 + 27) * 3", not "15 + 27) * 3"
        if not _OPERATION_WORDS.search(clause[:start]):  # "the square root of 625" is not "625"
            # "10 kilometers to meters is 10000 meters": the unit converted to goes after the number
            subjects[_CONVERTING_TO.sub("", clause[start:]).strip()] = None
        subjects[_ASKING.sub("", clause).strip()] = None
    for argument in arguments:
        if _numbers_in(argument) and argument[:1] in "0123456789(":
            subjects[argument.strip()] = None
    named = [s for s in subjects if s and '"' not in s and "\\" not in s and _balanced(s)]
    # "The result" only when the question names nothing: offered beside a name, the model took it
    # every time ("The result is 144." for 3 boxes of 48 eggs).
    return named or [RESULT_SUBJECT]


# Words before a clause's first number that are part of what is computed: a subject that leaves them
# out names another calculation.
_OPERATION_WORDS = re.compile(
    r"\b(?:multiply|divide|add|subtract|sum|product|difference|quotient|root|square|cube|power|half|"
    r"double|twice|triple|increase|decrease|reduce|raise|average|mean|percent|percentage)\b",
    re.IGNORECASE,
)


_CONVERTING_TO = re.compile(r"\s+(?:in|to|into)\s+[A-Za-z]{2,20}$")


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


_NOT_UNITS = _JOINING | {
    "squared",
    "cubed",
    "more",
    "less",
    "fewer",
    "times",
    "is",
    "are",
    "in",
    "into",
}


def unit_words(question: str) -> list[str]:
    """Words that may follow the number in the answer: those after a number in the question ("48
    eggs"); when the question converts ("… in kilometers", "How many feet are in …"), the unit it
    converts to only — the unit it converts from would state a wrong answer ("5 inches is 12.7
    inches")."""
    targets = _conversion_targets(question)
    if targets:
        return targets
    words: dict[str, None] = {}
    for _, end, _ in _numbers_in(question):
        follower = re.match(r"\s+([A-Za-z]{2,20})\b", question[end:])
        word = follower.group(1) if follower else ""
        if word and word.lower() not in _NOT_UNITS and not _WORDS_RUN.fullmatch(word):
            words[word] = None
    return list(words)


def _conversion_targets(question: str) -> list[str]:
    """The units a question converts to: a clause's last word after "in", "to" or "into" ("… in
    kilometers"), or what "how many" asks for ("How many feet are in 36 inches")."""
    words: dict[str, None] = {}
    for clause in _clauses(question):
        if not _numbers_in(clause):
            continue
        target = re.search(r"\b(?:in|to|into)\s+([A-Za-z]{2,20})$", clause)
        asked = re.match(r"how\s+many\s+([A-Za-z]{2,20})\s+(?:are|is)\s+(?:there\s+)?in\b", clause, re.I)
        for match in (target, asked):
            if match and not _WORDS_RUN.fullmatch(match.group(1)):
                words[match.group(1)] = None
    return list(words)


def is_number(text: Sequence[str] | str) -> bool:
    """Whether a tool's result is a plain number ("144", "-2.5", "1.2e+20")."""
    return re.fullmatch(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?", str(text).strip()) is not None
