"""Settings: one table; defaults < DENIABLE_* environment < config; bad values fail early."""

from __future__ import annotations

import pytest

from deniable.aggregator import create_app, settings
from deniable.aggregator.settings import SETTINGS, SettingsError


def test_defaults_live_in_the_instance_folder(tmp_path):
    values = settings.load(environment={}, instance_path=tmp_path)
    assert values["DATABASE"] == str(tmp_path / "deniable.sqlite3")
    assert values["SIGNING_KEY_PATH"] == str(tmp_path / "signing_key.pem")
    assert values["MAX_BATCH"] == 1000
    assert set(values) == {setting.name for setting in SETTINGS}


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
    [("MAX_BATCH", "many"), ("MAX_BATCH", 0), ("MAX_BODY_BYTES", 1.5), ("MIGRATE", "perhaps"),
     ("DATABASE", "  "), ("RESULTS_CACHE_BYTES", -1), ("MAX_BATCH", True)],
)  # fmt: skip
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
