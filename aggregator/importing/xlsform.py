"""An XLSForm (the ODK standard's spreadsheet form) as a survey definition.

The workbook is read by ``pyxform`` (its XLSForm reader,
:func:`pyxform.xls2json.parse_file_to_json`, and its sheet reader for the row numbers);
the mapping:

=========================  =====================================================
XLSForm                    survey definition (docs/operations.md, "Importing")
=========================  =====================================================
``select_one LIST``        ``single_choice``; options are the choices' labels
``select_multiple LIST``   ``multiple_choice``
``integer``, ``decimal``   ``numeric``; ``lo``/``hi`` from a range ``constraint``
                           (``. >= 0 and . <= 120``), which is required
``range`` 1-5, 1-7, 0-10   ``scale`` of 5, 7 or 11 points (steps of 1)
``relevant``               ``show_if`` (``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=``,
                           ``selected()``, ``and``, ``or``, parentheses)
``required``               a question not required gets ``"optional": true``
``hint``                   ``help``
``begin_group``            its questions, the group's ``relevant`` joined to theirs
labels in languages        the original text in one language (``--language``, else
                           the form's ``default_language``, else the first) and the
                           survey's ``language`` its code (``label::Deutsch (de)``);
                           every other language with a code a ``translation``
                           (one lacking a label, hint or choice left out, in a note)
=========================  =====================================================

Everything else (free text, dates, locations, media, notes, repeats, calculations,
constraints on other questions, choice filters, an "other" option) is refused with one
line per row.  Metadata the form asks the device to record (start and end times, device
ids) is left out, and a note says so: Deniable records none of it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deniable.survey import FORMAT, IDENTIFIER, MAX_MULTIPLE_OPTIONS
from deniable.translations import DEFAULT_LANGUAGE

from .expressions import SELF, Comparison, Junction, Selected, Unsupported, parse

__all__ = ["Imported", "ImportRefused", "read_xlsform"]

# Device metadata an XLSForm may collect; a Deniable survey records none of it.
METADATA = {
    "start", "end", "today", "deviceid", "imei", "subscriberid", "simserial", "phonenumber",
    "username", "email", "audit", "start-geopoint", "background-audio", "uri:deviceid",
    "uri:subscriberid", "uri:simserial", "uri:phonenumber", "uri:username", "uri:email",
}  # fmt: skip
# Why each type is refused, in words for the operator.
REFUSED = {
    "text": "free text cannot be randomized with a guarantee",
    "date": "dates are not a question type",
    "time": "times are not a question type",
    "dateTime": "dates and times are not a question type",
    "calculate": "calculations are not supported",
    "note": "notes are not questions; put the text in a question's hint",
    "repeat": "repeats are not supported (every respondent answers each question once)",
    "geopoint": "locations are not collected",
    "geotrace": "locations are not collected",
    "geoshape": "locations are not collected",
    "image": "media are not collected",
    "audio": "media are not collected",
    "video": "media are not collected",
    "file": "media are not collected",
    "barcode": "free text cannot be randomized with a guarantee",
    "acknowledge": "an acknowledgement is not a question",
    "trigger": "an acknowledgement is not a question",
    "rank": "ranking is not a question type",
    "hidden": "hidden fields are not supported",
    "xml-external": "external data is not supported",
    "csv-external": "external data is not supported",
}
TRUE = {"yes", "true", "true()", "1"}
# An XLSForm range (ODK's defaults: start 1, end 10, step 1) that is a survey scale.
SCALE_DEFAULTS = (("start", 1), ("end", 10), ("step", 1))
SCALES = {(1.0, 5.0, 1.0): 5, (1.0, 7.0, 1.0): 7, (0.0, 10.0, 1.0): 11}
DEFAULT = "default"  # pyxform's key for a label column without a language


@dataclass(frozen=True, kw_only=True)
class Imported:
    """A survey definition built from a file, and what the operator should know about it."""

    definition: dict[str, Any]
    notes: tuple[str, ...] = ()


class ImportRefused(ValueError):
    """The file holds something the survey format cannot express: one line per item."""

    def __init__(self, lines: Sequence[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = tuple(lines)


@dataclass
class _Question:
    id: str
    type: str
    options: dict[str, str] = field(default_factory=dict)  # choice name -> label
    lo: float | None = None
    hi: float | None = None
    integer: bool = False


def identifier(name: str) -> str:
    """An XLSForm name as a question or survey id: lower case, other characters as ``_``."""
    text = re.sub(r"[^a-z0-9_-]+", "_", name.strip().lower()).strip("_-")[:64]
    return text if IDENTIFIER.fullmatch(text or "-") else ""


def _row_numbers(path: Path) -> dict[str, int]:
    """Each named row's number in the ``survey`` sheet (1 is the header)."""
    from pyxform.xls2json_backends import xls_to_dict, xlsx_to_dict

    reader = xls_to_dict if path.suffix.lower() == ".xls" else xlsx_to_dict
    rows = reader(path).get("survey", [])
    return {str(r["name"]): index + 2 for index, r in enumerate(rows) if r.get("name")}


def _languages(form: Mapping[str, Any]) -> list[str]:
    found: list[str] = []

    def visit(node: Mapping[str, Any]) -> None:
        for key in ("label", "hint"):
            value = node.get(key)
            if isinstance(value, Mapping):
                found.extend(lang for lang in value if lang not in found)
        for child in node.get("children", []) or []:
            visit(child)

    for child in form.get("children", []) or []:
        visit(child)
    return found


class _Mapper:
    def __init__(self, form: Mapping[str, Any], language: str | None, rows: Mapping[str, int]):
        self.form, self.language, self.rows = form, language, rows
        self.refusals: list[str] = []
        self.notes: list[str] = []
        self.questions: list[dict[str, Any]] = []
        self.known: dict[str, _Question] = {}  # XLSForm name -> imported question
        self.sources: dict[str, Mapping[str, Any]] = {}  # question id -> its XLSForm row
        self.skipped: set[str] = set()

    def where(self, name: str) -> str:
        row = self.rows.get(name)
        return f"row {row} ({name})" if row else f"({name})"

    def refuse(self, name: str, reason: str) -> None:
        self.refusals.append(f"{self.where(name)}: {reason}")
        self.skipped.add(name)

    def text(self, value: Any, *, fallback: bool = True) -> str:
        """The text in the chosen language (a label lacking it: the form's default, else its
        first; a hint lacking it: none, rather than a hint in another language)."""
        if isinstance(value, Mapping):
            if self.language in value:
                return str(value[self.language])
            if not fallback:
                return str(value.get(DEFAULT) or "")
            return str(value.get(DEFAULT) or next(iter(value.values()), ""))
        return "" if value is None else str(value)

    # -- questions ------------------------------------------------------------------
    def visit(self, children: Sequence[Mapping[str, Any]], inherited: Any = None) -> None:
        for child in children:
            kind, name = str(child.get("type", "")), str(child.get("name", ""))
            if kind == "group" and name == "meta" and child.get("control", {}).get("bodyless"):
                continue  # pyxform's own instanceID: nothing a respondent answers
            if kind in METADATA:
                self.notes.append(
                    f"{self.where(name)}: device metadata ({kind}) left out: "
                    "Deniable records no times or device data"
                )
                continue
            if kind == "group":
                condition = self.condition(name, child.get("bind", {}).get("relevant"))
                if condition is False:
                    continue
                joined = condition if inherited is None else _all(inherited, condition)
                self.visit(child.get("children", []) or [], joined)
                continue
            self.question(child, kind, name, inherited)

    def question(self, child: Mapping[str, Any], kind: str, name: str, inherited: Any) -> None:
        bind = child.get("bind", {}) or {}
        if kind in ("select one", "select all that apply"):
            mapped = "single_choice" if kind == "select one" else "multiple_choice"
        elif kind in ("integer", "decimal"):
            mapped = "numeric"
        elif kind == "range":
            mapped = "scale"
        else:
            reason = REFUSED.get(kind)
            if reason is None and kind.startswith("select"):
                reason = "choices from a file or a filter are not supported"
            self.refuse(name, reason or f"the type {kind!r} has no Deniable question type")
            return
        qid = identifier(name)
        if not qid:
            self.refuse(name, "the name cannot be a question id (letters, digits, _ and -)")
            return
        if any(q.id == qid for q in self.known.values()):
            self.refuse(name, f"its id {qid!r} is the id of an earlier question")
            return
        if bind.get("calculate"):
            self.refuse(name, "calculations are not supported")
            return
        if child.get("choice_filter"):
            self.refuse(name, "choice filters are not supported")
            return
        question: dict[str, Any] = {
            "id": qid,
            "type": mapped,
            "text": self.text(child.get("label")),
        }
        if not question["text"].strip():
            self.refuse(name, "the question has no label")
            return
        record = _Question(qid, mapped, integer=kind in ("integer", "range"))
        if mapped == "scale":
            if bind.get("constraint"):
                self.refuse(name, "constraints on a scale are not supported")
                return
            points = self.scale(name, child.get("parameters") or {}, record)
            if points is None:
                return
            question["points"] = points
        elif mapped == "numeric":
            if not self.range(name, bind.get("constraint"), record):
                return
            question["lo"], question["hi"] = _number(record.lo), _number(record.hi)
        else:
            if bind.get("constraint"):
                self.refuse(name, "constraints on a choice question are not supported")
                return
            if not self.options(name, child, record):
                return
            question["options"] = list(record.options.values())
        hint = self.text(child.get("hint"), fallback=False)
        if hint.strip():
            question["help"] = hint
        if str(bind.get("required", "")).strip().lower() not in TRUE:
            question["optional"] = True
        own = self.condition(name, bind.get("relevant"))
        if own is False:
            return
        condition = (
            own if inherited is None else (inherited if own is None else _all(inherited, own))
        )
        if condition is not None:
            question["show_if"] = condition
        self.known[name] = record
        self.sources[qid] = child
        self.questions.append(question)

    def options(self, name: str, child: Mapping[str, Any], record: _Question) -> bool:
        choices = child.get("choices") or []
        if not choices:
            self.refuse(name, "its choice list is empty or missing")
            return False
        for choice in choices:
            label = self.text(choice.get("label")).strip() or str(choice.get("name"))
            if label in record.options.values():
                self.refuse(name, f"two choices have the label {label!r}")
                return False
            record.options[str(choice.get("name"))] = label
        if record.type == "multiple_choice" and len(record.options) > MAX_MULTIPLE_OPTIONS:
            self.refuse(name, f"a multiple choice has at most {MAX_MULTIPLE_OPTIONS} options")
            return False
        if len(record.options) < 2:
            self.refuse(name, "a choice question needs at least two choices")
            return False
        return True

    def scale(self, name: str, parameters: Mapping[str, Any], record: _Question) -> int | None:
        """The points of a ``range`` row that is a scale (1-5, 1-7 or 0-10 by 1), else None."""
        try:
            start, end, step = (float(parameters.get(k, d)) for k, d in SCALE_DEFAULTS)
        except (TypeError, ValueError):
            start = end = step = math.nan
        points = SCALES.get((start, end, step))
        if points is None:
            self.refuse(name, "a range must be 1 to 5, 1 to 7 or 0 to 10 in steps of 1 (a scale)")
            return None
        record.lo, record.hi = start, end
        return points

    def range(self, name: str, constraint: Any, record: _Question) -> bool:
        """lo and hi from ``. >= lo and . <= hi``; anything else refused."""
        if not constraint:
            self.refuse(name, "a number needs a range constraint, e.g. '. >= 0 and . <= 120'")
            return False
        others = set(re.findall(r"\$\{([^}\s]+)\}", str(constraint))) - {name, "self"}
        if others:
            self.refuse(
                name,
                f"constraint {constraint!r}: cross-question constraints are not supported "
                f"(it refers to {', '.join(sorted(others))})",
            )
            return False
        try:
            tree = parse(str(constraint))
        except Unsupported as error:
            self.refuse(name, f"constraint {constraint!r}: {error}")
            return False
        parts = tree.parts if isinstance(tree, Junction) and tree.kind == "all" else (tree,)
        lo, hi = -math.inf, math.inf
        for part in parts:
            if not isinstance(part, Comparison) or isinstance(part.value, str):
                self.refuse(name, f"constraint {constraint!r}: only a range of the answer")
                return False
            if part.question not in (SELF, name):
                self.refuse(name, f"constraint {constraint!r}: refers to another question")
                return False
            step = 1 if record.integer else 0
            if part.operator in (">", "<") and not step:
                self.refuse(name, f"constraint {constraint!r}: use >= and <= for a decimal")
                return False
            value = float(part.value)
            if part.operator in (">=", ">"):
                lo = max(lo, value + (step if part.operator == ">" else 0))
            elif part.operator in ("<=", "<"):
                hi = min(hi, value - (step if part.operator == "<" else 0))
            else:
                self.refuse(name, f"constraint {constraint!r}: only >=, >, <=, < bound a range")
                return False
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
            self.refuse(name, f"constraint {constraint!r}: needs a lower and a higher bound")
            return False
        record.lo, record.hi = lo, hi
        return True

    def translation(self, language: str, title: str) -> tuple[dict[str, Any] | None, str]:
        """The imported questions' texts in another ``language`` (a translation), or None and
        why not: every label, hint and choice the survey has must be in it."""
        questions: dict[str, Any] = {}
        for question in self.questions:
            child, name = self.sources[question["id"]], str(self.sources[question["id"]]["name"])
            text = _exact(child.get("label"), language)
            if not text.strip():
                return None, f"{self.where(name)} has no label in it"
            words: dict[str, Any] = {"text": text}
            if "help" in question:
                words["help"] = _exact(child.get("hint"), language)
                if not words["help"].strip():
                    return None, f"{self.where(name)} has no hint in it"
            if "options" in question:
                labels = [_exact(c.get("label"), language).strip() for c in child["choices"]]
                if not all(labels) or len(set(labels)) != len(labels):
                    return (
                        None,
                        f"{self.where(name)}: its choices' labels in it are missing or alike",
                    )
                words["options"] = labels
            questions[question["id"]] = words
        return {"title": title, "questions": questions}, ""

    # -- conditions -------------------------------------------------------------------
    def condition(self, name: str, relevant: Any) -> Any:
        """The contract's ``show_if`` for ``relevant`` (None: none; False: refused)."""
        if not relevant or not str(relevant).strip():
            return None
        try:
            return self.node(parse(str(relevant)), 1)
        except Unsupported as error:
            self.refuse(name, f"relevant {str(relevant)!r}: {error}")
            return False

    def node(self, tree: Any, depth: int) -> dict[str, Any]:
        if isinstance(tree, Junction):
            if depth > 4:
                raise Unsupported("conditions nest deeper than 4")
            if len(tree.parts) > 16:
                raise Unsupported("more than 16 conditions in one and/or")
            return {tree.kind: [self.node(part, depth + 1) for part in tree.parts]}
        record = self.known.get(tree.question)
        if record is None:
            reason = (
                "is not imported" if tree.question in self.skipped else "is not an earlier question"
            )
            raise Unsupported(f"${{{tree.question}}} {reason}")
        if isinstance(tree, Selected):
            if record.type == "numeric":
                raise Unsupported("selected() on a number")
            label = self.choice(record, tree.value)
            if record.type == "multiple_choice":
                return {"question": record.id, "includes": label}
            return {"question": record.id, "equals": label}
        if record.type == "multiple_choice":
            raise Unsupported(f"use selected(${{{tree.question}}}, ...) for a multiple choice")
        if record.type == "scale" and tree.operator in ("=", "!="):
            point = self.point(record, tree.value)
            if tree.operator == "=":
                return {"question": record.id, "equals": point}
            assert record.lo is not None and record.hi is not None
            others = [p for p in range(int(record.lo), int(record.hi) + 1) if p != point]
            return {"question": record.id, "in": others}
        if record.type == "single_choice":
            label = self.choice(record, str(tree.value).removesuffix(".0"))
            if tree.operator == "=":
                return {"question": record.id, "equals": label}
            if tree.operator == "!=":
                others = [v for v in record.options.values() if v != label]
                if len(others) == 1:
                    return {"question": record.id, "equals": others[0]}
                return {"question": record.id, "in": others}
            raise Unsupported(f"{tree.operator} on a choice")
        return self.between(record, tree)

    @staticmethod
    def point(record: _Question, value: str | float) -> int:
        try:
            number = float(value)
        except ValueError:
            raise Unsupported(f"{value!r} is not a point of ${{{record.id}}}") from None
        assert record.lo is not None and record.hi is not None
        if not number.is_integer() or not record.lo <= number <= record.hi:
            raise Unsupported(f"{value!r} is not a point of ${{{record.id}}}")
        return int(number)

    @staticmethod
    def choice(record: _Question, value: str) -> str:
        if value not in record.options:
            raise Unsupported(f"{value!r} is not a choice of ${{{record.id}}}")
        return record.options[value]

    @staticmethod
    def between(record: _Question, tree: Comparison) -> dict[str, Any]:
        if isinstance(tree.value, str):
            try:
                value = float(tree.value)
            except ValueError:
                raise Unsupported(f"{tree.value!r} is not a number") from None
        else:
            value = tree.value
        assert record.lo is not None and record.hi is not None
        lo, hi = record.lo, record.hi
        step = 1 if record.integer else 0
        if tree.operator == "=":
            lo = hi = value
        elif tree.operator in (">=", ">"):
            if tree.operator == ">" and not step:
                raise Unsupported("> on a decimal; use >=")
            lo = value + (step if tree.operator == ">" else 0)
        elif tree.operator in ("<=", "<"):
            if tree.operator == "<" and not step:
                raise Unsupported("< on a decimal; use <=")
            hi = value - (step if tree.operator == "<" else 0)
        else:
            raise Unsupported(f"{tree.operator} on a number")
        lo, hi = max(lo, record.lo), min(hi, record.hi)
        if lo > hi:
            raise Unsupported(f"no answer of ${{{record.id}}} can satisfy it")
        return {"question": record.id, "between": [_number(lo), _number(hi)]}


def _exact(value: Any, language: str) -> str:
    """The text in exactly ``language`` (no other language's as a fallback), or ""."""
    return str(value.get(language) or "") if isinstance(value, Mapping) else ""


def language_code(name: str) -> str | None:
    """The BCP 47 primary language subtag an XLSForm language names: ``English (en)`` is
    ``en``, ``Deutsch (de-CH)`` is ``de``; None for a language without a code."""
    match = re.search(r"\(([A-Za-z]{2,3})(?:[-_][A-Za-z0-9]+)*\)\s*$", name)
    return match.group(1).lower() if match else None


def _all(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for part in (first, second):
        parts.extend(part["all"] if set(part) == {"all"} else [part])
    return {"all": parts}


def _number(value: float | None) -> int | float:
    assert value is not None
    return int(value) if float(value).is_integer() else value


def read_xlsform(
    path: str | Path, *, language: str | None = None, epsilon: float = 1.0
) -> Imported:
    """The survey definition (format /2, the contract's fields) an XLSForm workbook maps to.

    Raises :class:`ImportRefused` listing every row it cannot map, and ``ValueError``
    for a file that is not an XLSForm or a ``language`` it does not have.
    """
    from pyxform.errors import PyXFormError
    from pyxform.xls2json import parse_file_to_json

    path = Path(path)
    try:
        form = parse_file_to_json(str(path), warnings=[])
        rows = _row_numbers(path)
    except (PyXFormError, OSError, KeyError) as error:
        raise ValueError(f"{path.name} is not a readable XLSForm: {error}") from None
    languages = _languages(form)
    chosen = language
    if chosen is not None and chosen not in languages:
        raise ValueError(
            f"{path.name} has no labels in {language!r}; it has: "
            + (", ".join(repr(lang) for lang in languages) or "no language columns")
        )
    if chosen is None and languages:
        default = form.get("default_language")
        chosen = default if default in languages else languages[0]
    mapper = _Mapper(form, chosen, rows)
    mapper.visit(form.get("children", []) or [])
    if mapper.refusals:
        raise ImportRefused(mapper.refusals)
    if not mapper.questions:
        raise ImportRefused([f"{path.name}: no question to import"])
    for question in mapper.questions:
        question["epsilon"] = epsilon
    title = str(form.get("title") or "").strip()
    if not title or title == form.get("name"):
        title = path.stem
    survey_id = identifier(str(form.get("id_string") or "")) or identifier(path.stem)
    definition: dict[str, Any] = {
        "format": FORMAT,
        "id": survey_id or "survey",
        "title": title,
        "questions": mapper.questions,
    }
    own = (chosen and language_code(chosen)) or DEFAULT_LANGUAGE
    if own != DEFAULT_LANGUAGE:
        definition["language"] = own
    translations, notes = _translations(mapper, languages, chosen, own, title)
    if translations:
        definition["translations"] = translations
    return Imported(definition=definition, notes=(*notes, *mapper.notes))


def _translations(
    mapper: _Mapper, languages: list[str], chosen: str | None, own: str, title: str
) -> tuple[dict[str, Any], list[str]]:
    """Every other language of the form with a code, as a translation; notes on the others."""
    translations: dict[str, Any] = {}
    notes = (
        [f"the survey's text is in {chosen!r} (choose another with --language)"] if chosen else []
    )
    for name in languages:
        code = language_code(name)
        if name == chosen:
            continue
        if code is None or code == own or code in translations:
            why = "no language code, e.g. label::Deutsch (de)" if code is None else "its code again"
            notes.append(f"labels in {name!r} left out: {why}")
            continue
        translation, why = mapper.translation(name, title)
        if translation is None:
            notes.append(f"labels in {name!r} left out: {why}")
            continue
        translations[code] = translation
    if translations:
        notes.append(
            f"translations: {', '.join(sorted(translations))} (the title has one language in an "
            "XLSForm: it is the same in each)"
        )
    return translations, notes
