"""XLSForm expressions (ODK XPath) as the survey format's conditions and ranges.

An XLSForm's ``relevant`` column is an XPath expression over earlier answers
(``${smoker} = 'yes' and ${age} >= 18``); its ``constraint`` column one over the
answer itself (``. >= 0 and . <= 120``).  Only the part of XPath the survey format
can express is read: comparisons of one question with a literal, ``selected()``,
``and``, ``or`` and parentheses.  Anything else (functions, arithmetic, two
questions compared, ``not()``) raises :class:`Unsupported` with the reason, so the
importer refuses the row rather than guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Comparison", "Junction", "Selected", "Unsupported", "parse"]

SELF = "."

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<reference>\$\{(?P<name>[^}\s]+)\})
    | (?P<self>\$\{self\}|\.(?![\d.]))
    | (?P<string>'[^']*'|"[^"]*")
    | (?P<number>-?\d+(?:\.\d+)?)
    | (?P<operator><=|>=|!=|=|<|>)
    | (?P<open>\()
    | (?P<close>\))
    | (?P<comma>,)
    | (?P<word>[A-Za-z_][\w:-]*)
    )""",
    re.VERBOSE,
)


class Unsupported(ValueError):
    """The expression uses something the survey format cannot express (the message says what)."""


@dataclass(frozen=True)
class Comparison:
    """``question operator value`` (``question`` is ``"."`` for the answer itself)."""

    question: str
    operator: str
    value: str | float


@dataclass(frozen=True)
class Selected:
    """``selected(${question}, 'value')``."""

    question: str
    value: str


@dataclass(frozen=True)
class Junction:
    """``and`` (``all``) or ``or`` (``any``) of two or more parts."""

    kind: str  # "all" or "any"
    parts: tuple[Any, ...]


_MIRRORED = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "=", "!=": "!="}


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    text = text.strip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise Unsupported(f"cannot read {text[position : position + 20]!r}")
        kind = match.lastgroup
        assert kind is not None
        value = match.group("name") if kind == "reference" else match.group(kind)
        if kind == "self" or (kind == "reference" and value == "self"):
            kind, value = "self", SELF
        tokens.append((kind, value))
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.position = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self, kind: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token is None or (kind is not None and token[0] != kind):
            wanted = kind or "more"
            raise Unsupported(f"expected {wanted} at {self._rest()!r}")
        self.position += 1
        return token

    def _rest(self) -> str:
        return " ".join(value for _, value in self.tokens[self.position :]) or "the end"

    def junction(self, word: str, kind: str, inner: Any) -> Any:
        parts = [inner()]
        while self.peek() == ("word", word):
            self.take()
            parts.append(inner())
        if len(parts) == 1:
            return parts[0]
        flat: list[Any] = []
        for part in parts:  # a and (b and c): one "all" of three
            flat.extend(part.parts if isinstance(part, Junction) and part.kind == kind else [part])
        return Junction(kind, tuple(flat))

    def expression(self) -> Any:
        return self.junction("or", "any", lambda: self.junction("and", "all", self.atom))

    def atom(self) -> Any:
        token = self.peek()
        if token is None:
            raise Unsupported("the expression ends too early")
        if token[0] == "open":
            self.take()
            inner = self.expression()
            self.take("close")
            return inner
        if token[0] == "word":
            name = token[1]
            if name != "selected":
                raise Unsupported(f"the function or word {name!r} has no equivalent")
            self.take()
            self.take("open")
            question = self.take("reference")[1]
            self.take("comma")
            value = self.literal()
            self.take("close")
            return Selected(question, str(value))
        left = self.operand()
        operator = (
            self.take("operator")[1] if self.peek() and self.peek()[0] == "operator" else None
        )
        if operator is None:
            raise Unsupported("a condition must compare a question with a value")
        right = self.operand()
        if isinstance(left, tuple) and isinstance(right, tuple):
            raise Unsupported("two questions compared with each other")
        if not isinstance(left, tuple) and not isinstance(right, tuple):
            raise Unsupported("a comparison of two values names no question")
        if isinstance(left, tuple):
            return Comparison(left[1], operator, right)
        return Comparison(right[1], _MIRRORED[operator], left)

    def operand(self) -> Any:
        token = self.peek()
        if token is not None and token[0] in ("reference", "self"):
            self.take()
            return token
        return self.literal()

    def literal(self) -> str | float:
        kind, value = self.take()
        if kind == "string":
            return value[1:-1]
        if kind == "number":
            return float(value)
        raise Unsupported(f"expected a value, found {value!r}")


def parse(text: str) -> Any:
    """The expression as :class:`Comparison`, :class:`Selected` and :class:`Junction` values."""
    parser = _Parser(text)
    tree = parser.expression()
    if parser.peek() is not None:
        raise Unsupported(f"cannot read {parser._rest()!r}")
    return tree
