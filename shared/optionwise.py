"""Multiple choice by one binary randomized response per option: moved to
:mod:`deniable.mechanisms.optionwise` (its home beside the other mechanisms); this name stays
for callers that import it from here."""

from __future__ import annotations

from .mechanisms.optionwise import OptionwiseRR

__all__ = ["OptionwiseRR"]
