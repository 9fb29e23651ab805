"""``deniable-aggregator plan``: the accuracy planner on the command line.

Given a question type, its number of options, ε and β, prints for every
candidate mechanism and interval family either the expected half-width at
``--n`` respondents or the respondents needed for ``--half-width``
(:mod:`deniable.planner`).  A table by default, JSON with ``--json``.  No
database, no settings: the planner is pure arithmetic.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from deniable.planner import MAX_RESPONDENTS as MAX_PLANNED_RESPONDENTS
from deniable.planner import QUESTION_TYPES, Plan, format_number, plan

from .terminal import format_table

# Why these bounds: past them the planner's arithmetic leaves floating point (a range
# squared overflows past 1e154, an interval's 1/sqrt(beta) past beta = 1e-300), and Python
# raised OverflowError, exit status 1 (issue 21).  Each is far beyond any real survey.
MAX_RESPONDENTS = MAX_PLANNED_RESPONDENTS  # --n, and the most --half-width may need
MAX_OPTIONS = 65_536  # what a question allows (deniable.parameters)
MAX_MAGNITUDE = 1e150  # --lo, --hi, --half-width
MIN_BETA = 1e-15


def _shown(value: str) -> str:
    return repr(value if len(value) <= 24 else value[:20] + "...")


def _count(maximum: int, what: str) -> Any:
    def parse(value: str) -> int:
        text = value.strip()
        number = 0
        if text.isdigit() and len(text) <= len(str(maximum)):
            number = int(text)
        if not 1 <= number <= maximum:
            raise argparse.ArgumentTypeError(
                f"must be a whole number of {what} from 1 to {maximum:,}, got {_shown(value)}"
            )
        return number

    return parse


def _real(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {_shown(value)}") from None
    if not math.isfinite(number) or abs(number) > MAX_MAGNITUDE:
        raise argparse.ArgumentTypeError(
            f"must be a finite number between -{MAX_MAGNITUDE:g} and {MAX_MAGNITUDE:g}, "
            f"got {_shown(value)}"
        )
    return number


def _beta(value: str) -> float:
    number = _real(value)
    if not MIN_BETA <= number < 1:
        raise argparse.ArgumentTypeError(
            f"must be a probability from {MIN_BETA:g} to below 1, got {_shown(value)}"
        )
    return number


def add_parser(commands: Any) -> None:
    """Register ``plan`` on the CLI's subcommand table."""
    sub = commands.add_parser(
        "plan", help="expected interval half-widths for n respondents, or the n for a half-width",
        description="Expected interval half-widths for n respondents, or the respondents "
        "needed for a half-width, per mechanism and interval family.",
    )
    sub.add_argument("--type", dest="question_type", choices=QUESTION_TYPES,
                     default="single_choice", help="question type (default single_choice)")
    sub.add_argument("--options", type=_count(MAX_OPTIONS, "options"), default=None,
                     help="number of options (single and multiple choice)")
    sub.add_argument("--epsilon", type=_real, required=True, help="the question's ε")
    sub.add_argument("--beta", type=_beta, default=0.05,
                     help="allowed failure probability of each interval (default 0.05)")
    goal = sub.add_mutually_exclusive_group(required=True)
    goal.add_argument("--n", type=_count(MAX_RESPONDENTS, "respondents"),
                      help="respondents: print expected half-widths")
    goal.add_argument("--half-width", type=_real,
                      help="target half-width (a share, e.g. 0.05; answer units for numeric): "
                      "print the respondents needed")
    sub.add_argument("--lo", type=_real, default=0.0, help="numeric: lower end (default 0)")
    sub.add_argument("--hi", type=_real, default=1.0, help="numeric: upper end (default 1)")
    sub.add_argument("--json", action="store_true", help="JSON instead of a table")
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
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(plan_table(result))
    return 0


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
