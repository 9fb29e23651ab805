"""Deniable: local differential privacy surveys.

The ``deniable`` package is the pure core that the respondent's device, the relay
and the aggregator share: mechanisms, survey definitions, the wire documents,
estimators, confidence intervals, post-processing, the planner and the privacy
accounting.  It does no I/O.

The names below are the few most users need, in the spirit of OpenDP's
``prelude``; everything else stays in its module (``deniable.mechanisms``,
``deniable.estimation``, ``deniable.planner``, ...)::

    import deniable

    oracle = deniable.GRR(epsilon=1.0, domain_size=4)
    report = oracle.randomize(2)                    # one report, drawn from the OS CSPRNG

They are imported on first use, so ``import deniable`` (and every module of the
device path under it) stays as small as it was: the estimators need numpy, a
device never loads them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> the module that defines it.  Written out by hand: the prelude is a
# curated list, not whatever the modules happen to define.
_PRELUDE: dict[str, str] = {
    # mechanisms
    "BinaryRR": "deniable.mechanisms",
    "GRR": "deniable.mechanisms",
    "SUE": "deniable.mechanisms",
    "OUE": "deniable.mechanisms",
    "OLH": "deniable.mechanisms",
    "HRR": "deniable.mechanisms",
    "SubsetSelection": "deniable.mechanisms",
    "Duchi": "deniable.mechanisms",
    "DiscreteLaplace": "deniable.mechanisms",
    "OptionSampling": "deniable.mechanisms",
    "MECHANISMS": "deniable.mechanisms",
    "recommend": "deniable.mechanisms",
    # surveys
    "Survey": "deniable.survey",
    "Question": "deniable.survey",
    # estimators and intervals
    "estimate_frequencies": "deniable.estimation",
    "estimate_mean": "deniable.estimation",
    "FrequencyEstimate": "deniable.estimation",
    "MeanEstimate": "deniable.estimation",
    "question_results": "deniable.results",
    # planning and accounting
    "plan": "deniable.planner",
    "relay_plan": "deniable.planner",
    "central_epsilon": "deniable.shuffle",
    # errors
    "DeniableError": "deniable.errors",
}

__all__ = [
    "__version__",
    "BinaryRR",
    "GRR",
    "SUE",
    "OUE",
    "OLH",
    "HRR",
    "SubsetSelection",
    "Duchi",
    "DiscreteLaplace",
    "OptionSampling",
    "MECHANISMS",
    "recommend",
    "Survey",
    "Question",
    "estimate_frequencies",
    "estimate_mean",
    "FrequencyEstimate",
    "MeanEstimate",
    "question_results",
    "plan",
    "relay_plan",
    "central_epsilon",
    "DeniableError",
]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and editors only
    from .errors import DeniableError
    from .estimation import FrequencyEstimate, MeanEstimate, estimate_frequencies, estimate_mean
    from .mechanisms import (
        GRR,
        HRR,
        MECHANISMS,
        OLH,
        OUE,
        SUE,
        BinaryRR,
        DiscreteLaplace,
        Duchi,
        OptionSampling,
        SubsetSelection,
        recommend,
    )
    from .planner import plan, relay_plan
    from .results import question_results
    from .shuffle import central_epsilon
    from .survey import Question, Survey


def __getattr__(name: str) -> Any:
    """Import a prelude name from its module on first use (PEP 562)."""
    module = _PRELUDE.get(name)
    if module is None:
        raise AttributeError(f"module 'deniable' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PRELUDE))
