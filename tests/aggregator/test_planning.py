"""``deniable-aggregator plan`` (aggregator/planning.py): any argument gives a table or one
clear line with exit status 2, never a crash (exit 1) or a NaN (issue 21, failure 5)."""

from __future__ import annotations

import json
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deniable.aggregator import cli

HUGE_INTEGER = "9" * 310
NUMBERS = [
    "0", "1", "-1", "2", "0.5", "1e-300", "1e-320", "5e-324", "1e308", "-1e308",
    "1.7976931348623157e308", "1e309", "inf", "-inf", "nan", "1e15", "1e16", "1e150", "1e200",
    HUGE_INTEGER, "-" + HUGE_INTEGER, "0.999999999999", "0x10", "1_000", "", "abc", "20",
    "20.000001", "0.001", "0.0009",
]  # fmt: skip


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


@pytest.mark.parametrize("arguments", [
    ["--type", "numeric", "--epsilon", "1", "--n", "100", "--hi", "1e308"],
    ["--options", "4", "--epsilon", "1", "--n", HUGE_INTEGER],
    ["--type", "numeric", "--epsilon", "1", "--half-width", "1e-300", "--hi", "1e300"],
    ["--options", "4", "--epsilon", "1", "--beta", "1e-320", "--n", "5"],
    ["--type", "numeric", "--epsilon", "1", "--n", "10", "--lo=-1e308", "--hi", "1e308"],
])  # fmt: skip
def test_out_of_range_numbers_are_refused_with_one_line(capsys, arguments):
    status, out, err = run(capsys, *arguments)
    assert status == 2, (status, err)
    check(status, out, err)


def test_a_plan_in_range_still_prints(capsys):
    status, out, err = run(capsys, "--type", "numeric", "--epsilon", "1", "--n", "1000",
                           "--lo=-1e6", "--hi", "1e6", "--json")  # fmt: skip
    check(status, out, err)
    assert status == 0 and json.loads(out)["n"] == 1000


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    question=st.sampled_from(["yes_no", "single_choice", "multiple_choice", "numeric"]),
    options=st.one_of(st.none(), st.sampled_from(["2", "5", "64", "65536", "65537", "0", "-3",
                                                  HUGE_INTEGER, "1e3"])),
    epsilon=st.sampled_from(NUMBERS),
    beta=st.one_of(st.none(), st.sampled_from(NUMBERS)),
    goal=st.sampled_from(["--n", "--half-width"]),
    amount=st.sampled_from(NUMBERS),
    lo=st.one_of(st.none(), st.sampled_from(NUMBERS)),
    hi=st.one_of(st.none(), st.sampled_from(NUMBERS)),
    as_json=st.booleans(),
)
def test_fuzzed_arguments_never_crash(capsys, question, options, epsilon, beta, goal, amount,
                                      lo, hi, as_json):  # fmt: skip
    arguments = ["--type", question, f"--epsilon={epsilon}", f"{goal}={amount}"]
    for name, value in (("--options", options), ("--beta", beta), ("--lo", lo), ("--hi", hi)):
        if value is not None:
            arguments.append(f"{name}={value}")
    if as_json:
        arguments.append("--json")
    check(*run(capsys, *arguments))
