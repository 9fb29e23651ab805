"""``deniable-aggregator plan --relay --relay-noise``: the relay-noise planner in words.

The relay adds dummy reports to every batch (the augmented shuffle; docs/relay-epsilon.md,
"Noise added by the relay"), so the central ε comes from the dummies and the device may
randomize with a large ε0.  Prints the ε0 to set, the dummies per batch (both calibrated
laws; the one with the narrower published interval is chosen), the published half-width
at ``--n`` (default: one batch), the fewest respondents for ``--half-width`` (default
±0.05), the same question without relay noise (the relay alone, and no relay) at the same
central ε, and how far one fake report moves a category's estimated count
(:mod:`deniable.relay_noise_plan`).  ``--json`` carries the same numbers.
"""

from __future__ import annotations

import argparse
import json

from deniable.planner import DEFAULT_RELAY_DELTA, format_number
from deniable.policy import Policy
from deniable.relay_noise_plan import RelayNoisePlan, relay_noise_plan

from .terminal import format_table

__all__ = ["cmd_relay_noise_plan", "relay_noise_table"]


def cmd_relay_noise_plan(args: argparse.Namespace, question_type: str) -> int:
    result = relay_noise_plan(
        question_type,
        central_epsilon=args.central_epsilon,
        delta=DEFAULT_RELAY_DELTA if args.delta is None else args.delta,
        batch=args.batch,
        options=args.options,
        beta=args.beta,
        n=args.n,
        half_width=args.half_width,
        lo=args.lo,
        hi=args.hi,
        mechanism=args.mechanism,
        extras=int(args.optional) + int(args.conditional),
        applicable_share=args.applicable_share,
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(relay_noise_table(result))
    return 0


def _law_words(choice) -> str:
    law = choice.law.to_dict()
    if law["distribution"] == "binomial":
        return f"binomial, {law['trials']} trials"
    ratio = law["lower_ratio"]
    if law["upper_ratio"] != ratio:
        ratio = f"{ratio} below, {law['upper_ratio']} above"
    return f"geometric, shift {law['shift']}, top {law['top']}, ratio {ratio}"


def relay_noise_table(result: RelayNoisePlan) -> str:
    """The relay-noise answer in words, then both dummy laws side by side."""
    chosen = result.chosen
    level = f"{100 * (1 - result.beta):g}%"
    target = f"±{result.target:g}"
    batches = f"{result.batches:,} batch" + ("es" if result.batches > 1 else "")
    what = result.question_type + (f", {result.options} options" if result.options else "")
    lines = [
        f"Relay noise ({what}): central epsilon {result.central_epsilon:g} at delta "
        f"{result.delta:g} for every batch of at least {result.batch:,} reports, from dummy "
        "reports the relay adds (the augmented shuffle, Murakami, Sei and Eriguchi, "
        "arXiv 2504.07362).",
        f"Set epsilon {result.local_epsilon:g} on each question ({result.mechanism}): it holds "
        "for every report even if the relay colludes with the aggregator.",
        f"Dummies per batch: {format_number(chosen.dummies_per_batch)} "
        f"({_law_words(chosen)}: {format_number(chosen.dummies_per_value)} per output value, "
        f"{chosen.output_values:,} values); central epsilon "
        f"{format_number(chosen.central_epsilon)} per batch.",
        f"Published {level} half-width at n = {result.n:,} ({batches} of dummies, worst case "
        f"over the true answers): ±{format_number(chosen.half_width)} ({chosen.interval}).",
    ]
    if result.extras or result.applicable_share < 1:
        lines.append(
            f"The question has {result.extras} non-response value"
            + ("s" if result.extras != 1 else "")
            + " (the relay adds dummies of them too); half-widths are those of the estimates "
            f"among the {100 * result.applicable_share:g}% expected to answer."
        )
    if chosen.respondents is not None:
        needed = (
            f"Respondents needed for {target}: {chosen.respondents:,} in batches of "
            f"{result.batch:,} (any number from there on)"
        )
        if chosen.respondents_one_batch is not None:
            needed += (
                f"; {chosen.respondents_one_batch:,} all in one batch "
                f"(min_batch {chosen.respondents_one_batch:,})"
            )
        lines.append(needed + ".")
    relay = (
        f"Without relay noise, at the same central epsilon: the relay alone allows epsilon "
        f"{result.relay_only_local_epsilon:g} on the device, "
        f"±{format_number(result.relay_only_half_width)} at n = {result.n:,}"
    )
    if result.relay_only_respondents is not None:
        relay += f", {result.relay_only_respondents:,} respondents for {target}"
    relay += (
        f"; with no relay (epsilon {result.central_epsilon:g} on the device), "
        f"±{format_number(result.local_only_half_width)}"
    )
    if result.local_only_respondents is not None:
        relay += f", {result.local_only_respondents:,} respondents"
    lines.append(relay + ".")
    if not result.noise_helps:
        lines.append(
            "Relay noise does not narrow this question's interval: the relay alone does "
            "better here."
        )
    if result.fake_report_shift is not None:
        shift = (
            f"One fake report moves a category's estimated count by "
            f"{format_number(result.fake_report_shift)}"
        )
        if result.local_only_fake_report_shift is not None:
            shift += (
                f" (with epsilon {result.central_epsilon:g} on the device and no relay: "
                f"{format_number(result.local_only_fake_report_shift)})"
            )
        lines.append(shift + ".")
    cap = Policy().max_question_epsilon
    if result.local_epsilon > cap:
        lines.append(
            f"Note: devices on the default policy refuse more than epsilon {cap:g} per question "
            "(deniable.client.policy): they would not answer unless their cap is raised."
        )
    if result.delta * result.batch > 0.1:
        lines.append(
            f"Note: delta {result.delta:g} is not well below 1/batch: choose a smaller --delta."
        )
    lines += [
        "The central figure holds if the relay adds the dummies the survey signs and does not "
        "collude with the aggregator; a batch whose dummies are too few is published with the "
        "shuffling bound alone.",
        "",
        "Dummy laws (the one with the narrower published interval is chosen, *):",
    ]
    headers = [
        "law",
        "dummies per batch",
        "variance per value",
        f"± at n = {result.n:,}",
        "interval",
        f"n for {target}",
        "n, one batch",
    ]
    rows = [
        [
            choice.family + (" *" if choice is chosen else ""),
            format_number(choice.dummies_per_batch),
            format_number(choice.law.variance),
            format_number(choice.half_width),
            choice.interval,
            format_number(choice.respondents),
            format_number(choice.respondents_one_batch),
        ]
        for choice in result.laws
    ]
    lines.append(format_table(headers, rows))
    return "\n".join(lines)
