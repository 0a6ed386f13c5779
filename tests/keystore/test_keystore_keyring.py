"""Master keys: text forms, files with safe permissions, env precedence, subkey separation."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from keystore.errors import MissingKeyError
from keystore.keyring import (
    PURPOSE_LOOKUP,
    PURPOSE_PSEUDONYM,
    PURPOSE_WRAP,
    Keyring,
    derive_subkey,
    key_id_for,
)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def test_bare_key_gets_a_stable_derived_id() -> None:
    secret = os.urandom(32)
    a = Keyring.parse(_b64(secret))
    b = Keyring.parse(_b64(secret) + "\n")
    assert a.primary.key_id == b.primary.key_id == key_id_for(secret)
    assert Keyring.parse(_b64(os.urandom(32))).primary.key_id != a.primary.key_id


def test_several_entries_first_encrypts_all_decrypt() -> None:
    new, old = os.urandom(32), os.urandom(32)
    ring = Keyring.parse(f"new:{_b64(new)}, old:{_b64(old)}")
    assert ring.primary.key_id == "new"
    assert ring.key_ids == ("new", "old")
    assert ring.wrapping_key("old") != ring.wrapping_key("new")


def test_urlsafe_base64_is_accepted() -> None:
    secret = bytes(range(250, 256)) * 5 + b"\xfb\xff"
    ring = Keyring.parse("k1:" + base64.urlsafe_b64encode(secret).decode())
    assert ring.primary.secret == secret


@pytest.mark.parametrize(
    "text",
    [
        "",
        "  ",
        "not base64!!",
        _b64(b"short"),
        "a:" + _b64(b"x" * 31),
        f"a:{_b64(os.urandom(32))},a:{_b64(os.urandom(32))}",
        f"bad id:{_b64(os.urandom(32))}",
    ],
)
def test_bad_key_text_is_a_clear_error_without_key_material(text: str) -> None:
    with pytest.raises(MissingKeyError) as info:
        Keyring.parse(text)
    for piece in text.replace(",", ":").split(":"):
        if len(piece) > 8:
            assert piece not in str(info.value)


def test_unknown_key_id_is_missing_key() -> None:
    with pytest.raises(MissingKeyError) as info:
        Keyring.generate("one").wrapping_key("two")
    assert "two" in str(info.value)


def test_subkeys_differ_per_purpose() -> None:
    secret = os.urandom(32)
    keys = {derive_subkey(secret, p) for p in (PURPOSE_WRAP, PURPOSE_LOOKUP, PURPOSE_PSEUDONYM)}
    assert len(keys) == 3 and secret not in keys


def test_key_file_written_owner_only_and_read_back(tmp_path: Path) -> None:
    ring = Keyring.generate("a").merged_with(Keyring.generate("b"))
    path = ring.write_file(tmp_path / "sub" / "master.key")
    assert (path.stat().st_mode & 0o777) == 0o600
    again = Keyring.from_file(path)
    assert again.key_ids == ("a", "b")
    assert again.primary.secret == ring.primary.secret
    with pytest.raises(FileExistsError):
        ring.write_file(path)


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644, 0o620])
def test_key_file_readable_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    path = Keyring.generate().write_file(tmp_path / "master.key")
    path.chmod(mode)
    with pytest.raises(MissingKeyError, match="chmod 600"):
        Keyring.from_file(path)


def test_missing_file_and_missing_config(tmp_path: Path) -> None:
    with pytest.raises(MissingKeyError, match="does not exist"):
        Keyring.from_file(tmp_path / "nope.key")
    with pytest.raises(MissingKeyError, match="DEIDSTREAM_MASTER_KEY"):
        Keyring.from_env({})


def test_env_key_wins_over_key_file(tmp_path: Path) -> None:
    path = Keyring.generate("file").write_file(tmp_path / "k")
    env = {
        "DEIDSTREAM_MASTER_KEY": f"env:{_b64(os.urandom(32))}",
        "DEIDSTREAM_MASTER_KEY_FILE": str(path),
    }
    assert Keyring.from_env(env).primary.key_id == "env"
    assert Keyring.from_env({"DEIDSTREAM_MASTER_KEY_FILE": str(path)}).primary.key_id == "file"


def test_repr_shows_ids_not_secrets() -> None:
    ring = Keyring.generate("visible")
    assert "visible" in repr(ring)
    assert _b64(ring.primary.secret) not in repr(ring) + repr(ring.primary)
