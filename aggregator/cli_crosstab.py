"""``deniable-aggregator crosstab`` and ``compare``: the API's documents, as tables.

``crosstab SURVEY ROWS COLUMNS``: joint shares of two questions (each cell
"estimate [lower, upper]" in percent, the estimate and the tightest interval family's
bounds both clipped to 0-100, with a warning when there are few respondents), or
a number's or a scale's mean by category; ``--nonresponse hide`` leaves out declined and
not applicable (shares among those who answered both).  ``compare SURVEY OTHER QUESTION``:
each estimate's change from SURVEY to OTHER ("changed by +6 points (±4)").
Exit status 3 for an unknown survey, 4 when crosstabs are unavailable
(conflict), 2 for a bad question (see the main help).
"""

from __future__ import annotations

import argparse
import csv
import sys
from typing import Any

from .cli_common import add_beta, add_json, load_settings, opened_storage, print_json
from .terminal import PRECISION_WORDS, format_table

__all__ = ["register"]


def _percent(value: float | None) -> str:
    return "-" if value is None or value != value else f"{100 * value:.1f}"


def _worder(side: Any) -> Any:
    """A question's labels in the results' words ("No"/"Yes", "Prefer not to say"; other
    labels as they are): ``label_words``, from the respond page's catalogue (needs Flask)."""
    from .crosstabs import label_words

    said = label_words(side, side["labels"] if isinstance(side, dict) else side.labels)
    return lambda label: said.get(label, label)


def _number(value: float | None) -> str:
    return "-" if value is None or value != value else f"{value:.2f}"


def _precision_warning(document: dict[str, Any]) -> str:
    """Words for few respondents, as the results say them ('' when the cells are precise)."""
    if document.get("share_of") == "answered":  # ratio intervals: their widths depend on the data
        widths = [c["upper"] - c["lower"] for c in document["cells"]]
        if widths and min(widths) >= 0.5:
            return PRECISION_WORDS["uninformative"] + "; read these cells as noise"
        return ""
    described = {i["family"]: i for i in document.get("intervals", [])}
    family = described.get(document.get("tightest", "chebyshev"))
    if family is None:
        return ""
    half = float(family["nominal_half_width"])
    if half >= 0.5:
        return PRECISION_WORDS["uninformative"] + "; read these cells as noise"
    if half > 0.10:
        return PRECISION_WORDS["imprecise"] + f" (each cell ±{100 * half:.1f} points)"
    return ""


def crosstab_table(document: dict[str, Any], *, raw: bool = False) -> str:
    """The crosstab document as text: one line per row category.

    Each cell is its estimate clipped to [0, 100]% beside its interval (which is clipped
    too); ``raw`` shows the unbiased estimate instead, which may fall outside.
    """
    from .crosstabs import counted_words, short_text

    rows, columns = document["rows"], document["columns"]
    title = f"{document['survey']}: {rows['text']} by {columns['text']}"
    if document.get("estimate", 0) is None:
        return f"{title}\nno respondent answered both questions yet"
    if document["kind"] == "means":
        answered = document.get("among") == "answered"
        by = rows if rows["question"] == document["by"] else columns
        measured = columns if by is rows else rows
        words = _worder(by)
        body = format_table(
            [
                short_text(by["text"]),
                f"mean of: {short_text(measured['text'])}",
                "lower",
                "upper",
                "share %",
                *(["answered %"] if answered else []),
            ],
            [
                [
                    words(c["label"]),
                    _number(c["mean"]),
                    _number(c["lower"]),
                    _number(c["upper"]),
                    _percent(c["share"]),
                    *([_percent(c.get("answered"))] if answered else []),
                ]
                for c in document["categories"]
            ],
        )
        among = " (each mean among those who answered it)" if answered else ""
        counted = f"n = {document['n']:,} {counted_words(document)}"
        return f"{title} ({counted}){among}\n{body}\n{document['guarantee']}"
    family = document["tightest"]
    prefix = "" if family in ("chebyshev", "ratio") else family + "_"
    shown = "estimate" if raw else "clipped"
    cells = {(c["row"], c["column"]): c for c in document["cells"]}
    row_words, column_words = _worder(rows), _worder(columns)
    table = format_table(
        [short_text(rows["text"]), *(column_words(label) for label in columns["labels"])],
        [
            [
                row_words(row),
                *(
                    f"{_percent(cells[row, col].get(shown, cells[row, col]['estimate']))} "
                    f"[{_percent(cells[row, col][prefix + 'lower'])}, "
                    f"{_percent(cells[row, col][prefix + 'upper'])}]"
                    for col in columns["labels"]
                ),
            ]
            for row in rows["labels"]
        ],
    )
    level = f"{100 * (1 - document['beta']):g}%"
    of = f"{counted_words(document)} (n = {document['n']:,})"
    if document.get("share_of") == "answered":
        found = document["answered"]["estimate"]
        share = (
            f"an estimated {_percent(found)}% of the {document['n']:,} respondents"
            if found is not None and found > 0
            else f"too few of the {document['n']:,} respondents to estimate how many"
        )
        of = f"those who answered both questions, declined and not applicable left out ({share})"
    note = f"percent of {of}; {level} {document['tightest']} intervals per cell" + (
        "; raw unbiased estimates (may fall outside 0-100)" if raw else ""
    )
    text = f"{title}\n{table}\n{note}"
    warning = _precision_warning(document)
    if warning:
        text += f"\n{warning}"
    if "comparison" in document:
        comparison = document["comparison"]
        text += (
            f"\n{' / '.join(comparison['first'])} minus {' / '.join(comparison['second'])}: "
            f"{comparison['sentence']}"
        )
    return text


def cmd_crosstab(args: argparse.Namespace) -> int:
    from .crosstabs import crosstab_document

    config = load_settings(args)
    compare = None
    if args.compare:
        compare = ((args.compare[0], args.compare[1]), (args.compare[2], args.compare[3]))
    with opened_storage(config) as storage:
        record = storage.get_survey(args.survey, count=False)
        document = crosstab_document(
            storage,
            record,
            args.rows,
            args.columns,
            beta=args.beta,
            compare=compare,
            nonresponse=args.nonresponse,
        )
    if args.json:
        print_json(document)
    elif args.csv:
        rows = (
            document.get("categories")
            if document.get("kind") == "means"
            else document.get("cells", [])
        )
        if rows:
            writer = csv.DictWriter(sys.stdout, list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
    else:
        print(crosstab_table(document, raw=args.raw))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from .crosstabs import compare_document

    config = load_settings(args)
    with opened_storage(config) as storage:
        sides = []
        pairs = ((args.survey, args.question), (args.other, args.other_question or args.question))
        for survey_id, question_id in pairs:
            record = storage.get_survey(survey_id, count=False)
            question = record.survey.question(question_id)
            sides.append((record, question, storage.fold(survey_id)[question_id]))
        document = compare_document(sides[0], sides[1], beta=args.beta, storage=storage)
    if args.json:
        print_json(document)
        return 0
    question = sides[0][1]
    title = f"{question.text} ({args.survey} -> {args.other})"
    if document["comparisons"] is None:
        print(f"{title}\nno reports in one of the surveys yet")
        return 0
    from .crosstabs import FIGURE_WORDS

    words = _worder(question)
    rows = [
        [FIGURE_WORDS.get(row["label"]) or words(row["label"]), row["sentence"]]
        for row in document["comparisons"]
    ]
    print(f"{title}\n{format_table(['category', 'change'], rows)}")
    return 0


def register(commands: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """Add ``crosstab`` and ``compare`` to the command line."""
    sub = commands.add_parser(
        "crosstab",
        help="joint shares of two questions (or a mean by category) with intervals",
        description="Crosstab of two questions of a survey: the share of respondents in each "
        "pair of answers, or a numeric question's mean by category, with intervals that cover "
        "the respondents' own answers.",
    )
    sub.add_argument("survey", metavar="ID", help="id of the survey")
    sub.add_argument("rows", metavar="ROWS", help="question id for the rows")
    sub.add_argument("columns", metavar="COLUMNS", help="question id for the columns")
    add_beta(sub)
    sub.add_argument(
        "--compare",
        nargs=4,
        metavar=("ROW1", "COLUMN1", "ROW2", "COLUMN2"),
        help="also the difference of two cells (labels)",
    )
    sub.add_argument(
        "--nonresponse",
        choices=("show", "hide"),
        default="show",
        help="declined and not applicable as rows, columns and groups (show, the default), or "
        "left out: shares among those who answered both (hide)",
    )
    sub.add_argument("--csv", action="store_true", help="print the cells as CSV")
    sub.add_argument(
        "--raw",
        action="store_true",
        help="the raw unbiased estimates in the table (may fall below 0 or above 100)",
    )
    add_json(sub, "the API's crosstab document")
    sub.set_defaults(func=cmd_crosstab)

    sub = commands.add_parser(
        "compare",
        help="change of one question's estimates between two surveys (waves)",
        description="Each estimate of QUESTION in OTHER minus its estimate in ID, with an "
        "interval: 'changed by +6 points (±4)'.",
    )
    sub.add_argument("survey", metavar="ID", help="the earlier survey")
    sub.add_argument("other", metavar="OTHER", help="the later survey")
    sub.add_argument("question", metavar="QUESTION", help="question id")
    sub.add_argument(
        "--other-question", metavar="QUESTION", help="the question's id in OTHER, if it differs"
    )
    add_beta(sub)
    add_json(sub, "the API's comparison document")
    sub.set_defaults(func=cmd_compare)
