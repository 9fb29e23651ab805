"""Settings: one table; defaults < DENIABLE_* environment < config; bad values fail early."""

from __future__ import annotations

import pytest

from deniable.aggregator import create_app, settings
from deniable.aggregator.settings import SETTINGS, SettingsError


def test_defaults_live_in_the_user_data_directory_never_in_the_install(tmp_path, monkeypatch):
    import sys
    from pathlib import Path

    import deniable

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    values = settings.load(environment={})
    home = tmp_path / "xdg" / "deniable"
    assert values["HOME"] == str(home)
    assert values["DATABASE"] == str(home / "deniable.sqlite3")
    assert values["SIGNING_KEY_PATH"] == str(home / "signing_key.pem")
    assert values["MAX_BATCH"] == 1000
    assert set(values) == {setting.name for setting in SETTINGS}
    monkeypatch.delenv("XDG_DATA_HOME")
    default = Path(settings.load(environment={})["HOME"])
    for install in (Path(sys.prefix), Path(deniable.__file__).parent.parent):
        assert not default.is_relative_to(install), (default, install)
    assert not home.exists()  # loading settings creates nothing


def test_deniable_home_moves_database_and_key(tmp_path):
    values = settings.load(environment={"DENIABLE_HOME": str(tmp_path / "srv")})
    assert values["DATABASE"] == str(tmp_path / "srv" / "deniable.sqlite3")
    assert values["SIGNING_KEY_PATH"] == str(tmp_path / "srv" / "signing_key.pem")
    sources = {
        r.setting.name: r.source
        for r in settings.resolve(
            {"MAX_BATCH": 5}, {"DENIABLE_HOME": "/srv"}, config_source="command line"
        )
    }
    assert sources["HOME"] == "DENIABLE_HOME" and sources["MAX_BATCH"] == "command line"
    assert sources["DATABASE"] == "default (in HOME)" and sources["MIGRATE"] == "default"


@pytest.mark.parametrize(
    ("given", "database"),
    [
        ("/srv/x.db", "/srv/x.db"),
        ("x.db", "x.db"),
        ("sqlite:///srv/x.db", "/srv/x.db"),
        ("sqlite:data/x.db", "data/x.db"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("postgres://u:p@h:5432/db", "postgres://u:p@h:5432/db"),
    ],
)
def test_documented_database_forms(given, database):
    assert settings.load({"DATABASE": given}, environment={})["DATABASE"] == database


@pytest.mark.parametrize(
    "given",
    [
        "mysql://u@h/db",
        "sqlite://host/x.db",
        "sqlite://",
        "sqlite:",
        "sqlite:///x.db?mode=ro",
        "http://example.org/db",
        "file:///srv/x.db",
    ],
)
def test_other_database_urls_are_refused(given):
    with pytest.raises(SettingsError, match="DATABASE"):
        settings.load({"DATABASE": given}, environment={})


def test_environment_then_config_override(tmp_path):
    environment = {"DENIABLE_MAX_BATCH": "50", "DENIABLE_DATABASE": "postgresql://x/y"}
    values = settings.load(environment=environment, instance_path=tmp_path)
    assert values["MAX_BATCH"] == 50 and values["DATABASE"] == "postgresql://x/y"
    values = settings.load({"MAX_BATCH": 7}, environment=environment, instance_path=tmp_path)
    assert values["MAX_BATCH"] == 7
    assert (
        settings.load({"MIGRATE": "off"}, environment={}, instance_path=tmp_path)["MIGRATE"]
        is False
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MAX_BATCH", "many"),
        ("MAX_BATCH", 0),
        ("MAX_BODY_BYTES", 1.5),
        ("MIGRATE", "perhaps"),
        ("DATABASE", "  "),
        ("RESULTS_CACHE_BYTES", -1),
        ("MAX_BATCH", True),
    ],
)
def test_invalid_settings_name_the_setting(tmp_path, name, value):
    with pytest.raises(SettingsError, match=name):
        settings.load({name: value}, environment={}, instance_path=tmp_path)


def test_environment_errors_name_the_variable(tmp_path):
    with pytest.raises(SettingsError, match="DENIABLE_MAX_BATCH"):
        settings.load(environment={"DENIABLE_MAX_BATCH": "x"}, instance_path=tmp_path)


def test_create_app_refuses_bad_settings(tmp_path):
    with pytest.raises(SettingsError):
        create_app({"DATABASE": str(tmp_path / "d.sqlite3"), "MAX_BATCH": "lots"})


def test_every_setting_is_described():
    text = settings.describe()
    for setting in SETTINGS:
        assert setting.environment_variable in text and setting.help


# -- credentials never shown -------------------------------------------

SECRET = "hunter2Zq"
CREDENTIAL_FORMS = [
    f"postgresql://app:{SECRET}@db.example:5432/deniable",
    f"postgres://app:{SECRET}@db.example/deniable?sslmode=require",
    f"postgresql://app@db.example/deniable?password={SECRET}",
    f"postgresql://db.example/deniable?sslmode=require&password={SECRET}&connect_timeout=5",
    f"postgresql://db.example/deniable?PASSWORD={SECRET}",
    f"postgresql://db.example/deniable?%70assword={SECRET}",  # libpq decodes the keyword
    f"postgresql://db.example/deniable?sslpassword={SECRET}&sslkey=/k.pem",
    f"postgresql://app:{SECRET}@h1.example:5432,h2.example:5433/deniable",
    f"postgresql://app:{SECRET[:4]}%40{SECRET[4:]}@db.example/deniable",
    f"postgresql://app:{SECRET}@[2001:db8::1]:5432/deniable",
    f"redis://:{SECRET}@cache.example:6379/0",
    f"redis://default:{SECRET}@cache.example:6379/0",
    f"rediss://cache.example:6380/0?password={SECRET}",
    f"redis://cache.example/0?username=app&password={SECRET}",
    f"redis+unix:///run/redis.sock?db=0&password={SECRET}",
    f"rediss://cache.example/0?ssl_password={SECRET}",
    f"host=db.example password={SECRET} dbname=deniable",
    f"host=db.example password = '{SECRET} x' dbname=deniable",
]


@pytest.mark.parametrize("value", CREDENTIAL_FORMS)
def test_every_credential_form_is_masked(value):
    shown = settings.mask_credentials(value)
    assert SECRET not in shown and SECRET[:4] not in shown and "***" in shown, shown
    assert shown.split("=")[0].split("@")[-1][:8] in value  # the rest stays readable
    assert ("db.example" in value) == ("db.example" in shown)


def test_values_without_credentials_are_shown_as_they_are():
    for value in (
        "/var/lib/deniable.sqlite3",
        "memory://",
        "redis://cache.example:6379/0",
        "postgresql://app@db.example/deniable?sslmode=require&passfile=/p",
    ):
        assert settings.mask_credentials(value) == value


def test_settings_command_and_redis_warnings_mask_query_passwords(tmp_path, caplog, capsys):
    from deniable.aggregator import cli
    from deniable.service.limits import Rate, RateLimits, open_limiter

    storage = f"redis://127.0.0.1:1/0?password={SECRET}"
    environment = {
        "DENIABLE_RATE_LIMIT_STORAGE": storage,
        "DENIABLE_DATABASE": f"postgresql://db.example/x?password={SECRET}",
    }
    with pytest.MonkeyPatch.context() as patch:
        for name, value in environment.items():
            patch.setenv(name, value)
        assert cli.main(["--data-dir", str(tmp_path), "settings", "--verbose"]) == 0
    out = capsys.readouterr().out
    assert SECRET not in out and "password=***" in out
    limits = RateLimits(
        per_address=Rate(5, 60.0), per_token=None, storage=storage, limiter=open_limiter(storage)
    )
    with caplog.at_level("WARNING", logger="deniable.service.limits"):
        limits.check_address("192.0.2.1")  # Redis does not answer: counted in memory
    assert caplog.records and SECRET not in caplog.text and "password=***" in caplog.text
