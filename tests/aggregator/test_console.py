"""The operator's console: what the CLI and the dashboard tell the operator.

The link to send to respondents (``/surveys/<id>/respond``) and the embed snippet's
address are shown, absolute under ``DENIABLE_PUBLIC_URL``, wherever a survey is
created or listed.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from deniable.aggregator import cli

from .conftest import demo_survey_dict

PUBLIC = "https://surveys.example.org"


def _call(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        status = cli.main(argv)
    except SystemExit as exit_:
        status = exit_.code
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def options(tmp_path: Path, capsys, monkeypatch) -> list[str]:
    """The global options of an initialised aggregator, its public URL set."""
    monkeypatch.setenv("DENIABLE_PUBLIC_URL", PUBLIC)
    options = [
        "--database",
        str(tmp_path / "db.sqlite3"),
        "--signing-key",
        str(tmp_path / "key.pem"),
    ]
    status, _, err = _call(capsys, [*options, "init"])
    assert status == 0, err
    return options


def _create(capsys, options: list[str], tmp_path: Path, survey_id: str = "demo") -> str:
    definition = tmp_path / f"{survey_id}.json"
    definition.write_text(json.dumps(demo_survey_dict(survey_id)), "utf-8")
    status, out, err = _call(capsys, [*options, "create-survey", str(definition)])
    assert status == 0, err
    return out


def test_create_survey_prints_the_respondents_link(options, tmp_path, capsys) -> None:
    out = _create(capsys, options, tmp_path)
    assert f"link for respondents: {PUBLIC}/surveys/demo/respond" in out
    assert f"embed snippet: {PUBLIC}/surveys/demo/embed" in out


def test_create_survey_without_a_public_url_says_how_to_get_one(
    options, tmp_path, capsys, monkeypatch
) -> None:
    monkeypatch.delenv("DENIABLE_PUBLIC_URL")
    out = _create(capsys, options, tmp_path)
    assert "link for respondents: <public URL>/surveys/demo/respond" in out
    assert "DENIABLE_PUBLIC_URL" in out


def test_surveys_lists_the_respondents_link(options, tmp_path, capsys) -> None:
    _create(capsys, options, tmp_path)
    _create(capsys, options, tmp_path, "later")
    status, out, err = _call(capsys, [*options, "close-survey", "later"])
    assert status == 0, err
    status, out, err = _call(capsys, [*options, "surveys"])
    assert status == 0, err
    assert f"{PUBLIC}/surveys/demo/respond" in out
    assert "link for respondents" in out
    assert f"{PUBLIC}/surveys/later/respond" not in out  # closed: no longer answered
    status, out, _ = _call(capsys, [*options, "surveys", "--json"])
    rows = {row["id"]: row for row in json.loads(out)}
    assert rows["demo"]["respond_url"] == f"{PUBLIC}/surveys/demo/respond"
    assert rows["demo"]["embed_url"] == f"{PUBLIC}/surveys/demo/embed"
    assert rows["later"]["respond_url"] is None


@pytest.fixture
def public_app_config(app_config) -> dict:
    app_config["PUBLIC_URL"] = PUBLIC
    return app_config


def _links(html: str) -> set[str]:
    """The link texts shown, each pointing (relatively: pages link nowhere else) at its path."""
    shown = set()
    for href, text in re.findall(r'<a [^>]*href="([^"]+)"[^>]*>([^<]+)</a>', html):
        if text.startswith("http"):
            assert text.endswith(href), (href, text)
            shown.add(text)
    return shown


def test_dashboard_shows_the_respondents_link(public_app_config, client, created_survey) -> None:
    index = client.get("/").get_data(as_text=True)
    assert f"{PUBLIC}/surveys/demo/respond" in _links(index)
    page = client.get("/surveys/demo").get_data(as_text=True)
    assert f"{PUBLIC}/surveys/demo/respond" in _links(page)
    assert f"{PUBLIC}/surveys/demo/embed" in page
    assert 'href="/surveys/demo/embed"' in page
    assert "Link for respondents" in page


def test_dashboard_link_without_public_url_uses_the_request(client, created_survey) -> None:
    page = client.get("/surveys/demo", base_url="http://aggregator.test").get_data(as_text=True)
    assert "http://aggregator.test/surveys/demo/respond" in _links(page)


def test_dashboard_shows_no_link_for_a_closed_survey(
    public_app_config, client, created_survey, storage
) -> None:
    storage.close_survey("demo")
    page = client.get("/surveys/demo").get_data(as_text=True)
    assert f"{PUBLIC}/surveys/demo/respond" not in _links(page)
    index = client.get("/").get_data(as_text=True)
    assert f"{PUBLIC}/surveys/demo/respond" not in _links(index)


# -- closing a relayed survey ----------------------------------------------------------------

RELAY_URL = "https://relay.example.org"


def _create_relayed(capsys, options: list[str], tmp_path: Path) -> None:
    definition = {
        **demo_survey_dict("relayed"),
        "format": "deniable.survey/2",
        "relay": {"url": RELAY_URL, "min_batch": 25, "shuffle_unit": "question"},
    }
    path = tmp_path / "relayed.json"
    path.write_text(json.dumps(definition), "utf-8")
    status, _, err = _call(capsys, [*options, "create-survey", str(path)])
    assert status == 0, err


def _status(options: list[str], survey_id: str) -> str:
    from deniable.aggregator.storage import open_storage

    storage = open_storage({"DATABASE": options[1]})
    try:
        return storage.get_survey(survey_id, count=False).status
    finally:
        storage.close()


def test_closing_a_relayed_survey_warns_and_asks(options, tmp_path, capsys, monkeypatch) -> None:
    _create_relayed(capsys, options, tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    monkeypatch.setattr("sys.stdin.isatty", lambda: True, raising=False)
    status, out, err = _call(capsys, [*options, "close-survey", "relayed"])
    warning = out + err
    assert RELAY_URL in warning and "25" in warning  # where answers wait, and for how many
    assert "discard" in warning and "--yes" in warning
    assert status == 4 and _status(options, "relayed") == "open"  # answered no: kept open

    monkeypatch.setattr("sys.stdin", io.StringIO("yes\n"))
    monkeypatch.setattr("sys.stdin.isatty", lambda: True, raising=False)
    status, out, err = _call(capsys, [*options, "close-survey", "relayed"])
    assert status == 0 and "is closed" in out and _status(options, "relayed") == "closed"


def test_closing_a_relayed_survey_from_a_script_needs_yes(options, tmp_path, capsys, monkeypatch):
    _create_relayed(capsys, options, tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # not a terminal: nobody to ask
    status, out, err = _call(capsys, [*options, "close-survey", "relayed"])
    assert status == 4 and "--yes" in err and _status(options, "relayed") == "open"
    status, out, err = _call(capsys, [*options, "close-survey", "relayed", "--yes"])
    assert status == 0 and _status(options, "relayed") == "closed"
    assert "discard" in out + err  # what it did is still said


def test_closing_a_survey_without_a_relay_asks_nothing(options, tmp_path, capsys) -> None:
    _create(capsys, options, tmp_path)
    status, out, _ = _call(capsys, [*options, "close-survey", "demo"])
    assert status == 0 and "is closed" in out and "relay" not in out


# -- the survey page says how to read the charts once --------------------------------------


def test_the_explanation_of_the_whiskers_appears_once(client, created_survey, demo_definition):
    from .conftest import post_bulk, random_reports

    response = post_bulk(client, "demo", random_reports(demo_definition, 200, seed=3))
    assert response.status_code in (200, 201), response.data
    page = client.get("/surveys/demo").get_data(as_text=True)
    assert page.count("whatever the true answers are") == 1
    assert page.count("The intervals are about the people who answered") == 1
    assert page.count('class="chart') == len(demo_definition["questions"])


# -- a relayed survey offers only what it supports ---------------------------------------------


def test_a_relayed_survey_offers_no_crosstab_it_cannot_give(client, storage) -> None:
    from deniable.survey import Survey

    definition = {
        **demo_survey_dict("relayed"),
        "format": "deniable.survey/2",
        "relay": {"url": RELAY_URL, "min_batch": 25, "shuffle_unit": "question"},
    }
    storage.create_survey(Survey.from_dict(definition).upgraded(), results_public=True)
    page = client.get("/surveys/relayed").get_data(as_text=True)
    assert 'id="crosstab-link"' not in page
    assert "crosstabs are unavailable" in page.lower()
    crosstab = client.get("/surveys/relayed/crosstab").get_data(as_text=True)
    assert 'id="unavailable"' in crosstab
    assert 'class="pick"' not in crosstab  # no pickers for tables that cannot be drawn
    assert 'href="/surveys/relayed"' in crosstab  # the way back stays


# -- the ε page links back -----------------------------------------------------------------


def test_the_epsilon_page_links_back_to_its_survey(client) -> None:
    page = client.get("/about/epsilon?lang=de&survey=demo").get_data(as_text=True)
    assert '<a href="/surveys/demo/respond?lang=de">Zurück zur Umfrage</a>' in page
    page = client.get("/about/epsilon?survey=demo").get_data(as_text=True)
    assert '<a href="/surveys/demo/respond?lang=en">Back to the survey</a>' in page
    hostile = client.get('/about/epsilon?survey="><script>').get_data(as_text=True)
    assert "<script>" not in hostile and "Back to the survey" not in hostile
    assert '<a href="/">Home</a>' in hostile  # no survey to go back to: the home page
    alone = client.get("/about/epsilon?lang=de").get_data(as_text=True)
    assert '<a href="/">Startseite</a>' in alone


def test_the_form_links_to_the_epsilon_page_with_its_survey() -> None:
    from deniable.aggregator.respond import static_file

    script = static_file("respond.js").decode("utf-8")
    assert "/about/epsilon?lang=${lang}&survey=${encodeURIComponent(data.deniableSurvey)}" in script


# -- the crosstab command line -------------------------------------------------------------


def _crosstab_document(half: float) -> dict:
    cells = []
    for row, estimate in (("yes", -0.05), ("no", 1.05)):
        lower, upper = max(estimate - half, 0.0), min(estimate + half, 1.0)
        cells.append(
            {
                "row": row,
                "column": "car",
                "estimate": estimate,
                "clipped": min(max(estimate, 0.0), 1.0),
                "lower": lower,
                "upper": upper,
                "bernstein_lower": lower,
                "bernstein_upper": upper,
            }
        )
    return {
        "survey": "demo",
        "kind": "joint",
        "n": 12,
        "beta": 0.05,
        "tightest": "bernstein",
        "intervals": [
            {"family": "chebyshev", "nominal_half_width": 2 * half},
            {"family": "bernstein", "nominal_half_width": half},
        ],
        "rows": {
            "question": "smoker",
            "text": "Do you smoke?",
            "type": "yes_no",
            "labels": ["yes", "no"],
            "extras": [],
        },
        "columns": {
            "question": "transport",
            "text": "How do you travel?",
            "type": "single_choice",
            "labels": ["car"],
            "extras": [],
        },
        "cells": cells,
    }


def test_crosstab_table_prints_clipped_estimates_beside_clipped_intervals() -> None:
    from deniable.aggregator.cli_crosstab import crosstab_table

    text = crosstab_table(_crosstab_document(0.3))
    assert "0.0 [0.0, 25.0]" in text and "100.0 [75.0, 100.0]" in text
    assert "-5.0" not in text and "105.0" not in text
    raw = crosstab_table(_crosstab_document(0.3), raw=True)
    assert "-5.0 [0.0, 25.0]" in raw and "105.0" in raw


def test_crosstab_table_warns_about_few_respondents() -> None:
    from deniable.aggregator.cli_crosstab import crosstab_table

    assert "too few respondents" in crosstab_table(_crosstab_document(0.6)).lower()
    assert "few respondents" in crosstab_table(_crosstab_document(0.2)).lower()
    assert "few respondents" not in crosstab_table(_crosstab_document(0.04)).lower()


# -- the demo and the examples use the current survey format ---------------------------------


def test_the_demo_and_examples_use_the_current_survey_format() -> None:
    from deniable.aggregator.demo import demo_survey
    from deniable.survey import FORMAT

    assert demo_survey().format == FORMAT  # a relayed copy of it must be /2 too
    root = Path(cli.__file__).resolve().parents[1]
    for path in (root / "examples").rglob("*"):
        if path.is_file() and path.suffix in (".json", ".py", ".md", ".html", ".js"):
            assert "deniable.survey/1" not in path.read_text("utf-8"), path
