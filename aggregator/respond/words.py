"""The respond page's words: the one catalogue, client/browser/messages.js, read on this side.

The page and ``respond.js`` share it, so a respondent reads one language throughout.  The
language comes from ``?lang=`` (an embedding page's choice) or ``Accept-Language``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from importlib import resources

from flask import request

__all__ = ["catalogue", "chosen_language", "translator"]

_OBJECT = re.compile(r"export const MESSAGES = (\{.*?\n\});", re.DOTALL)
_FIELD = re.compile(r"\{(\w+)\}")


@cache
def catalogue() -> dict[str, dict[str, str]]:
    """Every language's messages, from messages.js (its MESSAGES object is strict JSON)."""
    text = resources.files("deniable.client").joinpath("browser", "messages.js").read_text("utf-8")
    match = _OBJECT.search(text)
    if match is None:  # a packaging error, found by the tests
        raise RuntimeError("client/browser/messages.js has no MESSAGES object")
    return json.loads(match.group(1))


def languages() -> tuple[str, ...]:
    return tuple(catalogue())


def chosen_language() -> str:
    """``?lang=`` if the catalogue has it, else the best match of Accept-Language, else English."""
    asked = request.args.get("lang", "").lower().split("-")[0]
    if asked in catalogue():
        return asked
    for tag, _quality in request.accept_languages:  # best first; "de-CH" is German
        if (primary := tag.lower().split("-")[0]) in catalogue():
            return primary
    return "en"


def translator(lang: str) -> Callable[..., str]:
    """``t(name, **values)``: the message ``name`` in ``lang`` with its {fields} filled in."""
    table, english = catalogue().get(lang, catalogue()["en"]), catalogue()["en"]

    def t(name: str, **values: object) -> str:
        return _FIELD.sub(lambda m: str(values[m.group(1)]), table.get(name, english[name]))

    return t
