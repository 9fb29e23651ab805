"""create-survey's links and QR code, surveys' links and human times, close-survey's flags.

(The XLSForm, YAML and --dry-run paths are test_importing.py's; --flush-relay against a
real relay is tests/relay/test_flushing.py's.)
"""

from __future__ import annotations

import json
from datetime import datetime

from deniable.aggregator.qr import qr_inline, qr_svg

from .test_cli import DEMO, call, run
from .test_cli import initialised as initialised  # noqa: F401 - a fixture
from .test_cli import paths as paths  # noqa: F401 - a fixture

PUBLIC = "https://surveys.example.org"


def test_create_survey_writes_the_links_qr_code(initialised, capsys, monkeypatch) -> None:
    monkeypatch.setenv("DENIABLE_PUBLIC_URL", PUBLIC)
    definition = initialised["dir"] / "survey.json"
    definition.write_text(json.dumps(DEMO), "utf-8")
    qr = initialised["dir"] / "notice-qr.svg"
    status, out, err = call(
        capsys, run(initialised, "create-survey", str(definition), "--qr", str(qr))
    )
    assert status == 0, err
    link = f"{PUBLIC}/surveys/{DEMO['id']}/respond"
    assert out.splitlines()[1:] == [
        f"link for respondents: {link}",
        f"embed snippet: {PUBLIC}/surveys/{DEMO['id']}/embed (HTML to paste into another site)",
        f"QR code of the link: {qr} (SVG, for printed notices)",
    ]
    # segno cannot decode; the file is exactly segno's rendering of the link, and valid SVG
    assert qr.read_text("utf-8") == qr_svg(link)
    assert qr_svg(link).startswith('<?xml version="1.0" encoding="utf-8"?>\n<svg xmlns=')
    assert f"<title>QR code of {link}</title>" in qr_svg(link)

    status, out, _ = call(capsys, run(initialised, "surveys"))
    assert status == 0
    assert f"  link:  {link}" in out
    assert f"  QR:    {PUBLIC}/surveys/{DEMO['id']}/qr.svg" in out
    row = next(line for line in out.splitlines() if line.startswith(DEMO["id"]))
    assert row.rstrip().endswith("just now")  # the table says times in words
    status, out, _ = call(capsys, run(initialised, "surveys", "--json"))
    (listed,) = json.loads(out)
    datetime.fromisoformat(listed["created_at"].replace("Z", "+00:00"))  # exact, for scripts
    assert listed["qr_url"] == f"{PUBLIC}/surveys/{DEMO['id']}/qr.svg"


def test_without_a_public_url_no_qr_code_is_written(initialised, capsys, monkeypatch) -> None:
    monkeypatch.delenv("DENIABLE_PUBLIC_URL", raising=False)
    definition = initialised["dir"] / "survey.json"
    definition.write_text(json.dumps(DEMO), "utf-8")
    qr = initialised["dir"] / "qr.svg"
    status, out, _ = call(
        capsys, run(initialised, "create-survey", str(definition), "--qr", str(qr))
    )
    assert status == 0
    assert "no QR code written: it needs the full link (DENIABLE_PUBLIC_URL)" in out
    assert not qr.exists()
    # `surveys` still says where the QR code is, as it says the link: under the public URL.
    status, out, _ = call(capsys, run(initialised, "surveys"))
    assert status == 0
    assert f"  QR:    <public URL>/surveys/{DEMO['id']}/qr.svg" in out


def test_the_inline_qr_code_is_an_image_with_a_name() -> None:
    svg = qr_inline("https://x.example/surveys/s/respond", 'Scan "this" <now>')
    assert svg.startswith('<svg role="img" aria-label="Scan &quot;this&quot; &lt;now&gt;" ')
    assert 'viewBox="0 0 ' in svg  # scales with its CSS box


def test_flush_relay_on_a_survey_that_is_not_relayed_is_a_usage_error(initialised, capsys) -> None:
    definition = initialised["dir"] / "survey.json"
    definition.write_text(json.dumps(DEMO), "utf-8")
    assert call(capsys, run(initialised, "create-survey", str(definition)))[0] == 0
    status, out, err = call(capsys, run(initialised, "close-survey", DEMO["id"], "--flush-relay"))
    assert status == 2 and out == ""
    assert "is not relayed: nothing to flush" in err


def test_a_missing_importer_is_one_line_with_status_5(initialised, capsys, monkeypatch) -> None:
    import builtins

    real = builtins.__import__

    def without_yaml(name, *args, **kwargs):
        if name == "yaml":
            raise ImportError("No module named 'yaml'", name="yaml")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_yaml)
    path = initialised["dir"] / "s.yaml"
    path.write_text("title: T\nquestions: []\n", encoding="utf-8")
    status, _, err = call(capsys, run(initialised, "create-survey", str(path)))
    assert status == 5
    assert err.strip() == (
        "deniable-aggregator: error: yaml is not installed; it comes with the server extra: "
        "pip install 'deniable[server]'"
    )


def test_a_relay_noise_law_that_misses_its_delta_is_refused(initialised, capsys) -> None:
    """As the API: create-survey verifies the signed noise law's exact delta (status 2)."""
    weak = {"epsilon": 1.0, "delta": 1e-6, "law": {"distribution": "binomial", "trials": 2}}
    # (as tests/relay/test_noise.py: two fair coins per value are far from delta 1e-6)
    path = initialised["dir"] / "weak.json"
    path.write_text(
        json.dumps(
            {
                "title": "Weak",
                "questions": [{"type": "yes_no", "text": "Smoke?"}],
                "relay": {"url": "http://127.0.0.1:9", "min_batch": 5, "noise": weak},
            }
        ),
        encoding="utf-8",
    )
    status, out, err = call(capsys, run(initialised, "create-survey", str(path)))
    assert status == 2 and out == ""
    assert "more than the signed" in err and len(err.splitlines()) == 1
