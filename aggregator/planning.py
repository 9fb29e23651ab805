"""``deniable-aggregator plan``: the accuracy planner on the command line.

Given a question type, its number of options (a scale's: its points), ε and β, prints for every
candidate mechanism and interval family either the expected half-width at
``--n`` respondents or the respondents needed for ``--half-width``
(:mod:`deniable.planner`).  A table by default, JSON with ``--json``.  No
database, no settings: the planner is pure arithmetic.

With ``--relay``, the survey goes through a shuffling relay: given the central
``--central-epsilon`` and ``--delta`` wanted for batches of ``--batch`` reports,
it prints the ε0 to set on each question (:mod:`deniable.shuffle`) and the
respondents needed for ``--half-width`` (default ±0.05) at that ε0, beside the
respondents the same question needs with no relay.  With ``--relay --relay-noise`` the relay
also adds dummy reports to every batch: see :mod:`.planning_noise`.

With ``--by-options`` (and optionally ``--by-type``, ``--by-epsilon``) it also
plans a crosstab of this question by a second one: the half-width of one cell
and of the whole table at once, or the respondents for ``--half-width`` per
cell (``deniable.crosstab_plan.plan_crosstab``).
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from deniable.crosstab_plan import CrosstabPlan, plan_crosstab
from deniable.planner import (
    DEFAULT_RELAY_DELTA,
    DEFAULT_RELAY_HALF_WIDTH,
    QUESTION_TYPES,
    Plan,
    RelayPlan,
    format_number,
    plan,
    relay_plan,
)
from deniable.planner import MAX_RESPONDENTS as MAX_PLANNED_RESPONDENTS
from deniable.policy import Policy
from deniable.questionnaire import SCALE_POINTS

from . import planning_noise
from .terminal import EXIT_USAGE, CommandError, format_table

__all__ = ["add_parser"]

# Why these bounds: past them the planner's arithmetic leaves floating point (a range
# squared overflows past 1e154, an interval's 1/sqrt(beta) past beta = 1e-300), and Python
# raised OverflowError, exit status 1.  Each is far beyond any real survey.
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
        "plan",
        help="expected interval half-widths for n respondents, or the n for a half-width",
        description="Expected interval half-widths for n respondents, or the respondents "
        "needed for a half-width, per mechanism and interval family.",
    )
    sub.add_argument(
        "--type",
        dest="question_type",
        choices=QUESTION_TYPES,
        default=None,
        help="question type (default single_choice; with --relay and no --options, yes_no)",
    )
    sub.add_argument(
        "--options",
        type=_count(MAX_OPTIONS, "options"),
        default=None,
        help="number of options (single and multiple choice), or a scale's points (5, 7, 11)",
    )
    sub.add_argument(
        "--epsilon", type=_real, default=None, help="the question's ε (required without --relay)"
    )
    sub.add_argument(
        "--applicable-share",
        type=_real,
        default=1.0,
        help="share of respondents expected to answer an optional or conditional question "
        "(default 1); half-widths are then those of the shares among them",
    )
    sub.add_argument(
        "--beta",
        type=_beta,
        default=0.05,
        help="allowed failure probability of each interval (default 0.05)",
    )
    goal = sub.add_mutually_exclusive_group()
    goal.add_argument(
        "--n",
        type=_count(MAX_RESPONDENTS, "respondents"),
        help="respondents: print expected half-widths",
    )
    goal.add_argument(
        "--half-width",
        type=_real,
        help="target half-width (a share, e.g. 0.05; answer units for numeric): "
        "print the respondents needed (with --relay: default 0.05)",
    )
    sub.add_argument("--lo", type=_real, default=0.0, help="numeric: lower end (default 0)")
    sub.add_argument("--hi", type=_real, default=1.0, help="numeric: upper end (default 1)")
    sub.add_argument("--json", action="store_true", help="JSON instead of a table")
    relay = sub.add_argument_group("relayed survey (shuffle model, docs/relay.md)")
    relay.add_argument(
        "--relay",
        action="store_true",
        help="plan for a shuffling relay: print the ε0 to set on each question",
    )
    relay.add_argument(
        "--central-epsilon",
        type=_real,
        default=None,
        help="with --relay: the central ε wanted for each batch",
    )
    relay.add_argument(
        "--delta",
        type=_real,
        default=None,
        help=f"with --relay: the central δ (default {DEFAULT_RELAY_DELTA:g})",
    )
    relay.add_argument(
        "--batch",
        type=_count(MAX_RESPONDENTS, "reports"),
        default=None,
        help="with --relay: the smallest batch the relay forwards (min_batch)",
    )
    relay.add_argument(
        "--relay-noise",
        action="store_true",
        help="with --relay: the relay adds dummy reports to every batch (the augmented "
        "shuffle): print the epsilon to set on the device, the dummies per batch and the "
        "published half-width",
    )
    for flag, words in (("--optional", "may be declined"), ("--conditional", "has a show_if")):
        relay.add_argument(
            flag,
            action="store_true",
            help=f"with --relay-noise: the question {words}, one more value in its domain "
            "(the relay adds dummies of it too); with --applicable-share",
        )
    relay.add_argument(
        "--mechanism",
        default=None,
        help="with --relay-noise: plan this mechanism (binary_rr, grr, option_sampling or "
        "duchi; default: the one with the narrowest published interval)",
    )
    sub.add_argument(
        "--by-type",
        choices=("yes_no", "single_choice", "multiple_choice"),
        default=None,
        help="crosstab by a second question of this type "
        "(default single_choice, or yes_no without --by-options)",
    )
    sub.add_argument(
        "--by-options",
        type=_count(MAX_OPTIONS, "options"),
        default=None,
        help="crosstab by a second question with this many options",
    )
    sub.add_argument(
        "--by-epsilon",
        type=_real,
        default=None,
        help="the second question's ε (default: the same as --epsilon)",
    )
    sub.set_defaults(func=cmd_plan)


def _question_goal(args: argparse.Namespace) -> dict[str, Any]:
    """What plan and relay_plan both take from the command line: the question and the goal."""
    return {
        "options": args.options,
        "beta": args.beta,
        "n": args.n,
        "half_width": args.half_width,
        "lo": args.lo,
        "hi": args.hi,
    }


def _goal_figures(row: Any, result: Plan) -> list[str]:
    """A row's two figures: half-widths at the plan's n, or the respondents for its target."""
    if result.n is not None:
        values = [row.half_width, row.simultaneous_half_width]
    else:
        values = [row.n_for_half_width, row.n_for_simultaneous_half_width]
    return list(map(format_number, values))


def cmd_plan(args: argparse.Namespace) -> int:
    if args.relay:
        return cmd_relay_plan(args)
    if args.relay_noise:
        raise CommandError("--relay-noise needs --relay", EXIT_USAGE)
    _refuse_extras(args)
    for option in ("central_epsilon", "batch", "delta", "mechanism"):
        if getattr(args, option) is not None:
            flag = "--" + option.replace("_", "-")
            raise CommandError(f"{flag} needs --relay", EXIT_USAGE)
    if args.epsilon is None:
        raise CommandError("the following arguments are required: --epsilon", EXIT_USAGE)
    if args.n is None and args.half_width is None:
        raise CommandError("one of the arguments --n --half-width is required", EXIT_USAGE)
    result = plan(
        args.question_type or "single_choice",
        epsilon=args.epsilon,
        applicable_share=args.applicable_share,
        **_question_goal(args),
    )
    crosstab = None
    if args.by_type or args.by_options:
        by_type = args.by_type or ("single_choice" if args.by_options else "yes_no")
        crosstab = plan_crosstab(
            (result.question_type, args.options, args.epsilon),
            (by_type, args.by_options, args.by_epsilon or args.epsilon),
            beta=args.beta,
            n=args.n,
            half_width=args.half_width,
        )
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
        rows.append([row.family, *_goal_figures(row, result)])
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
    unit = "points" if result.question_type == "scale" else "options"
    what = f", {result.options} {unit}" if result.options else ""
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
        rows.append(
            [
                name,
                row.family,
                row.report_bytes,
                *_goal_figures(row, result),
                format_number(row.expected_squared_error),
                format_number(row.worst_case_squared_error),
            ]
        )
    lines = [
        f"{result.question_type}{what}, epsilon {result.epsilon:g}, {level} intervals: {goal}",
        format_table(headers, rows),
        "* recommended: smallest squared error summed over categories at the uniform "
        "distribution (ties: smaller report).",
        "Intervals cover the respondents' own answers; half-widths are before cutting at 0 and 1.",
    ]
    if result.question_type == "scale":
        lines.append(
            f"A scale is planned as a single choice of its {result.options} points (the share "
            "of each point); its average's interval is not planned here."
        )
    return "\n".join(lines)


def _refuse_extras(args: argparse.Namespace) -> None:
    for flag in ("optional", "conditional"):
        if getattr(args, flag):
            raise CommandError(
                f"--{flag} needs --relay-noise; without relay noise, count the question's "
                "non-response values in --options and give --applicable-share",
                EXIT_USAGE,
            )


def cmd_relay_plan(args: argparse.Namespace) -> int:
    if args.epsilon is not None:
        raise CommandError(
            "--relay computes the question's ε from --central-epsilon: drop --epsilon", EXIT_USAGE
        )
    missing = [
        flag
        for flag, value in (("--central-epsilon", args.central_epsilon), ("--batch", args.batch))
        if value is None
    ]
    if missing:
        raise CommandError(f"--relay needs {' and '.join(missing)}", EXIT_USAGE)
    question_type = args.question_type or ("single_choice" if args.options else "yes_no")
    if args.relay_noise:
        if question_type == "scale":  # its mechanism randomizes one of its points
            if args.options not in SCALE_POINTS:
                raise CommandError("a scale has 5, 7 or 11 points (--options)", EXIT_USAGE)
            question_type = "single_choice"
        return planning_noise.cmd_relay_noise_plan(args, question_type)
    if args.mechanism is not None:
        raise CommandError("--mechanism needs --relay-noise", EXIT_USAGE)
    _refuse_extras(args)
    result = relay_plan(
        question_type,
        central_epsilon=args.central_epsilon,
        delta=DEFAULT_RELAY_DELTA if args.delta is None else args.delta,
        batch=args.batch,
        **_question_goal(args),
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(relay_table(result))
    return 0


def relay_table(result: RelayPlan) -> str:
    """The relay summary in words, then the plan at ε0."""
    question = result.plan
    lines = [
        f"Relayed survey: central epsilon {result.central_epsilon:g} at delta "
        f"{result.delta:g} for every batch of at least {result.batch:,} reports.",
        f"Set epsilon {result.local_epsilon:g} on each question (any mechanism; "
        f"central epsilon {result.achieved_central_epsilon:.4g} by the generic shuffling "
        "bound, FMT23 / Wang et al. 2024).",
    ]
    if result.respondents is not None:
        target = question.target if question.target is not None else DEFAULT_RELAY_HALF_WIDTH
        level = f"{100 * (1 - question.beta):g}%"
        needed = f"Respondents needed for ±{target:g} ({level}, {question.recommended}): "
        needed += f"{result.respondents:,}"
        if result.respondents_for_precision is not None and (
            result.respondents_for_precision < result.batch
        ):
            needed += f" (one batch; precision alone needs {result.respondents_for_precision:,})"
        lines.append(needed + ".")
        if result.respondents_without_relay is not None:
            lines.append(
                f"Without the relay, epsilon {result.central_epsilon:g} on the device needs "
                f"{result.respondents_without_relay:,}."
            )
        if result.smallest_batch is not None:
            lines.append(
                f"Fewest respondents for ±{target:g} through the relay: "
                f"{result.smallest_batch:,}, all in one batch (min_batch "
                f"{result.smallest_batch:,}, epsilon {result.smallest_batch_local_epsilon:g})."
            )
    if result.delta * result.batch > 0.1:
        lines.append(
            f"Note: delta {result.delta:g} is not well below 1/batch: a guarantee that may "
            "fail with that chance for each respondent could expose someone in a batch "
            "outright. Choose a smaller --delta."
        )
    cap = Policy().max_question_epsilon
    if result.local_epsilon > cap:
        lines.append(
            f"Note: devices on the default policy refuse more than epsilon {cap:g} per question "
            "(deniable.client.policy): they would not answer unless their cap is raised."
        )
    lines += [
        "Each shuffle unit (a question by default, or a whole submission) counts its own "
        "batch; with whole submissions, the epsilon above is the survey's total.",
        "The central figure holds if the relay does not collude with the aggregator and every "
        "report in a batch is genuine (with k injected, use batch - k); the device's epsilon "
        "holds for every report regardless.",
        "",
        plan_table(question),
    ]
    return "\n".join(lines)
