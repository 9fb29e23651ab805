"""The browser client's own tests under Node's built-in runner (``node --test``).

client/browser/test/ holds the cross-language vectors check, the client tests
against a fake aggregator and the ε audit of every JS randomizer.  Skipped with
the reason when Node >= 20 is missing, unless DENIABLE_REQUIRE_NODE=1 (then it fails).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BROWSER = ROOT / "client" / "browser"


def node() -> str:
    path = shutil.which("node")
    problem = None
    if path is None:
        problem = "node is not installed"
    else:
        version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
        match = re.match(r"v(\d+)", version)
        if not match or int(match.group(1)) < 20:
            problem = f"node >= 20 is needed, found {version.strip()!r}"
    if problem:
        if os.environ.get("DENIABLE_REQUIRE_NODE") == "1":
            pytest.fail(f"DENIABLE_REQUIRE_NODE=1 but {problem}")
        pytest.skip(problem)
    return path  # type: ignore[return-value]


@pytest.mark.slow
def test_node_test_runner_passes_the_browser_client_tests() -> None:
    result = subprocess.run(
        [node(), "--test", "test/"], cwd=BROWSER, capture_output=True, text=True, timeout=600
    )
    summary = "\n".join(line for line in result.stdout.splitlines() if line.startswith("# "))
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert re.search(r"^# fail 0$", summary, re.M), summary
    assert int(re.search(r"^# pass (\d+)$", summary, re.M).group(1)) >= 30, summary


def test_the_npm_package_holds_every_module_and_the_declarations() -> None:
    """``npm pack --dry-run``: what a publish would upload (nothing is published)."""
    npm = shutil.which("npm") if node() else None
    if npm is None:  # it ships with Node
        if os.environ.get("DENIABLE_REQUIRE_NODE") == "1":
            pytest.fail("DENIABLE_REQUIRE_NODE=1 but npm is not installed")
        pytest.skip("npm is not installed")
    result = subprocess.run(
        [npm, "pack", "--dry-run", "--json"],
        cwd=BROWSER,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (package,) = json.loads(result.stdout)
    files = {entry["path"] for entry in package["files"]}
    modules = {path.name for path in BROWSER.glob("*.js")}
    assert files == modules | {"deniable.d.ts", "README.md", "package.json"}
    assert package["name"] == "@deniable/browser" and not any(f.startswith("test") for f in files)
