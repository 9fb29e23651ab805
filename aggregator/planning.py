"""``deniable-aggregator plan``: the accuracy planner on the command line.

Given a question type, its number of options, ε and β, prints for every
candidate mechanism and interval family either the expected half-width at
``--n`` respondents or the respondents needed for ``--half-width``
(:mod:`deniable.planner`).  A table by default, JSON with ``--json``.  No
database, no settings: the planner is pure arithmetic.

With ``--by-options`` (and optionally ``--by-type``, ``--by-epsilon``) it also
plans a crosstab of this question by a second one: the half-width of one cell
and of the whole table at once, or the respondents for ``--half-width`` per
cell (``deniable.planner.plan_crosstab``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from deniable.planner import (
    QUESTION_TYPES,
    CrosstabPlan,
    Plan,
    format_number,
    plan,
    plan_crosstab,
)

from .terminal import format_table


def _count(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value!r}")
    return number


def _real(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {value!r}") from None


def add_parser(commands: Any) -> None:
    """Register ``plan`` on the CLI's subcommand table."""
    sub = commands.add_parser(
        "plan", help="expected interval half-widths for n respondents, or the n for a half-width",
        description="Expected interval half-widths for n respondents, or the respondents "
        "needed for a half-width, per mechanism and interval family.",
    )
    sub.add_argument("--type", dest="question_type", choices=QUESTION_TYPES,
                     default="single_choice", help="question type (default single_choice)")
    sub.add_argument("--options", type=_count, default=None,
                     help="number of options (single and multiple choice)")
    sub.add_argument("--epsilon", type=_real, required=True, help="the question's ε")
    sub.add_argument("--beta", type=_real, default=0.05,
                     help="allowed failure probability of each interval (default 0.05)")
    goal = sub.add_mutually_exclusive_group(required=True)
    goal.add_argument("--n", type=_count, help="respondents: print expected half-widths")
    goal.add_argument("--half-width", type=_real,
                      help="target half-width (a share, e.g. 0.05; answer units for numeric): "
                      "print the respondents needed")
    sub.add_argument("--lo", type=_real, default=0.0, help="numeric: lower end (default 0)")
    sub.add_argument("--hi", type=_real, default=1.0, help="numeric: upper end (default 1)")
    sub.add_argument("--json", action="store_true", help="JSON instead of a table")
    sub.add_argument("--by-type", choices=("yes_no", "single_choice", "multiple_choice"),
                     default=None, help="crosstab by a second question of this type "
                     "(default single_choice, or yes_no without --by-options)")
    sub.add_argument("--by-options", type=_count, default=None,
                     help="crosstab by a second question with this many options")
    sub.add_argument("--by-epsilon", type=_real, default=None,
                     help="the second question's ε (default: the same as --epsilon)")
    sub.set_defaults(func=cmd_plan)  # fmt: skip


def cmd_plan(args: argparse.Namespace) -> int:
    result = plan(
        args.question_type,
        epsilon=args.epsilon,
        options=args.options,
        beta=args.beta,
        n=args.n,
        half_width=args.half_width,
        lo=args.lo,
        hi=args.hi,
    )
    crosstab = None
    if args.by_type or args.by_options:
        by_type = args.by_type or ("single_choice" if args.by_options else "yes_no")
        crosstab = plan_crosstab(
            (args.question_type, args.options, args.epsilon),
            (by_type, args.by_options, args.by_epsilon or args.epsilon),
            beta=args.beta, n=args.n, half_width=args.half_width,
        )  # fmt: skip
    if args.json:
        document = result.to_dict()
        if crosstab is not None:
            document["crosstab"] = crosstab.to_dict()
        print(json.dumps(document, indent=2))
    else:
        print(plan_table(result))
        if crosstab is not None:
            print()
            print(crosstab_table(crosstab, result))
    return 0


def crosstab_table(crosstab: CrosstabPlan, result: Plan) -> str:
    """One row per family: a cell's figures and the whole table's (all cells at once)."""
    if result.n is not None:
        goal = f"half-widths of a crosstab cell at n = {result.n:,}"
        headers = ["interval", "± one cell", f"± all {crosstab.cells} cells"]
    else:
        goal = f"respondents needed for ±{result.target:g} in a crosstab cell"
        headers = ["interval", "n one cell", f"n all {crosstab.cells} cells"]
    rows = []
    for row in crosstab.rows:
        if result.n is not None:
            values = [row.half_width, row.simultaneous_half_width]
        else:
            values = [row.n_for_half_width, row.n_for_simultaneous_half_width]
        rows.append([row.family, *map(format_number, values)])
    return "\n".join(
        [
            f"crosstab {crosstab.rows_mechanism} x {crosstab.columns_mechanism}: {goal}",
            format_table(headers, rows),
            "A cell's estimate is the product of the two questions' per-report unbiased "
            "estimates; its variance is at most E[X²]E[Y²] for every truth (docs/design.md).",
        ]
    )


def plan_table(result: Plan) -> str:
    level = f"{100 * (1 - result.beta):g}%"
    what = f", {result.options} options" if result.options else ""
    if result.n is not None:
        goal = f"expected half-widths at n = {result.n:,}"
        headers = ["mechanism", "interval", "bytes", "± per category", "± simultaneous"]
    else:
        goal = f"respondents needed for ±{result.target:g}"
        headers = ["mechanism", "interval", "bytes", "n per category", "n simultaneous"]
    headers += ["sq. err x n (uniform)", "sq. err x n (worst)"]
    rows = []
    for row in result.rows:
        name = row.mechanism + (" *" if row.mechanism == result.recommended else "")
        if result.n is not None:
            values = [row.half_width, row.simultaneous_half_width]
        else:
            values = [row.n_for_half_width, row.n_for_simultaneous_half_width]
        rows.append(
            [name, row.family, row.report_bytes, *map(format_number, values),
             format_number(row.expected_squared_error),
             format_number(row.worst_case_squared_error)]
        )  # fmt: skip
    lines = [
        f"{result.question_type}{what}, epsilon {result.epsilon:g}, {level} intervals: {goal}",
        format_table(headers, rows),
        "* recommended: smallest squared error summed over categories at the uniform "
        "distribution (ties: smaller report).",
        "Intervals cover the respondents' own answers; half-widths are before cutting at 0 and 1.",
    ]
    return "\n".join(lines)
