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


TABLE = ROOT / "tests" / "client" / "condition_cases.json"
# Every case's mechanism inputs in the browser client, one JSON line per case.
NODE_INPUTS = """
import { readFileSync } from "node:fs";
import { mechanismInputs, statuses } from "./deniable.js";
import { loadMechanisms, parseDefinition } from "./survey.js";
const table = JSON.parse(readFileSync(process.argv[1], "utf8"));
await loadMechanisms(table.definition);
const survey = parseDefinition(table.definition);
for (const c of table.cases) {
  let out;
  try {
    const inputs = mechanismInputs(survey, c.answers);
    out = { statuses: statuses(survey.questions, c.answers), inputs };
  } catch (error) {
    out = { refused: `${error.name}: ${error.message}` };
  }
  console.log(JSON.stringify(out));
}
"""


def _python_input(value: object) -> object:
    """Python's mechanism input as the browser client writes it (a numeric question with extras:
    (0, x) is x, (status, None) is {"status": status}; tuples are lists)."""
    if isinstance(value, tuple) and len(value) == 2 and (value[1] is None or value[0] == 0):
        status, number = value
        if number is None:
            return {"status": status}
        if isinstance(number, float):
            return number
    return list(value) if isinstance(value, tuple) else value


def test_conditions_and_inputs_match_python_on_the_shared_table() -> None:
    """The same show_if table (tests/client/condition_cases.json) through Python and JS: the same
    statuses, the same refusals and the same mechanism input for every question of every case."""
    from deniable.errors import InvalidValue
    from deniable.questionnaire import DECLINED, NOT_APPLICABLE, path_answers
    from deniable.survey import Survey

    table = json.loads(TABLE.read_text("utf-8"))
    survey = Survey.from_dict(table["definition"])
    result = subprocess.run(
        [node(), "--input-type=module", "-e", NODE_INPUTS, str(TABLE)],
        cwd=BROWSER,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    browser = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(browser) == len(table["cases"])
    for case, js in zip(table["cases"], browser, strict=True):
        answers = case["answers"]
        if "refused" in case:
            with pytest.raises(InvalidValue, match=case["refused"]):
                path_answers(survey, answers)
            assert js["refused"].startswith("InvalidValue") and case["refused"] in js["refused"]
            continue
        assert js["statuses"] == case["statuses"], case["name"]
        python = path_answers(survey, answers)
        for question, status in zip(survey.questions, case["statuses"], strict=True):
            truth = {"declined": DECLINED, "hidden": NOT_APPLICABLE}.get(status)
            expected = question.check_answer(answers[question.id] if truth is None else truth)
            assert python[question.id] == expected, (case["name"], question.id)
        assert [_python_input(python[q.id]) for q in survey.questions] == js["inputs"], case["name"]
