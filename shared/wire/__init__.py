"""Every wire document of Deniable, one typed class each, with one strict parse and one encode.

- :class:`SurveyEnvelope`: a survey document as served (docs/protocol.md §2);
- :class:`KeyDocument`: the aggregator's key document (docs/key-rotation.md);
- :class:`Report`: one report (protocol.md §6.1);
- :class:`Submission`: one respondent's ``{"reports": [...]}`` (protocol.md §6.1);
- :class:`BulkBody`: the operator's bulk body (docs/api.md);
- :class:`SealedSubmission`: ``deniable.sealed/1``, a device's sealed units (§10.5);
- :class:`RelayBatch`: ``deniable.batch/1``, a relay's batch (§11.3);
- :class:`Acknowledgement`: the aggregator's answer to a batch (§11.4);
- :class:`Problem` and :class:`ProblemType`: an error answer and its kind (api.md "Errors").

The survey and key documents are verified by :mod:`deniable.keychain` (signatures,
rotation chains, the encryption key) over the document as served.  Every document is read
with :func:`deniable.wire.strict_json.loads`, the one strict JSON reader.  Pure: no I/O.
"""

from __future__ import annotations

from . import strict_json
from .batches import Acknowledgement, RelayBatch
from .documents import KeyDocument, SurveyEnvelope
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
    "KeyDocument",
    "Problem",
    "ProblemType",
    "RelayBatch",
    "Report",
    "SealedSubmission",
    "SealedUnit",
    "Submission",
    "SurveyEnvelope",
    "batch_body",
    "parse_report",
    "parse_submission",
    "strict_json",
]
