"""The data directory (service/datadir.py): created 0700 whatever the umask; a directory
others may write in, a database others may read, a planted lock-file symlink and a key
owned by another user are all refused with one clear line (hardening)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from deniable.aggregator import cli, signing
from deniable.aggregator.settings import SettingsError
from deniable.aggregator.storage import open_storage
from deniable.errors import DeniableError

DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


@contextlib.contextmanager
def umask(mask: int):
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def migrated(database: Path) -> None:
    storage = open_storage({"DATABASE": str(database)})
    try:
        storage.migrate()
    finally:
        storage.close()


@pytest.mark.parametrize("mask", [0o000, 0o022, 0o002])
def test_directories_are_created_0700_whatever_the_umask(tmp_path, mask):
    with umask(mask):
        migrated(tmp_path / "a" / "b" / "deniable.sqlite3")
        signing.create_key(tmp_path / "k" / "l" / "signing_key.pem")
    for directory in ("a", "a/b", "k", "k/l"):
        assert mode(tmp_path / directory) == 0o700, directory
    assert mode(tmp_path / "a" / "b" / "deniable.sqlite3") == 0o600
    assert mode(tmp_path / "a" / "b" / "deniable.sqlite3.write-lock") == 0o600
    assert mode(tmp_path / "k" / "l" / "signing_key.pem") == 0o600


@pytest.mark.parametrize("directory_mode", [0o770, 0o707, 0o777, 0o1777])
def test_a_directory_others_may_write_in_is_refused(tmp_path, capsys, directory_mode):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(directory_mode)
    with pytest.raises(SettingsError, match=r"chmod go-w"):
        migrated(shared / "deniable.sqlite3")
    with pytest.raises(SettingsError, match=r"chmod go-w"):
        signing.create_key(shared / "signing_key.pem")
    assert not list(shared.iterdir())  # nothing was created there
    assert cli.main(["--data-dir", str(shared), "init"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("deniable-aggregator: error:") and str(shared) in line


def test_a_database_others_can_read_is_refused_like_a_readable_key(tmp_path):
    database = tmp_path / "deniable.sqlite3"
    migrated(database)
    database.chmod(0o644)
    with pytest.raises(DeniableError, match=r"chmod 600"):
        migrated(database)
    database.chmod(0o600)
    migrated(database)
    wal = tmp_path / "deniable.sqlite3-wal"
    wal.touch()
    wal.chmod(0o644)
    with pytest.raises(DeniableError, match=r"-wal.*chmod 600"):
        migrated(database)


def test_a_symlink_planted_as_the_lock_file_is_not_followed(tmp_path):
    migrated(tmp_path / "deniable.sqlite3")
    lock = tmp_path / "deniable.sqlite3.write-lock"
    lock.unlink()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    victim.chmod(0o644)
    lock.symlink_to(victim)
    with pytest.raises(DeniableError, match=r"symbolic link"):
        migrated(tmp_path / "deniable.sqlite3")
    assert victim.read_text() == "precious\n" and mode(victim) == 0o644


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_a_signing_key_owned_by_another_user_is_refused(tmp_path):
    key = tmp_path / "signing_key.pem"
    signing.create_key(key)
    signing.load_key(key)
    os.chown(key, 65534, 65534)
    with pytest.raises(SettingsError, match=r"owned by another user"):
        signing.load_key(key)


@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="the sqlite3 shell is not installed")
def test_the_documented_backup_recipe_makes_files_the_server_accepts(tmp_path):
    """Run docs/operations.md's SQLite backup and restore commands as written."""
    text = DOCS.read_text()
    section = text[text.index("## Backup and restore") :]
    (script,) = re.findall(r"```bash\n(.*?)```", section, re.S)[:1]
    source, backup = tmp_path / "srv", tmp_path / "backup"
    migrated(source / "deniable.sqlite3")
    signing.create_key(source / "signing_key.pem")
    (source / "signing_key.chain.json").write_text('{"chain": []}\n')
    backup.mkdir(mode=0o700)
    script = (
        script.replace("/srv/deniable", str(source))
        .replace("/backup", str(backup))
        .replace("$(date +%F)", "today")
    )
    script = "\n".join(line for line in script.splitlines() if not line.startswith("#"))
    subprocess.run(["bash", "-euc", "umask 022\n" + script], check=True, cwd=tmp_path)
    restore = re.search(r"```bash\n# restore\n(.*?)```", section, re.S)
    assert restore, "docs/operations.md shows the restore commands"
    target = tmp_path / "restored"
    target.mkdir(mode=0o700)
    commands = (
        restore[1]
        .replace("/srv/deniable", str(target))
        .replace("/backup", str(backup))
        .replace("YYYY-MM-DD", "today")
    )
    subprocess.run(["bash", "-euc", "umask 022\n" + commands], check=True, cwd=tmp_path)
    migrated(target / "deniable.sqlite3")  # accepted: not readable by others
    signing.load_key(target / "signing_key.pem")


def test_a_running_server_that_meets_a_readable_database_answers_503(tmp_path):
    from deniable.aggregator import create_app

    from .conftest import assert_problem

    app = create_app(
        {
            "DATABASE": str(tmp_path / "deniable.sqlite3"),
            "SIGNING_KEY_PATH": str(tmp_path / "signing_key.pem"),
        }
    )
    storage = app.extensions["deniable.storage"]
    try:
        assert app.test_client().get("/api/v1/surveys").status_code == 200
        (tmp_path / "deniable.sqlite3").chmod(0o644)
        storage.close()  # the next request opens the file again
        assert_problem(app.test_client().get("/api/v1/surveys"), 503, "storage-unavailable")
    finally:
        storage.close()
