"""``deniable-aggregator plan``: with ``--relay``, the ε0 to set for a central target through a
shuffling relay, and the respondents it needs, through the installed console script; and for
any argument, a table or one clear line with exit status 2, never a crash (exit 1) or a NaN."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deniable.aggregator import cli
from deniable.planner import best_respondents, plan, smallest_relayed_batch
from deniable.shuffle import central_epsilon, local_epsilon_for

from .test_cli import call
from .test_cli import paths as paths  # noqa: F401 - a fixture

PROG = "deniable-aggregator"


def script(*argv: str) -> subprocess.CompletedProcess:
    path = shutil.which(PROG, path=str(Path(sys.executable).parent))
    assert path, f"{PROG} is not on the venv's PATH"
    return subprocess.run([path, *argv], capture_output=True, text=True, timeout=60)


def test_issue_command_prints_epsilon0_and_respondents() -> None:
    argv = ["plan", "--relay", "--central-epsilon", "0.5", "--delta", "1e-6", "--batch", "10000"]
    result = script(*argv)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # docs/relay-epsilon.md: ε0 = 4 at n = 10,000 gives 0.411, so 0.5 allows a little more
    assert "Set epsilon 4.336 on each question" in out
    assert "Respondents needed for ±0.05 (95%, binary_rr): 10,000 (one batch" in out
    assert "Without the relay, epsilon 0.5 on the device needs 6,116." in out
    assert "collude" in out and "binary_rr *" in out
    assert "refuse more than epsilon 4 per question" in out  # 4.336 is over the default cap

    document = json.loads(script(*argv, "--json").stdout)
    relay = document["relay"]
    assert relay["local_epsilon"] == 4.336 and relay["batch"] == 10_000
    assert relay["delta"] == 1e-6
    assert central_epsilon(relay["local_epsilon"], 10_000, 1e-6) <= 0.5
    assert central_epsilon(relay["local_epsilon"] + 0.002, 10_000, 1e-6) > 0.5
    assert relay["respondents"] == 10_000 and relay["respondents_for_precision"] < 10_000
    assert relay["respondents_without_relay"] == 6_116  # docs/choosing-epsilon.md, ε = 0.5
    assert document["epsilon"] == 4.336 and document["without_relay"]["epsilon"] == 0.5
    # the fewest respondents through a relay: one batch of N at the ε0 batches of N allow
    smallest, local = relay["smallest_batch"], relay["smallest_batch_local_epsilon"]
    assert "Fewest respondents for ±0.05 through the relay: 422" in out
    assert (smallest, local) == (422, 1.704)
    assert central_epsilon(local, smallest, 1e-6) <= 0.5
    assert best_respondents(plan("yes_no", epsilon=local, half_width=0.05)) <= smallest
    below = math.floor(local_epsilon_for(0.5, smallest - 1, 1e-6) * 1000) / 1000
    assert best_respondents(plan("yes_no", epsilon=below, half_width=0.05)) > smallest - 1


def test_single_choice(capsys) -> None:
    status, out, _ = call(
        capsys,
        [
            "plan",
            "--relay",
            "--central-epsilon",
            "0.5",
            "--batch",
            "1000",
            "--options",
            "5",
            "--json",
        ],
    )
    assert status == 0
    document = json.loads(out)
    relay = document["relay"]
    assert relay["local_epsilon"] == 2.302  # table in docs/relay-epsilon.md
    assert document["question_type"] == "single_choice" and document["options"] == 5
    assert relay["respondents"] >= 1000
    assert relay["respondents"] < relay["respondents_without_relay"]


def test_half_widths_at_n(capsys) -> None:
    status, out, _ = call(
        capsys,
        [
            "plan",
            "--relay",
            "--central-epsilon",
            "1",
            "--batch",
            "2000",
            "--n",
            "6000",
            "--type",
            "yes_no",
        ],
    )
    assert status == 0
    assert "expected half-widths at n = 6,000" in out and "Respondents needed" not in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--relay", "--central-epsilon", "0.5"], "--relay needs --batch"),
        (["--relay", "--batch", "100"], "--relay needs --central-epsilon"),
        (
            ["--relay", "--central-epsilon", "0.5", "--batch", "100", "--epsilon", "1"],
            "drop --epsilon",
        ),
        (["--epsilon", "1", "--n", "10", "--batch", "100"], "--batch needs --relay"),
        (["--epsilon", "1", "--n", "10", "--delta", "1e-6"], "--delta needs --relay"),
        (["--n", "10"], "--epsilon"),
        (["--epsilon", "1", "--type", "yes_no"], "--n --half-width"),
        (["--relay", "--central-epsilon", "0", "--batch", "100"], "central_epsilon"),
        (["--relay", "--central-epsilon", "0.5", "--batch", "100", "--delta", "1"], "delta"),
        (["--relay", "--central-epsilon", "0.5", "--batch", "0"], "--batch"),
        (
            ["--relay", "--central-epsilon", "0.5", "--batch", "1000", "--n", "10"],
            "less than one batch",
        ),
    ],
)
def test_usage_errors_exit_2_with_one_line(capsys, argv, message) -> None:
    status, _, err = call(capsys, ["plan", *argv])
    assert status == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"{PROG}") and message in lines[0], err


def test_usage_error_through_the_console_script() -> None:
    result = script("plan", "--relay", "--batch", "1000")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == f"{PROG}: error: --relay needs --central-epsilon"


def test_choosing_epsilon_relayed_column() -> None:
    """Two cells of docs/choosing-epsilon.md's relayed columns, recomputed."""
    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "choosing-epsilon.md").read_text("utf-8")
    assert "| 1 | 367 | 1,440 | 8,990 | 242 (ε0 2.115) |" in text
    assert smallest_relayed_batch("yes_no", central_epsilon=1, half_width=0.05) == (242, 2.115)
    assert "| 220 (ε0 2.716) | 286 (ε0 2.931) |" in text
    assert smallest_relayed_batch(
        "single_choice", central_epsilon=2, half_width=0.05, options=5
    ) == (220, 2.716)


def test_choosing_epsilon_relay_noise_column() -> None:
    """Two cells of docs/choosing-epsilon.md's relay-noise columns, recomputed: the fewest
    respondents for ±5 points in one batch, and the dummies per batch."""
    from deniable.relay_noise_plan import smallest_noised_batch

    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "choosing-epsilon.md").read_text("utf-8")
    assert "| 242 (ε0 2.115) | 120 (54) |" in text
    needed, law = smallest_noised_batch("yes_no", central_epsilon=1, half_width=0.05)
    assert (needed, law.dummies_per_batch, law.family) == (120, 54, "geometric")
    assert "| 60 (70) | 70 (280) |" in text
    needed, law = smallest_noised_batch(
        "single_choice", central_epsilon=2, half_width=0.05, options=20
    )
    assert (needed, law.dummies_per_batch) == (70, 280)


def test_notes_for_a_large_delta_and_the_device_cap(capsys) -> None:
    status, out, _ = call(
        capsys,
        ["plan", "--relay", "--central-epsilon", "0.5", "--batch", "1000000", "--n", "1000000"],
    )
    assert status == 0
    assert "delta 1e-06 is not well below 1/batch" in out
    assert "refuse more than epsilon 4 per question" in out  # ε0 8.9
    status, out, _ = call(
        capsys, ["plan", "--relay", "--central-epsilon", "0.5", "--batch", "1000", "--n", "1000"]
    )
    assert status == 0 and "Note:" not in out


def test_crosstab_cell_plan(capsys) -> None:
    """``plan --by-type``: respondents for a ±10-point crosstab cell (deniable.crosstab_plan)."""
    from deniable.crosstab_plan import plan_crosstab

    argv = [
        "plan",
        "--options",
        "5",
        "--epsilon",
        "1",
        "--half-width",
        "0.1",
        "--by-type",
        "yes_no",
    ]
    status, out, _ = call(capsys, argv)
    assert status == 0
    expected = plan_crosstab(("single_choice", 5, 1.0), ("yes_no", None, 1.0), half_width=0.1)
    bernstein = next(r for r in expected.rows if r.family == "bernstein")
    assert "crosstab grr x binary_rr: respondents needed for ±0.1 in a crosstab cell" in out
    assert f"{bernstein.n_for_half_width:,}" in out and "n all 10 cells" in out
    status, out, _ = call(capsys, [*argv, "--json"])
    document = json.loads(out)
    assert document["crosstab"]["rows"][1]["n_for_half_width"] == bernstein.n_for_half_width


def test_relay_noise_command_prints_and_json_carries_the_same_numbers() -> None:
    """``plan --relay --relay-noise``: ε0, dummies per batch, the published half-width and
    the fewest respondents for ±5 points, the same in the text and in ``--json``."""
    from deniable.planner import format_number
    from deniable.relay_noise_plan import relay_noise_plan

    argv = [
        "plan",
        "--relay",
        "--relay-noise",
        "--central-epsilon",
        "1",
        "--delta",
        "1e-6",
        "--batch",
        "100",
        "--options",
        "2",
    ]
    result = script(*argv)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    document = json.loads(script(*argv, "--json").stdout)
    expected = relay_noise_plan(
        "single_choice", central_epsilon=1, delta=1e-6, batch=100, options=2
    ).to_dict()
    assert document == json.loads(json.dumps(expected))
    assert document["local_epsilon"] == 8 and document["dummies_per_batch"] == 54
    assert document["law"] == "geometric" and document["batch"] == 100
    assert "Set epsilon 8 on each question" in out
    assert "Dummies per batch: 54 (geometric, shift 27, top 54" in out
    half = format_number(document["half_width"])
    assert (
        "Published 95% half-width at n = 100 (1 batch of dummies, worst case over the true "
        f"answers): ±{half}"
    ) in out
    assert f"±{half} ({document['interval']})" in out
    assert f"Respondents needed for ±0.05: {document['respondents']:,} in batches of 100" in out
    assert f"{document['respondents_one_batch']:,} all in one batch" in out
    relay, local = document["relay_only"], document["local_only"]
    assert f"the relay alone allows epsilon {relay['local_epsilon']:g} on the device" in out
    assert f"±{format_number(relay['half_width'])} at n = 100" in out
    assert f"{local['respondents']:,} respondents." in out
    assert f"by {format_number(document['fake_report_shift'])} (with epsilon 1" in out
    for law in document["laws"]:
        row = next(line for line in out.splitlines() if line.startswith(law["family"]))
        cells = row.replace(" *", "").split()
        assert cells[1:4] == [
            format_number(law["dummies_per_batch"]),
            format_number(law["variance_per_value"]),
            format_number(law["half_width"]),
        ]
        assert cells[5:] == [f"{law['respondents']:,}", f"{law['respondents_one_batch']:,}"]
    assert "refuse more than epsilon 4 per question" in out  # ε0 8 is over the default cap


def test_relay_noise_text_says_when_the_relay_alone_does_better(capsys) -> None:
    status, out, _ = call(
        capsys,
        [
            "plan",
            "--relay",
            "--relay-noise",
            "--central-epsilon",
            "1",
            "--batch",
            "100",
            "--type",
            "multiple_choice",
            "--options",
            "5",
        ],
    )
    assert status == 0
    assert "(option_sampling)" in out and "Dummies per batch: 270" in out
    assert "Relay noise does not narrow this question's interval" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--epsilon", "1", "--n", "10", "--relay-noise"], "--relay-noise needs --relay"),
        (["--epsilon", "1", "--n", "10", "--mechanism", "grr"], "--mechanism needs --relay"),
        (
            ["--relay", "--central-epsilon", "1", "--batch", "100", "--mechanism", "grr"],
            "--mechanism needs --relay-noise",
        ),
        (
            [
                "--relay",
                "--relay-noise",
                "--central-epsilon",
                "1",
                "--batch",
                "100",
                "--options",
                "8",
                "--mechanism",
                "subset",
            ],
            "subset cannot carry relay noise",
        ),
        (
            ["--relay", "--relay-noise", "--central-epsilon", "1", "--batch", "100", "--n", "50"],
            "less than one batch",
        ),
        (
            [
                "--relay",
                "--relay-noise",
                "--central-epsilon",
                "1",
                "--batch",
                "100",
                "--options",
                "5000",
            ],
            "relay noise is not available for a single_choice question with 5,000 options",
        ),
    ],
)
def test_relay_noise_usage_errors_exit_2_with_one_line(capsys, argv, message) -> None:
    status, _, err = call(capsys, ["plan", *argv])
    assert status == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"{PROG}") and message in lines[0], err


# -- out-of-range numbers ----------------------------------------

HUGE_INTEGER = "9" * 310
NUMBERS = [
    "0",
    "1",
    "-1",
    "2",
    "0.5",
    "1e-300",
    "1e-320",
    "5e-324",
    "1e308",
    "-1e308",
    "1.7976931348623157e308",
    "1e309",
    "inf",
    "-inf",
    "nan",
    "1e15",
    "1e16",
    "1e150",
    "1e200",
    HUGE_INTEGER,
    "-" + HUGE_INTEGER,
    "0.999999999999",
    "0x10",
    "1_000",
    "",
    "abc",
    "20",
    "20.000001",
    "0.001",
    "0.0009",
]


def run(capsys, *arguments: str) -> tuple[int, str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning (NaN, overflow) is a failure too
        try:
            status = cli.main(["plan", *arguments])
        except SystemExit as stop:  # argparse's own usage errors: one line, status 2
            status = stop.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def check(status: int, out: str, err: str) -> None:
    assert status in (0, 2), (status, err)
    if status == 2:
        assert out == "" and len(err.strip().splitlines()) == 1, err
        assert err.startswith("deniable-aggregator") and "Traceback" not in err
        assert "unexpected" not in err, err
    else:
        assert err == "", err
        for word in ("nan", "inf"):
            assert word not in out.lower().replace("infinite", ""), out


@pytest.mark.parametrize(
    "arguments",
    [
        ["--type", "numeric", "--epsilon", "1", "--n", "100", "--hi", "1e308"],
        ["--options", "4", "--epsilon", "1", "--n", HUGE_INTEGER],
        ["--type", "numeric", "--epsilon", "1", "--half-width", "1e-300", "--hi", "1e300"],
        ["--options", "4", "--epsilon", "1", "--beta", "1e-320", "--n", "5"],
        ["--type", "numeric", "--epsilon", "1", "--n", "10", "--lo=-1e308", "--hi", "1e308"],
    ],
)
def test_out_of_range_numbers_are_refused_with_one_line(capsys, arguments):
    status, out, err = run(capsys, *arguments)
    assert status == 2, (status, err)
    check(status, out, err)


def test_a_plan_in_range_still_prints(capsys):
    status, out, err = run(
        capsys,
        "--type",
        "numeric",
        "--epsilon",
        "1",
        "--n",
        "1000",
        "--lo=-1e6",
        "--hi",
        "1e6",
        "--json",
    )
    check(status, out, err)
    assert status == 0 and json.loads(out)["n"] == 1000


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    question=st.sampled_from(["yes_no", "single_choice", "multiple_choice", "numeric"]),
    options=st.one_of(
        st.none(),
        st.sampled_from(["2", "5", "64", "65536", "65537", "0", "-3", HUGE_INTEGER, "1e3"]),
    ),
    epsilon=st.sampled_from(NUMBERS),
    beta=st.one_of(st.none(), st.sampled_from(NUMBERS)),
    goal=st.sampled_from(["--n", "--half-width"]),
    amount=st.sampled_from(NUMBERS),
    lo=st.one_of(st.none(), st.sampled_from(NUMBERS)),
    hi=st.one_of(st.none(), st.sampled_from(NUMBERS)),
    as_json=st.booleans(),
)
def test_fuzzed_arguments_never_crash(
    capsys, question, options, epsilon, beta, goal, amount, lo, hi, as_json
):
    arguments = ["--type", question, f"--epsilon={epsilon}", f"{goal}={amount}"]
    for name, value in (("--options", options), ("--beta", beta), ("--lo", lo), ("--hi", hi)):
        if value is not None:
            arguments.append(f"{name}={value}")
    if as_json:
        arguments.append("--json")
    check(*run(capsys, *arguments))


# -- scales, and optional and conditional questions in the dry run ---------------------------


def test_a_scale_plans_as_a_single_choice_of_its_points(capsys) -> None:
    argv = ["plan", "--epsilon", "1", "--half-width", "0.05", "--json"]
    status, out, err = call(capsys, [*argv, "--type", "scale", "--options", "11"])
    assert status == 0, err
    scale = json.loads(out)
    status, out, _ = call(capsys, [*argv, "--type", "single_choice", "--options", "11"])
    choice = json.loads(out)
    assert scale["question_type"] == "scale" and scale["options"] == 11
    assert scale["rows"] == choice["rows"] and scale["recommended"] == choice["recommended"]
    status, out, _ = call(capsys, ["plan", "--type", "scale", "--options", "7", "--epsilon", "1",
                                   "--n", "1000"])  # fmt: skip
    assert status == 0 and out.startswith("scale, 7 points, epsilon 1")
    assert "a single choice of its 7 points" in out
    status, _, err = call(capsys, ["plan", "--type", "scale", "--options", "4", "--epsilon", "1",
                                   "--n", "1000"])  # fmt: skip
    assert status == 2 and "5, 7 or 11 points" in err and len(err.splitlines()) == 1
    relayed = ["plan", "--relay", "--central-epsilon", "1", "--batch", "1000", "--type", "scale"]
    status, out, err = call(capsys, [*relayed, "--options", "5", "--relay-noise"])
    assert status == 0 and "Set epsilon" in out, err  # planned as a single choice of 5 points
    status, out, err = call(capsys, [*relayed, "--options", "6", "--relay-noise"])
    assert status == 2 and "5, 7 or 11 points" in err
    status, out, err = call(capsys, [*relayed, "--options", "5"])
    assert status == 0 and "Set epsilon" in out, err


def test_the_dry_run_marks_optional_and_conditional_questions(paths, capsys) -> None:
    from .test_cli import run

    path = paths["dir"] / "mini.yaml"
    path.write_text(
        "title: Mini\n"
        "questions:\n"
        "  - {id: q1, type: yes_no, text: 'Burnt out?', optional: true}\n"
        "  - {id: q2, type: single_choice, text: 'Why?', options: [Work, Home],\n"
        "     show_if: {question: q1, equals: true}}\n"
        "  - {id: q3, type: scale, points: 5, text: 'Happy?', optional: true,\n"
        "     help: Think of this week}\n"
        "  - {id: q4, type: numeric, text: Hours, lo: 0, hi: 60}\n",
        encoding="utf-8",
    )
    status, out, err = call(capsys, run(paths, "create-survey", str(path), "--dry-run"))
    assert status == 0, err
    rows = {
        line.split()[0]: line for line in out.splitlines() if line[:2] in ("q1", "q2", "q3", "q4")
    }
    assert rows["q1"].split()[2] == "optional" and rows["q4"].split()[2] == "everyone"
    assert rows["q2"].split()[2] == "conditional" and rows["q3"].split()[2] == "optional"
    assert "q2: shown only when “Burnt out?” is Yes" in out
    assert "q3: help: Think of this week" in out
    assert "shares of the respondents it applies to who answer it" in out
