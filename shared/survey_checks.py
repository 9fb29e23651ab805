"""The checks every field of a survey definition goes through: text, identifiers, members, ranges.

Each failure is an :class:`~deniable.errors.InvalidSurvey` naming where it is and
its reason code (docs/protocol.md §7, "Reason codes").  ``deniable.survey``
applies them (and re-exports the constants).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from .errors import InvalidParameter, InvalidSurvey

__all__ = [
    "BLANK",
    "CONTROL",
    "IDENTIFIER",
    "MAX_LABEL",
    "MAX_TEXT",
    "NEWLINE_CONTROL",
    "SURROGATE",
    "check_identifier",
    "check_lo_hi",
    "check_text",
    "fail",
    "require_keys",
    "wrap_parameter",
]

IDENTIFIER = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
MAX_TEXT = 2000
MAX_LABEL = 200
# C0 and C1 control characters and DEL; descriptions may keep line feeds.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
NEWLINE_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
# "Not blank" (docs/protocol.md §2.2): some code point outside Unicode's White_Space and
# Default_Ignorable_Code_Point properties (fixed lists, the same in client/browser/survey.js), so
# a title of U+200B or U+FEFF is blank in every client whatever its trim() strips.
BLANK = re.compile(
    "[\t-\r \x85\xa0\xad\u034f\u061c\u115f\u1160\u1680\u17b4\u17b5\u180b-\u180f"
    "\u2000-\u200f\u2028-\u202f\u205f-\u206f\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0"
    "\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]*"
)
# A JSON text may escape half of a UTF-16 pair ("\ud800"); JCS cannot encode it.
SURROGATE = re.compile("[\ud800-\udfff]")


def fail(where: str, message: str, reason: str = "invalid") -> InvalidSurvey:
    """An InvalidSurvey with its reason code (docs/protocol.md §7, "Reason codes")."""
    return InvalidSurvey(f"{where}: {message}", reason=reason)


def require_keys(where: str, data: Mapping[str, Any], required: set[str], allowed: set[str]):
    if not isinstance(data, Mapping):
        raise fail(where, f"must be an object, got {type(data).__name__}", "wrong-type")
    missing = required - data.keys()
    if missing:
        raise fail(where, f"missing field(s) {', '.join(sorted(missing))}", "missing-member")
    extra = data.keys() - allowed
    if extra:
        raise fail(
            where, f"unknown field(s) {', '.join(sorted(map(str, extra)))}", "unknown-member"
        )


def check_text(
    where: str, value: object, limit: int = MAX_TEXT, *, empty: bool = False, newlines: bool = False
) -> str:
    """Survey text: no C0/C1 control characters (``newlines``: ``\\n`` allowed).

    Why: labels and titles reach CSV files, terminals and logs; a ``\\r`` split a
    CSV row and planted a formula cell, an ESC would drive a terminal.
    """
    if not isinstance(value, str) or SURROGATE.search(value):
        raise fail(
            where,
            "must be a string of whole characters (no unpaired surrogate), got "
            f"{type(value).__name__}",
            "wrong-type",
        )
    if len(value) > limit:
        raise fail(where, f"must be at most {limit} characters", "text-length")
    if not empty and BLANK.fullmatch(value):
        raise fail(
            where, "must not be blank (white space or invisible characters only)", "text-blank"
        )
    control = (NEWLINE_CONTROL if newlines else CONTROL).search(value)
    if control is not None:
        raise fail(
            where,
            f"must not contain control character U+{ord(control.group()):04X}",
            "text-control",
        )
    return value


def check_identifier(where: str, value: object) -> str:
    if not isinstance(value, str) or not IDENTIFIER.fullmatch(value):
        raise fail(where, f"must match {IDENTIFIER.pattern}, got {value!r}", "identifier")
    return value


def wrap_parameter(where: str, error: InvalidParameter, reason: str = "epsilon") -> InvalidSurvey:
    return fail(where, str(error), reason)


def check_lo_hi(where: str, lo: object, hi: object) -> None:
    """lo and hi: finite numbers with lo < hi and hi - lo finite (reason ``range``)."""
    numbers = all(type(v) in (int, float) for v in (lo, hi))
    try:
        fine = numbers and all(map(math.isfinite, (float(lo), float(hi), float(hi) - float(lo))))  # type: ignore[arg-type]
    except OverflowError:
        fine = False
    if not fine or not lo < hi:  # type: ignore[operator]
        raise fail(
            where, f"lo and hi must be finite numbers with lo < hi, got [{lo!r}, {hi!r}]", "range"
        )
