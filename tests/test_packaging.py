"""The wheel is complete, and the three rooms keep their dependencies apart."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROOMS = {
    "shared": "deniable",
    "client": "deniable/client",
    "aggregator": "deniable/aggregator",
    "analysis": "deniable/analysis",
}


def expected_members() -> set[str]:
    members = set()
    for folder, package in ROOMS.items():
        for path in (ROOT / folder).rglob("*"):
            if "__pycache__" in path.parts or not path.is_file():
                continue
            if path.suffix in {".py", ".sql", ".html", ".css", ".json", ".typed"}:
                members.add(f"{package}/{path.relative_to(ROOT / folder).as_posix()}")
    return members


@pytest.mark.slow
def test_wheel_contains_every_module_and_data_file(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
    )
    (wheel,) = tmp_path.glob("deniable-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = expected_members() - names
    assert not missing, f"files missing from the wheel: {sorted(missing)}"
    assert not any(name.startswith(("tests/", "benchmarks/")) for name in names)
    assert "deniable/py.typed" in names  # PEP 561: the package's type hints are usable


@pytest.mark.slow
def test_building_prints_no_setuptools_warnings(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-v",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    output = result.stdout + result.stderr
    assert "would be ignored" not in output and "SetuptoolsDeprecationWarning" not in output


def _import_blocked(module: str, blocked: list[str]) -> subprocess.CompletedProcess:
    script = (
        f"import sys\nfor name in {blocked!r}:\n    sys.modules[name] = None\nimport {module}\n"
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)


@pytest.mark.parametrize(
    "module",
    [
        "deniable.mechanisms",
        "deniable.survey",
        "deniable.wire",
        "deniable.estimation",
        "deniable.postprocess",
    ],
)
def test_shared_core_needs_no_io_libraries(module: str) -> None:
    result = _import_blocked(module, ["flask", "requests", "sqlite3", "psycopg", "socket"])
    assert result.returncode == 0, result.stderr


def test_client_never_imports_flask() -> None:
    result = _import_blocked("deniable.client", ["flask", "werkzeug", "psycopg", "gunicorn"])
    assert result.returncode == 0, result.stderr


def test_dev_does_not_reinstall_when_pyproject_is_unchanged() -> None:
    stamp = ROOT / ".venv" / ".deniable-installed"
    if not stamp.exists():
        pytest.skip("not run through ./dev (no .venv/.deniable-installed)")
    result = subprocess.run(
        [str(ROOT / "dev"), "demo", "--help"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "== installing" not in result.stderr and "--respondents" in result.stdout


def test_base_install_aggregator_says_to_install_the_server_extra() -> None:
    script = (
        "import sys\nsys.modules['flask'] = None\n"
        "from deniable.aggregator.cli import main\nsys.exit(main(['settings']))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 5
    assert result.stderr.strip().splitlines() == [
        "deniable-aggregator: error: the aggregator needs the server extra: "
        "pip install 'deniable[server]'"
    ]


DEVICE_WITHOUT_NUMPY = """
import sys
sys.modules["numpy"] = None  # as on a base install: any import of numpy fails
import deniable.client
from deniable.mechanisms import CATEGORICAL, NUMERIC
for cls in CATEGORICAL.values():
    oracle = cls(epsilon=1.0) if cls.name == "binary_rr" else cls(epsilon=1.0, domain_size=8)
    oracle.encode(oracle.randomize(1))
for cls in NUMERIC.values():
    oracle = cls(epsilon=1.0, lo=0.0, hi=1.0)
    oracle.encode(oracle.randomize(0.5))
from deniable.client.cli import main
sys.exit(main(["simulate", "http://127.0.0.1:9", "s1", "--respondents", "1"]))
"""


def test_the_device_runs_without_numpy_and_simulate_says_what_to_install() -> None:
    result = subprocess.run(
        [sys.executable, "-c", DEVICE_WITHOUT_NUMPY], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1
    assert "pip install 'deniable[sim]'" in result.stderr
