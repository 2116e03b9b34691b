"""``enzh keys add|list|remove``: the round trip, hashes only in the store, and the errors."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat

import pytest

from enzh.cli.main import main
from enzh.serve import keys as keys_module
from enzh.serve.keys import KeyStore, new_key


def keys(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["keys", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_add_list_remove_round_trip(tmp_path, capsys):
    db = str(tmp_path / "sub" / "keys.db")
    code, out, err = keys(capsys, "add", "--db", db, "--name", "weblate", "--req-limit", "30", "--char-limit", "0")
    assert code == 0 and "only its hash" in err
    first = out.strip()
    assert len(first) >= 40 and "\n" not in first
    code, out, _ = keys(capsys, "add", "--db", db, "--name", "mastodon")
    second = out.strip()
    assert code == 0 and second != first

    code, out, _ = keys(capsys, "list", "--db", db)
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == 2
    assert first not in out and second not in out  # never shown again
    weblate = next(line for line in lines if line.endswith("weblate"))
    assert "req/min=30" in weblate and "chars/min=none" in weblate
    mastodon = next(line for line in lines if line.endswith("mastodon"))
    assert "req/min=default" in mastodon and "chars/min=default" in mastodon
    assert weblate.split()[0] == hashlib.sha256(first.encode()).hexdigest()[:12]  # the id: the hash's start

    with KeyStore(db) as store:
        record = store.lookup(first)
        assert record is not None and record.name == "weblate" and record.req_limit == 30 and record.char_limit == 0
        assert store.lookup("not a key") is None

    code, out, _ = keys(capsys, "remove", "--db", db, first)  # by the key itself
    assert code == 0 and "weblate" in out and first not in out
    code, out, _ = keys(capsys, "remove", "--db", db, mastodon.split()[0])  # by its id
    assert code == 0 and "mastodon" in out
    code, out, _ = keys(capsys, "list", "--db", db)
    assert code == 0 and out.strip() == "There are no API keys"


def test_the_store_holds_hashes_only_and_only_its_owner_reads_it(tmp_path, capsys):
    db = tmp_path / "keys.db"
    _, out, _ = keys(capsys, "add", "--db", str(db), "--key", "my-own-secret-key-123", "--name", "moved")
    assert out.strip() == "my-own-secret-key-123"
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o600
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT * FROM api_keys").fetchall()
    assert rows and all("my-own-secret-key-123" not in str(value) for row in rows for value in row)
    for path in tmp_path.iterdir():  # nor in the WAL or anything SQLite wrote beside it
        assert b"my-own-secret-key-123" not in path.read_bytes()
    assert rows[0][0] == hashlib.sha256(b"my-own-secret-key-123").hexdigest()


def test_a_new_key_never_starts_with_a_dash_and_one_that_does_is_removed_after_two_dashes(
    tmp_path, capsys, monkeypatch
):
    draws = iter(["-starts-with-a-dash-" + "a" * 23, "Bstarts-with-a-letter-" + "b" * 21])
    monkeypatch.setattr(keys_module.secrets, "token_urlsafe", lambda nbytes: next(draws))
    assert (
        new_key() == "Bstarts-with-a-letter-" + "b" * 21
    )  # the first draw, which a shell would take for a flag, redrawn

    db = str(tmp_path / "keys.db")
    keys(capsys, "add", "--db", db, "--key=-moved-key-with-a-dash", "--name", "moved")
    code, out, _ = keys(capsys, "remove", "--db", db, "--", "-moved-key-with-a-dash")
    assert code == 0 and out.strip().endswith("moved")


def test_remove_by_name_and_errors(tmp_path, capsys):
    db = str(tmp_path / "keys.db")
    assert keys(capsys, "list", "--db", db)[0] == 2  # no store: an error, nothing created
    assert not os.path.exists(db)
    for _ in range(2):
        keys(capsys, "add", "--db", db, "--name", "team")
    keys(capsys, "add", "--db", db, "--name", "other")
    code, out, _ = keys(capsys, "remove", "--db", db, "--name", "team")
    assert code == 0 and out.count("team") == 2
    code, _, err = keys(capsys, "remove", "--db", db, "--name", "team")
    assert code == 1 and "no key is named" in err
    code, _, err = keys(capsys, "remove", "--db", db, "no-such-key")
    assert code == 1 and "no such key" in err and "no-such-key" not in err
    assert keys(capsys, "remove", "--db", db)[0] == 2  # neither a key nor --name
    code, _, err = keys(capsys, "add", "--db", db, "--req-limit", "-1")
    assert code == 2 and "req_limit" in err
    assert keys(capsys, "list", "--db", db)[1].strip().endswith("other")


def test_a_file_that_is_not_a_store_is_refused(tmp_path, capsys):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello, not SQLite\n" * 100)
    code, _, err = keys(capsys, "list", "--db", str(bad))
    assert code == 2 and "not an enzh API key store" in err
