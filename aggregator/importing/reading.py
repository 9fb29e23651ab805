"""Read a definition file by its extension: XLSForm, YAML or JSON (see the package)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .defaults import DEFAULT_EPSILON, fill_defaults
from .xlsform import Imported, read_xlsform

__all__ = ["XLSFORM_SUFFIXES", "YAML_SUFFIXES", "read_definition"]

XLSFORM_SUFFIXES = (".xlsx", ".xls")
YAML_SUFFIXES = (".yaml", ".yml")


def _text(path: str) -> str:
    try:
        return sys.stdin.read() if path == "-" else Path(path).read_text("utf-8")
    except OSError as error:
        raise ValueError(f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text") from None


# Deeper than the parser's own recursion goes (a survey nests a few levels: a condition at
# most MAX_CONDITION_DEPTH), refused in words before the core could say so.
TOO_DEEP = "{path} is nested too deeply to read (a condition nests at most 4 levels of all/any)"


def _yaml(path: str, text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except RecursionError:
        raise ValueError(TOO_DEEP.format(path=path)) from None
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        at = f" (line {where.line + 1})" if where is not None else ""
        problem = getattr(error, "problem", None) or "not valid YAML"
        raise ValueError(f"{path} is not valid YAML{at}: {problem}") from None


def read_definition(
    path: str, *, language: str | None = None, epsilon: float | None = None
) -> Imported:
    """The survey definition in ``path`` (``-``: JSON on standard input), defaults filled.

    ``language`` chooses an XLSForm's labels; ``epsilon`` is every question's ε where the
    file gives none (default :data:`~.defaults.DEFAULT_EPSILON`).  Raises ``ValueError``
    (unreadable, not the format its name says, a language it lacks) and
    :class:`~.xlsform.ImportRefused` (an XLSForm's rows that cannot be mapped).
    """
    suffix = Path(path).suffix.lower() if path != "-" else ""
    if suffix in XLSFORM_SUFFIXES:
        if not Path(path).is_file():
            raise ValueError(f"cannot read {path}: no such file")
        return read_xlsform(path, language=language, epsilon=epsilon or DEFAULT_EPSILON)
    if language is not None:
        raise ValueError("--language chooses the labels of an XLSForm (.xlsx) only")
    text = _text(path)
    data: Any
    if suffix in YAML_SUFFIXES:
        data = _yaml(path, text)
    else:
        try:
            data = json.loads(text)
        except RecursionError:
            raise ValueError(TOO_DEEP.format(path=path)) from None
        except ValueError as error:
            raise ValueError(f"{path} is not valid JSON: {error}") from None
    if isinstance(data, dict) and "definition" in data and "format" not in data:
        data = data["definition"]  # the API's request body shape
    if isinstance(data, dict) and epsilon is not None:
        data = {**data, "epsilon": epsilon}
    return Imported(definition=fill_defaults(data))
