"""Deniable: local differential privacy surveys.

The ``deniable`` package is the pure core that the respondent's device and the
aggregator share: mechanisms, estimators, confidence intervals, post-processing,
survey definitions and the report wire format.  It does no I/O.
"""

__version__ = "0.1.0"
