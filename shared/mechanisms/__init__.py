"""Mechanisms: one module each, listed in explicit tables (no registry magic).

``CATEGORICAL`` holds the pure frequency oracles, ``NUMERIC`` the mechanisms for
a number in a range, ``SET_VALUED`` the mechanisms for a set of options
(multiple choice; the per-option split lives in ``deniable.survey``);
``MECHANISMS`` is all three.  A new mechanism is added here and,
for the tests, to the list in ``tests/shared/conftest.py``.
"""

from __future__ import annotations

from .base import FrequencyOracle, Mechanism, NumericMechanism
from .binary_rr import BinaryRR
from .discrete_laplace import DiscreteLaplace
from .duchi import Duchi
from .grr import GRR
from .hadamard import HRR
from .local_hashing import OLH
from .option_sampling import OptionSampling
from .recommend import Recommendation, recommend
from .subset import SubsetSelection
from .unary import OUE, SUE

CATEGORICAL: dict[str, type[FrequencyOracle]] = {
    BinaryRR.name: BinaryRR,
    GRR.name: GRR,
    SUE.name: SUE,
    OUE.name: OUE,
    OLH.name: OLH,
    HRR.name: HRR,
    SubsetSelection.name: SubsetSelection,
}

NUMERIC: dict[str, type[NumericMechanism]] = {
    Duchi.name: Duchi,
    DiscreteLaplace.name: DiscreteLaplace,
}

SET_VALUED: dict[str, type[Mechanism]] = {
    OptionSampling.name: OptionSampling,
}

MECHANISMS: dict[str, type[Mechanism]] = {**CATEGORICAL, **NUMERIC, **SET_VALUED}

__all__ = [
    "CATEGORICAL",
    "GRR",
    "HRR",
    "MECHANISMS",
    "NUMERIC",
    "OLH",
    "OUE",
    "SET_VALUED",
    "SUE",
    "BinaryRR",
    "DiscreteLaplace",
    "Duchi",
    "FrequencyOracle",
    "Mechanism",
    "NumericMechanism",
    "OptionSampling",
    "Recommendation",
    "SubsetSelection",
    "recommend",
]
