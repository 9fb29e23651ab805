"""A question's published result: its estimates and every interval family.

The aggregator's side of a question.  The device builds the same
:class:`deniable.survey.Question` to randomize, but never estimates; estimation
needs numpy, so it lives here, beside :mod:`deniable.estimation`, and takes the
question and its additive sufficient statistics (``Question.statistics``,
summed over batches).

One interval is published as *the* interval: ``lower``/``upper`` (and
``simultaneous_lower``/``simultaneous_upper``) are the tightest published family's,
named by ``tightest`` (``simultaneous_tightest``), so the JSON, the CSV, the command
line, the dashboard and pandas show the same numbers.  Every family keeps its own
columns beside them: ``chebyshev_lower`` ... ``exact_tail_simultaneous_upper``.

A relayed survey's privacy is published as three figures, each with the condition it
holds under in words (:func:`privacy_figures`): the local ε every device applies, the
central ε of shuffling alone, and the central ε with the relay's dummy reports
(``deniable.dummies.noised_central_epsilon``; Murakami, Sei and Eriguchi, arXiv
2504.07362).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .estimation import DEFAULT_BETA, estimate_frequencies, estimate_mean, primary_interval
from .nonresponse import nonresponse_results

if TYPE_CHECKING:
    import numpy as np

    from .noised import DummyNoise
    from .survey import Question
    from .survey_relay import RelayNoise

__all__ = ["PUBLISHED_COLUMNS", "mean_row", "privacy_figures", "question_results"]

# The published interval's columns, in the order every tabular view shows them (the CSV,
# pandas): the estimate, the interval, and the family it is.
PUBLISHED_COLUMNS = (
    "label",
    "estimate",
    "lower",
    "upper",
    "tightest",
    "simultaneous_lower",
    "simultaneous_upper",
    "simultaneous_tightest",
    # "answered", "applicable" or "all": whom a share counts (optional and conditional
    # questions, deniable.nonresponse); empty for the other questions' rows.
    "share_of",
)
# Every interval family's own columns start with its name (``chebyshev_exact_`` with
# ``chebyshev_``); see :func:`deniable.estimation.primary_interval`.
_FAMILY_PREFIXES = ("chebyshev_", "bernstein_", "exact_tail_")


def question_results(
    question: Question,
    statistics: np.ndarray,
    n: int,
    *,
    beta: float | None = None,
    noise: DummyNoise | None = None,
) -> dict[str, Any]:
    """The published result for ``question`` from ``n`` reports' summed ``statistics``.

    A numeric question gets its mean (:func:`deniable.estimation.estimate_mean`); a choice
    question its frequencies, one per category with the mechanism's own estimator; a
    multiple-choice question estimates every option on its own (each is a yes/no share, so
    the shares are not normalized to sum to one).  An optional or conditional question
    publishes the shares among those who answered, who declined and whom it did not apply to,
    and a scale its mean point and net promoter score (:mod:`deniable.nonresponse`).

    ``noise``: the relay's dummy reports inside ``statistics`` (``deniable.noised``); n
    is then the real respondents only.  The estimates subtract the dummies' mean, every
    interval adds their variance, and the result's ``noise`` member says so (for optional,
    conditional and scale questions too: :mod:`deniable.nonresponse`).
    """
    if beta is None:
        beta = DEFAULT_BETA
    summary: dict[str, Any] = {
        "question": question.id,
        "type": question.type,
        "mechanism": question.mechanism,
        "epsilon": question.epsilon,
        "n": n,
    }
    if noise is not None:
        summary["noise"] = _noise_member(question, noise)
    if n == 0:
        return {**summary, "beta": beta, "estimate": None}
    oracle = question.oracle
    if question.extras or question.type == "scale":
        return {**summary, **nonresponse_results(question, statistics, n, beta, noise)}
    if oracle.kind == "numeric":
        mean = estimate_mean(oracle, statistics, n, beta=beta, noise=noise).to_dict()
        return {**summary, **primary_interval(mean, mean["tightest"], None)}
    if oracle.kind == "multiple":
        result = estimate_frequencies(
            oracle.per_category,
            statistics,
            n,
            beta=beta,
            categories=len(question.options),
            normalize=False,
            noise=noise,
        )
    else:
        result = estimate_frequencies(oracle, statistics, n, beta=beta, noise=noise)
    published = result.to_dict(question.labels)
    family, simultaneous = published["tightest"], published["simultaneous_tightest"]
    published["categories"] = [
        primary_interval(category, family, simultaneous) for category in published["categories"]
    ]
    return {**summary, **published}


def mean_row(result: dict[str, Any]) -> dict[str, Any]:
    """A numeric question's result as one table row: ``label`` "mean", its estimate, the
    published interval and every family's own bounds."""
    return {
        "label": "mean",
        "estimate": result["mean"],
        "lower": result["lower"],
        "upper": result["upper"],
        **{key: value for key, value in result.items() if key.startswith(_FAMILY_PREFIXES)},
    }


def _noise_member(question: Question, noise: DummyNoise) -> dict[str, Any]:
    """What the estimates took out: the dummies' expected number, from ``noise.batches``
    batches of D_y ~ law dummies for each of the mechanism's output reports."""
    values = len(question.oracle.output_reports() or ())
    return {
        "batches": noise.batches,
        "law": noise.law.to_dict(),
        "expected_dummies": noise.batches * values * noise.law.mean,
        "note": (
            "The relay added dummy reports; the estimates subtract their expected number "
            "and every interval includes their spread."
        ),
    }


def _words(epsilon: float) -> str:
    return "no finite bound" if epsilon == float("inf") else f"{epsilon:.3g}"


def privacy_figures(
    *,
    local_epsilon: float,
    delta: float,
    smallest_batch: int,
    noise: RelayNoise | None = None,
    batches: int = 0,
    plausible_batches: int = 0,
    noised_batches: int = 0,
    smallest_plausible: int = 0,
    smallest_shuffle_only: int = 0,
) -> dict[str, Any]:
    """The three privacy figures of a relayed question, each with its condition in words.

    * ``local_epsilon``: what every device applies; it holds even if the relay colludes
      with the aggregator or is compromised.
    * ``shuffle_epsilon`` at ``delta``: shuffling alone, for the smallest batch's real
      count (``deniable.shuffle.central_epsilon``).
    * ``noised_epsilon`` at ``noised_delta`` (when the survey signs relay noise): the
      worst over the batches of the better of the dummies' bound and the shuffle bound
      (``deniable.dummies.noised_central_epsilon``) for a batch with plausible dummies,
      and of the shuffle bound alone for any other batch (without dummies, or with too
      few or too many to be plausible).  Its δ is the larger of the two.

    ``central_epsilon``/``central_delta`` is the figure the result stands on: the
    with-noise one where the survey signs noise, else shuffling alone.
    """
    from .dummies import noised_central_epsilon
    from .shuffle import central_epsilon

    shuffled = central_epsilon(local_epsilon, smallest_batch, delta)
    figures = [
        {
            "name": "local",
            "epsilon": local_epsilon,
            "delta": 0.0,
            "words": (
                f"Each device randomized its own answer with epsilon {local_epsilon:g}. "
                "This holds even if the relay colludes with the aggregator or is compromised."
            ),
        },
        {
            "name": "shuffle",
            "epsilon": shuffled,
            "delta": delta,
            "words": (
                f"Shuffling alone gives central epsilon {_words(shuffled)} (delta {delta:g}) "
                f"for the smallest batch, of {smallest_batch:,} respondents. This holds if the "
                "relay does not collude with the aggregator and every batch counts only "
                "genuine respondents."
            ),
        },
    ]
    result: dict[str, Any] = {
        "local_epsilon": local_epsilon,
        "shuffle_epsilon": shuffled,
        "shuffle_delta": delta,
        "central_epsilon": shuffled,
        "central_delta": delta,
    }
    if noise is None:
        return {**result, "figures": figures}
    # Why the shuffle figure to start: with no batch counted below, nothing better is proved.
    worst, worst_delta = (0.0, noise.delta) if smallest_plausible else (shuffled, delta)
    if smallest_plausible:
        worst = noised_central_epsilon(noise.law, local_epsilon, smallest_plausible, noise.delta)
    shuffle_only = batches - plausible_batches
    if shuffle_only and smallest_shuffle_only:
        alone = central_epsilon(local_epsilon, smallest_shuffle_only, delta)
        worst, worst_delta = max(worst, alone), max(noise.delta, delta)
    words = (
        f"With the relay's dummy reports, central epsilon {_words(worst)} "
        f"(delta {worst_delta:g}). This holds if the relay does not collude with the "
        "aggregator and added the dummy reports its signed terms describe"
    )
    if shuffle_only:
        words += (
            f"; {shuffle_only} of {batches} batches count with shuffling alone "
            "(they carried no dummy reports, or too few or too many to be plausible)."
        )
    else:
        words += "."
    figures.append({"name": "noised", "epsilon": worst, "delta": worst_delta, "words": words})
    result |= {
        "noised_epsilon": worst,
        "noised_delta": worst_delta,
        "central_epsilon": worst,
        "central_delta": worst_delta,
        "figures": figures,
    }
    if shuffle_only:
        result["noise_note"] = (
            f"{shuffle_only} of {batches} batches were published with the shuffle bound only "
            f"({batches - noised_batches} without dummies, "
            f"{noised_batches - plausible_batches} whose dummies were not plausible)."
        )
    return result
