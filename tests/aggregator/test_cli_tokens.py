"""Token commands through the real CLI, on both backends: scoped operator tokens, and
enrolment tokens listed and revoked (a revoked token admits nothing; a spent one stays)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deniable.aggregator import create_app

from .conftest import assert_problem, demo_survey_dict, random_reports


def cli(home: Path, database: str, *args: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "DENIABLE_HOME": str(home), "DENIABLE_DATABASE": database}
    return subprocess.run(
        [sys.executable, "-m", "deniable.aggregator.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
        cwd=home.parent,
    )


@pytest.fixture
def prepared(tmp_path: Path, database: str) -> tuple[Path, str]:
    home = tmp_path / "home"
    assert cli(home, database, "init").returncode == 0
    for survey_id, gated in (("alpha", True), ("beta", False)):
        path = tmp_path / f"{survey_id}.json"
        path.write_text(json.dumps(demo_survey_dict(survey_id)))
        extra = ["--require-enrolment"] if gated else []
        assert cli(home, database, "create-survey", str(path), *extra).returncode == 0
    return home, database


def test_a_scoped_operator_token_cannot_touch_another_survey(prepared):
    home, database = prepared
    created = cli(home, database, "token", "create", "--label", "alpha team", "--survey", "alpha")
    assert created.returncode == 0, created.stderr
    scoped = created.stdout.strip()
    assert cli(home, database, "token", "create", "--survey", "nope").returncode == 3
    listed = json.loads(cli(home, database, "token", "list", "--json").stdout)
    assert [(t["label"], t["surveys"]) for t in listed] == [("alpha team", ["alpha"])]
    app = create_app({"DATABASE": database, "SIGNING_KEY_PATH": str(home / "signing_key.pem")})
    client = app.test_client()
    operator = {"Authorization": f"Bearer {scoped}"}
    assert client.get("/api/v1/surveys/alpha/export", headers=operator).status_code == 200
    body = assert_problem(client.get("/api/v1/surveys/beta/export", headers=operator), 403)
    assert "limited to surveys alpha" in body["detail"]
    assert_problem(client.post("/api/v1/surveys/beta/close", headers=operator), 403)
    assert_problem(
        client.post(
            "/api/v1/surveys", headers=operator, json={"definition": demo_survey_dict("gamma")}
        ),
        403,
    )
    assert client.post("/api/v1/surveys/alpha/close", headers=operator).status_code == 200
    app.extensions["deniable.storage"].close()


def test_enrolment_tokens_listed_and_revoked(prepared, tmp_path):
    home, database = prepared
    tokens_file = tmp_path / "tokens.txt"
    issued = cli(home, database, "token", "issue", "alpha", "--count", "4", "-o", str(tokens_file))
    assert issued.returncode == 0, issued.stderr
    tokens = tokens_file.read_text().split()
    app = create_app(
        {
            "DATABASE": database,
            "SIGNING_KEY_PATH": str(home / "signing_key.pem"),
            "RATE_LIMIT_PER_TOKEN": 0,
        }
    )
    client = app.test_client()

    def submit(token: str, seed: int):
        return client.post(
            "/api/v1/surveys/alpha/reports",
            headers={"X-Deniable-Enrolment": token},
            json={"reports": random_reports(demo_survey_dict("alpha"), 2, seed)},
        )

    assert submit(tokens[0], 0).status_code == 201  # spent
    listed = json.loads(cli(home, database, "token", "list", "--survey", "alpha", "--json").stdout)
    assert sorted(t["status"] for t in listed) == ["spent", "unspent", "unspent", "unspent"]
    listed_id = hashlib.sha256(tokens[1].encode()).hexdigest()[:16]
    assert listed_id in [t["id"] for t in listed if t["status"] == "unspent"]
    # Revoke one by listed id and one from a file of plaintexts (the spent one stays spent).
    leaked = tmp_path / "leaked.txt"
    leaked.write_text(f"{tokens[0]}\n{tokens[2]}\n")
    by_id = cli(home, database, "token", "revoke", "--survey", "alpha", listed_id)
    assert by_id.returncode == 0 and "revoked 1 " in by_id.stdout
    by_file = cli(
        home, database, "token", "revoke", "--survey", "alpha", "--tokens-file", str(leaked)
    )
    assert by_file.returncode == 0, by_file.stderr
    statuses = [
        t["status"]
        for t in json.loads(
            cli(home, database, "token", "list", "--survey", "alpha", "--json").stdout
        )
    ]
    assert sorted(statuses) == ["revoked", "revoked", "spent", "unspent"], statuses
    body = assert_problem(submit(tokens[1], 10), 403, "forbidden")
    assert "revoked" in body["detail"]
    assert submit(tokens[3], 11).status_code == 201  # the one left unspent still works
    assert submit(tokens[0], 0).status_code == 201  # the spent token's retry is still acknowledged
    everything = cli(home, database, "token", "revoke", "--survey", "alpha", "--unspent")
    assert everything.returncode == 0 and "revoked 0 " in everything.stdout
    # Errors: unknown survey 3, unknown id 3, nothing named 2.
    assert cli(home, database, "token", "list", "--survey", "nope").returncode == 3
    assert cli(home, database, "token", "revoke", "--survey", "alpha", "ffff0000").returncode == 3
    assert cli(home, database, "token", "revoke", "--survey", "alpha").returncode == 2
    assert cli(home, database, "token", "revoke", "99").returncode == 3
    app.extensions["deniable.storage"].close()
