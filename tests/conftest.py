"""Fixtures and hooks for the whole suite.

* No test writes into the real user's home: before any test module is imported,
  ``DENIABLE_HOME``, ``XDG_DATA_HOME`` and ``DENIABLE_STATE`` point into a fresh
  temporary directory (subprocesses inherit them), removed at the end.
* The slowest modules are collected first: ``./dev test`` hands whole modules to its workers
  in collection order, so a long module started last would leave the other workers idle
  while it finishes (longest first keeps the run short).
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

# Modules that take a minute or more of one worker (pytest --durations), longest first.
SLOWEST_MODULES = (
    "tests/aggregator/test_openapi.py",
    "tests/resilience/test_fuzz.py",
    "tests/resilience/test_load.py",
    "tests/aggregator/test_editor_browser.py",
    "tests/aggregator/test_cli_tokens.py",
    "tests/aggregator/test_respond_questionnaire.py",
    "tests/shared/test_nonresponse.py",
    "tests/client/test_browser_node.py",
    "tests/aggregator/test_respond_axe.py",
    "tests/resilience/test_fuzz_cli.py",
    "tests/relay/test_noise_results.py",
    "tests/resilience/test_memo_audit.py",
    "tests/aggregator/test_respond_relay_browser.py",
    "tests/aggregator/test_cli_common.py",
    "tests/aggregator/test_crosstab_browser.py",
    "tests/aggregator/test_storage.py",
)


def pytest_collection_modifyitems(config, items) -> None:  # noqa: ARG001
    """Move the slowest modules to the front, longest first; keep every other order."""
    rank = {module: i for i, module in enumerate(SLOWEST_MODULES)}
    root = Path(__file__).resolve().parent.parent

    def key(item) -> int:
        module = item.path.resolve().relative_to(root).as_posix()
        return rank.get(module, len(rank))

    items.sort(key=key)


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
