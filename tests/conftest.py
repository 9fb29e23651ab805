"""Fixtures and hooks for the whole suite.

* No test writes into the real user's home: before any test module is imported,
  ``DENIABLE_HOME``, ``XDG_DATA_HOME`` and ``DENIABLE_STATE`` point into a fresh
  temporary directory (subprocesses inherit them), removed at the end.
* When ``DENIABLE_TEST_POSTGRES_DSN`` is unset, the short summary shows the
  PostgreSQL skips as one line (with their count) instead of one per test.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

SANDBOX = Path(tempfile.mkdtemp(prefix="deniable-tests-home-"))
os.environ["DENIABLE_HOME"] = str(SANDBOX / "aggregator")
os.environ["XDG_DATA_HOME"] = str(SANDBOX / "xdg")
os.environ["DENIABLE_STATE"] = str(SANDBOX / "client" / "state.bin")
atexit.register(shutil.rmtree, SANDBOX, ignore_errors=True)

POSTGRES_SKIP = "DENIABLE_TEST_POSTGRES_DSN is unset"


@pytest.hookimpl(tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    """Fold every "PostgreSQL unset" skip into one summary line."""
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        if isinstance(longrepr, tuple) and len(longrepr) == 3 and POSTGRES_SKIP in longrepr[2]:
            report.longrepr = (
                "tests",
                None,
                "PostgreSQL tests skipped: DENIABLE_TEST_POSTGRES_DSN is unset",
            )
