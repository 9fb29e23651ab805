"""Every wire document of Deniable, one typed class each, with one strict parse and one encode.

==========================  ==============================================  ===============
document                    class                                           docs
==========================  ==============================================  ===============
a report                    :class:`Report`                                 protocol.md §6.1
one respondent's reports    :class:`Submission`                             protocol.md §6.1
the operator's bulk body    :class:`BulkBody`                               api.md
a sealed submission         :class:`SealedSubmission` (``deniable.sealed/1``)  protocol.md §10.5
a relay batch               :class:`RelayBatch` (``deniable.batch/1``)      protocol.md §11.3
its acknowledgement         :class:`Acknowledgement`                        protocol.md §11.4
an error answer             :class:`Problem`, :class:`ProblemType`          api.md "Errors"
==========================  ==============================================  ===============

The survey document and the key document are verified by :mod:`deniable.keychain`
(signatures, rotation chains, the encryption key), which owns them.  Every document is
read with :func:`deniable.wire.strict_json.loads`, the one strict JSON reader.  Pure: no I/O.
"""

from __future__ import annotations

from . import strict_json
from .batches import Acknowledgement, RelayBatch
from .problems import TYPE_PREFIX, Problem, ProblemType
from .reports import (
    BATCH_FIELDS,
    REPORT_FIELDS,
    WIRE_VERSION,
    BulkBody,
    Report,
    Submission,
    batch_body,
    parse_report,
    parse_submission,
)
from .sealed import SealedSubmission, SealedUnit

__all__ = [
    "BATCH_FIELDS",
    "REPORT_FIELDS",
    "TYPE_PREFIX",
    "WIRE_VERSION",
    "Acknowledgement",
    "BulkBody",
    "Problem",
    "ProblemType",
    "RelayBatch",
    "Report",
    "SealedSubmission",
    "SealedUnit",
    "Submission",
    "batch_body",
    "parse_report",
    "parse_submission",
    "strict_json",
]
