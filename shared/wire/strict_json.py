"""The one strict JSON reader: every document that crosses the wire is parsed here.

Strict means I-JSON (RFC 7493) and a little more: UTF-8 only; no ``NaN``, ``Infinity``
or number beyond a double's range; no object with a member name twice (parsers
disagree on which duplicate wins, so one text could mean two documents: RFC 8785 §3.1);
no lone surrogate escape (``"\\ud800"`` is legal JSON but not text); no nesting deeper
than :data:`MAX_DEPTH` (deeper, a survey or a report is an attack, not data).  Anything
else raises :class:`~deniable.errors.InvalidJson`, whose ``reason`` says which rule.

Both services read request bodies through it, the relay reads the aggregator's answers
through it, and devices read survey and key documents through it
(:func:`deniable.canonical.loads`).
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..errors import InvalidJson

__all__ = ["MAX_DEPTH", "loads"]

# Deeper than this, a survey or report body is an attack, not data.
MAX_DEPTH = 64

_CONTAINERS = (dict, list)
_CONTAINER_TYPES = frozenset(_CONTAINERS)


def loads(data: bytes | str, where: str = "body") -> Any:
    """``data`` parsed strictly (see the module docstring); InvalidJson on anything doubtful.

    ``where`` names the document in error messages (``"body: duplicate key 'a'"``).
    """
    if isinstance(data, bytes | bytearray | memoryview):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidJson(
                f"{where}: not UTF-8 ({error.reason} at byte {error.start})", reason="not-utf8"
            ) from None
    else:
        text = data

    def reject_constant(name: str) -> Any:
        raise InvalidJson(f"{where}: {name} is not JSON", reason="not-json")

    def finite_float(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise InvalidJson(f"{where}: number {literal[:40]} is out of range", reason="not-json")
        return value

    def unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)  # Why: built in C; a duplicate shows as a shorter dict
        if len(result) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    raise InvalidJson(
                        f"{where}: member {key[:80]!r} appears twice in one object",
                        reason="duplicate-member",
                    )
                seen.add(key)
        return result

    try:
        document = json.loads(
            text,
            parse_constant=reject_constant,
            parse_float=finite_float,
            object_pairs_hook=unique_members,
        )
    except InvalidJson:
        raise
    except (ValueError, RecursionError) as error:
        # ValueError covers JSONDecodeError and integers past the digit limit.
        raise InvalidJson(
            f"{where}: not valid JSON ({str(error)[:200]})", reason="not-json"
        ) from None
    if _too_deep(document, MAX_DEPTH):
        raise InvalidJson(f"{where}: nested deeper than {MAX_DEPTH} levels", reason="too-deep")
    if "\\u" in text:
        _check_unicode(document, where)
    return document


def _too_deep(document: Any, limit: int) -> bool:
    """True if containers nest deeper than ``limit`` (level by level, no recursion).

    The walk visits containers only, so a batch of flat reports costs one step
    per report; json.loads itself already refuses nesting beyond Python's
    recursion limit (RecursionError), which bounds this walk too.
    """
    level = [document] if type(document) in _CONTAINERS else []
    for _ in range(limit):
        if not level:
            return False
        deeper = []
        for value in level:
            # json.loads makes exactly dict and list.
            children = value.values() if type(value) is dict else value
            # Why isdisjoint first: a flat object (a report) is ruled out in C.
            if not _CONTAINER_TYPES.isdisjoint(map(type, children)):
                deeper += [c for c in children if type(c) in _CONTAINERS]
        level = deeper
    return bool(level)


def _check_unicode(value: Any, where: str) -> None:
    """Reject lone surrogates (``"\\ud800"``): legal JSON escapes, but not text (RFC 7493)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidJson(
                f"{where}: string with a lone surrogate escape", reason="surrogate"
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_unicode(key, where)
            _check_unicode(item, where)
    elif isinstance(value, list):
        for item in value:
            _check_unicode(item, where)
