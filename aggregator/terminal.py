"""Terminal output of ``deniable-aggregator``: the results table and its lines.

One-line errors and plain tables are the service kit's (:mod:`deniable.service.terminal`);
the progress bar and the exit-status table are the core's (:mod:`deniable.terminal`),
shared with ``deniable`` and ``deniable-relay``.  Both are re-exported here for the
aggregator's modules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from deniable.service.terminal import CommandError, format_table
from deniable.service.terminal import fail as _fail  # noqa: F401 - the aggregator's spelling
from deniable.terminal import (
    EXIT_FAILURE,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    Progress,
    exit_status,
    quiet_pipe,
)

from .respond.words import answer_words

INTERVAL_NAMES = {
    "chebyshev": "Chebyshev (worst-case variance)",
    "chebyshev_exact": "Chebyshev (exact variance)",
    "bernstein": "Bernstein",
    "exact_tail": "exact tail (the count's exact distribution)",
    "ratio": "ratio (from its numerator's and denominator's intervals)",
}
# What each row's share is of (``share_of``, deniable.nonresponse), said once under the table.
SHARE_OF_WORDS = {
    "answered": "answers: shares among those who answered",
    "applicable": "{declined}: share of those asked",
    "all": "{not_applicable}: share of all respondents",
}
POINT_WORDS = {"mean": "mean score", "nps": "net promoter score"}
PRECISION_WORDS = {
    "uninformative": "WARNING: too few respondents: the interval spans half the range or more",
    "imprecise": "note: few respondents: intervals wider than ±10 points",
}


def _width(value: float, result: Mapping[str, Any]) -> str:
    return f"{value:.3g}" if "mean" in result else f"{100 * value:.1f}%"


def relay_lines(relay: Mapping[str, Any]) -> str:
    """A relayed survey's batch figures and what its central ε assumes, in plain words."""
    smallest = relay["smallest_batch"]
    lines = [
        f"relayed by {relay['url']} (shuffled per {relay['shuffle_unit']}, min_batch "
        f"{relay['min_batch']:,}): {relay['batches']:,} batches, smallest "
        f"{smallest if smallest is not None else '-'}, {relay['dropped']:,} sealed reports "
        "dropped (did not open or were invalid)"
    ]
    lines += [f"  central epsilon assumes: {condition}" for condition in relay["conditions"]]
    return "\n".join(lines)


def central_line(central: Mapping[str, Any]) -> str:
    if central.get("central_epsilon") is None:
        return f"central epsilon: none yet ({central.get('note', 'no batch forwarded')})"
    line = (
        f"central epsilon {central['central_epsilon']:.3g} at delta {central['delta']:g} "
        f"(smallest batch {central['batch']:,}; local epsilon {central['local_epsilon']:g})"
    )
    if "noised_epsilon" in central:  # relay noise: the three figures, each with its condition
        line += "".join(f"\n    {figure['words']}" for figure in central["figures"])
        if central.get("noise_note"):
            line += f"\n    {central['noise_note']}"
    return line


def _cell(label: str, value: float | None) -> str:
    """A result row's number: a share in percent, a scale's mean point or its NPS."""
    if value is None or value != value:
        return "-"
    if label == "mean":
        return f"{value:.3g}"
    if label == "nps":
        return f"{value:+.0f}"
    return f"{100 * value:.1f}%"


def results_table(
    results: Mapping[str, Any],
    survey: Mapping[str, Any] | None = None,
    truth: Mapping[str, Sequence[float]] | None = None,
) -> str:
    """The results document of ``GET /results`` as text, one block per question.

    ``survey`` (the survey document) adds the question texts; ``truth`` (the demo's
    simulated true shares or means, by question id) adds a column to compare with.
    """
    questions: dict[str, Mapping[str, Any]] = {}
    if survey:
        questions = {q["id"]: q for q in survey["definition"]["questions"]}
    texts = {key: question["text"] for key, question in questions.items()}
    level = f"{100 * (1 - float(results['beta'])):g}%"
    blocks = [
        f"{results['title']} ({results['survey']}, {results['status']}): "
        f"{results['n_reports']:,} reports; intervals: {level}, per category, the tightest "
        "published family (named per question); they cover the respondents' own answers"
    ]
    if results.get("relay"):
        blocks.append(relay_lines(results["relay"]))
    for q in results["questions"]:
        head = f"\n[{q['question']}] {texts.get(q['question'], '')}".rstrip()
        head += (
            f"\n  {q['type']}, mechanism {q['mechanism']}, epsilon {q['epsilon']:g}, n {q['n']:,}"
        )
        if q.get("central"):
            head += "\n  " + central_line(q["central"])
        if q.get("estimate", 0) is None or not q["n"]:
            blocks.append(head + "\n  no reports yet")
            continue
        family = q.get("tightest", "chebyshev")
        ends = (
            ("lower", "upper") if family == "chebyshev" else (f"{family}_lower", f"{family}_upper")
        )
        head += f", interval {INTERVAL_NAMES.get(family, family)}"
        if "mean" in q:
            rows = [["mean", f"{q['mean']:.4g}", f"{q[ends[0]]:.4g}", f"{q[ends[1]]:.4g}"]]
            shown = [f"{v:.4g}" for v in (truth or {}).get(q["question"], [])]
        else:
            # The published interval is lower/upper (deniable.results); a scale's mean and NPS
            # rows are points, not shares.  Labels in words: yes and no, the non-response values.
            labels = [c["label"] for c in q["categories"]]
            question = questions.get(q["question"], {"type": q["type"]})
            words = answer_words(question, labels) | POINT_WORDS
            rows = [
                [
                    words.get(c["label"], c["label"]),
                    *(_cell(c["label"], c[k]) for k in ("estimate", "lower", "upper")),
                ]
                for c in q["categories"]
            ]
            shown = [
                _cell(label, v)
                for label, v in zip(labels, (truth or {}).get(q["question"], []), strict=False)
            ]
        families = [
            f"{i['family']} ±{_width(i['nominal_half_width'], q)}"
            + (
                f" (all at once ±{_width(i['simultaneous_nominal_half_width'], q)})"
                if "categories" in q and len(q["categories"]) > 2
                else ""
            )
            for i in q.get("intervals", [])
        ]
        if families:
            head += "\n  worst-case half-widths: " + "; ".join(families)
        warning = PRECISION_WORDS.get(q.get("precision", "ok"), "")
        ten = "±10% of the answer range" if "mean" in q else "±10 points"
        if "mean" in q:
            warning = warning.replace("±10 points", ten)
        if warning and q.get("respondents_for_ten_points"):
            by = (
                " by the closed-form bounds"
                if q.get("respondents_for_ten_points_families") == "closed_form"
                else ""
            )
            warning += f" (about {q['respondents_for_ten_points']:,} needed for {ten}{by})"
        if warning:
            head += f"\n  {warning}"
        headers = ["answer", "estimate", "lower", "upper"]
        if truth is not None and len(shown) == len(rows):
            headers.append("true (simulated)")
            rows = [[*row, value] for row, value in zip(rows, shown, strict=True)]
        table = format_table(headers, rows)
        shares = {c.get("share_of") for c in q.get("categories") or []} - {None}
        if shares - {"answered"}:  # an optional or conditional question: say what each share is of
            table += "\n" + "; ".join(
                SHARE_OF_WORDS[share].format(**words)
                for share in ("answered", "applicable", "all")
                if share in shares
            )
        blocks.append(head + "\n" + "\n".join("  " + line for line in table.splitlines()))
    return "\n".join(blocks)


__all__ = [
    "EXIT_FAILURE",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "INTERVAL_NAMES",
    "POINT_WORDS",
    "PRECISION_WORDS",
    "SHARE_OF_WORDS",
    "CommandError",
    "Progress",
    "central_line",
    "exit_status",
    "format_table",
    "quiet_pipe",
    "relay_lines",
    "results_table",
]
