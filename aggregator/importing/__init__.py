"""Survey definitions from the files operators have: JSON, YAML, and XLSForm workbooks.

:func:`read_definition` reads one file by its extension (``.xlsx``/``.xls``: XLSForm,
:mod:`.xlsform`; ``.yaml``/``.yml``: YAML with ``yaml.safe_load``; anything else, and
``-`` for standard input: JSON) and returns the definition with :func:`fill_defaults`
applied, so a minimal file names a title and its questions and nothing else.
"""

from __future__ import annotations

from .defaults import DEFAULT_EPSILON, fill_defaults, survey_id_from_title
from .reading import read_definition
from .xlsform import Imported, ImportRefused, read_xlsform

__all__ = [
    "DEFAULT_EPSILON",
    "ImportRefused",
    "Imported",
    "fill_defaults",
    "read_definition",
    "read_xlsform",
    "survey_id_from_title",
]
