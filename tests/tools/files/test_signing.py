"""Signed tool-file URLs: Dify's exact signature, expiry, tampering, and the persisted key."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import stat
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from loopwright.tools.files import signing
from loopwright.tools.files.signing import load_secret, sign_url, signature, verify

SECRET = b"loopwright-test-secret"
FILE_ID = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
NONCE = "0123456789abcdef0123456789abcdef"
NOW = 1_700_000_000
# printf 'file-preview|<id>|1700000000|<nonce>' | openssl dgst -sha256 -hmac loopwright-test-secret -binary
#   | base64 | tr '+/' '-_'
OPENSSL_SIGN = "cN-ssTCL46kYA3PcHNePzW96K9XRb1qlvOhUu4Kk3xA="


def query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def test_signature_matches_an_openssl_known_answer() -> None:
    assert signature(FILE_ID, str(NOW), NONCE, SECRET) == OPENSSL_SIGN


def test_signature_is_dify_formula() -> None:
    message = f"file-preview|{FILE_ID}|123|n0nce".encode()
    expected = base64.urlsafe_b64encode(hmac.new(b"k", message, hashlib.sha256).digest()).decode()
    assert signature(FILE_ID, "123", "n0nce", b"k") == expected


def test_sign_url_has_difys_shape() -> None:
    url = sign_url(FILE_ID, ".png", secret=SECRET, base_url="https://files.example/", now=NOW, nonce=NONCE)
    assert url == (
        f"https://files.example/files/tools/{FILE_ID}.png?timestamp={NOW}&nonce={NONCE}&sign={OPENSSL_SIGN}"
    )
    relative = sign_url(FILE_ID, ".bin", secret=SECRET, now=NOW)
    assert relative.startswith(f"/files/tools/{FILE_ID}.bin?timestamp={NOW}&nonce=")
    q = query(relative)
    assert len(q["nonce"]) == 32 and int(q["nonce"], 16) >= 0  # 16 random bytes, hex, as Dify
    assert verify(FILE_ID, q["timestamp"], q["nonce"], q["sign"], secret=SECRET, now=NOW)


def test_nonces_differ() -> None:
    urls = {sign_url(FILE_ID, ".png", secret=SECRET, now=NOW) for _ in range(20)}
    assert len(urls) == 20


def test_verify_accepts_until_max_age_then_refuses() -> None:
    args = (FILE_ID, str(NOW), NONCE, OPENSSL_SIGN)
    assert verify(*args, secret=SECRET, now=NOW)
    assert verify(*args, secret=SECRET, now=NOW + 300)
    assert not verify(*args, secret=SECRET, now=NOW + 301)
    assert verify(*args, secret=SECRET, max_age=3600, now=NOW + 3600)
    assert not verify(*args, secret=SECRET, max_age=10, now=NOW + 11)


def test_verify_refuses_timestamps_far_in_the_future() -> None:
    future = NOW + 3600
    sign = signature(FILE_ID, str(future), NONCE, SECRET)
    assert not verify(FILE_ID, str(future), NONCE, sign, secret=SECRET, now=NOW)
    near = NOW + signing.CLOCK_SKEW
    assert verify(
        FILE_ID, str(near), NONCE, signature(FILE_ID, str(near), NONCE, SECRET), secret=SECRET, now=NOW
    )


@pytest.mark.parametrize(
    ("file_id", "timestamp", "nonce", "sign"),
    [
        ("3f2504e0-4f89-41d3-9a0c-0305e82c3302", str(NOW), NONCE, OPENSSL_SIGN),  # another file
        (FILE_ID, str(NOW + 1), NONCE, OPENSSL_SIGN),  # a later timestamp
        (FILE_ID, str(NOW), NONCE[:-1] + "0", OPENSSL_SIGN),  # another nonce
        (FILE_ID, str(NOW), NONCE, "A" + OPENSSL_SIGN[1:]),  # a changed sign
        (FILE_ID, str(NOW), NONCE, OPENSSL_SIGN[:-5] + "=" * 5),  # a truncated sign
        (FILE_ID, str(NOW), NONCE, ""),
        (FILE_ID, "", NONCE, OPENSSL_SIGN),
        (FILE_ID, str(NOW), "", OPENSSL_SIGN),
        (FILE_ID, f" {NOW}", NONCE, OPENSSL_SIGN),
        (FILE_ID, "1_700_000_000", NONCE, OPENSSL_SIGN),
        (FILE_ID, str(NOW), NONCE, "é" + OPENSSL_SIGN[1:]),  # non-ASCII must not raise
    ],
)
def test_verify_refuses_tampering(file_id: str, timestamp: str, nonce: str, sign: str) -> None:
    assert not verify(file_id, timestamp, nonce, sign, secret=SECRET, now=NOW + 1)


def test_verify_refuses_another_key() -> None:
    assert not verify(FILE_ID, str(NOW), NONCE, OPENSSL_SIGN, secret=b"other", now=NOW)


def test_verify_accepts_the_sign_without_padding() -> None:
    assert verify(FILE_ID, str(NOW), NONCE, OPENSSL_SIGN.rstrip("="), secret=SECRET, now=NOW)


def test_verify_compares_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(signing.hmac, "compare_digest", spy)
    assert verify(FILE_ID, str(NOW), NONCE, OPENSSL_SIGN, secret=SECRET, now=NOW)
    assert not verify(FILE_ID, str(NOW), NONCE, "x" * 44, secret=SECRET, now=NOW)
    # an expired URL still goes through the comparison (timing says nothing about the signature)
    assert not verify(FILE_ID, str(NOW), NONCE, OPENSSL_SIGN, secret=SECRET, now=NOW + 10_000)
    assert len(calls) == 3
    assert calls[0] == (OPENSSL_SIGN.rstrip("=").encode(), OPENSSL_SIGN.rstrip("=").encode())


def test_is_tool_file_id() -> None:
    assert signing.is_tool_file_id(FILE_ID)
    assert not signing.is_tool_file_id(FILE_ID.upper())
    assert not signing.is_tool_file_id(FILE_ID.replace("-", ""))
    assert not signing.is_tool_file_id("../" + FILE_ID)
    assert not signing.is_tool_file_id("")


# --- the key ---------------------------------------------------------------------------------------


def test_configured_key_is_used_as_is(tmp_path: Path) -> None:
    assert load_secret("configured key", tmp_path) == b"configured key"
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_generated_key_is_persisted_private_and_reused(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = load_secret(None, data_dir)
    path = data_dir / signing.SECRET_FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(first) >= 40  # 32 random bytes, urlsafe base64
    assert load_secret(None, data_dir) == first  # a restart signs with the same key
    assert load_secret("", data_dir) == first  # empty counts as unset
    assert path.read_text().strip().encode() == first
    assert [p.name for p in data_dir.iterdir()] == [signing.SECRET_FILE_NAME]  # no temp files left


def test_concurrent_first_starts_agree_on_one_key(tmp_path: Path) -> None:
    keys: list[bytes] = []
    barrier = threading.Barrier(8)

    def start() -> None:
        barrier.wait()
        keys.append(load_secret(None, tmp_path))

    threads = [threading.Thread(target=start) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(keys)) == 1 and len(keys) == 8
    assert sorted(os.listdir(tmp_path)) == [signing.SECRET_FILE_NAME]


def test_an_empty_key_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / signing.SECRET_FILE_NAME).write_text("\n")
    with pytest.raises(ValueError, match="empty"):
        load_secret(None, tmp_path)


def test_the_key_is_never_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")
    key = load_secret(None, tmp_path).decode()
    (tmp_path / signing.SECRET_FILE_NAME).chmod(0o644)
    assert load_secret(None, tmp_path).decode() == key
    assert "readable by other users" in caplog.text
    assert key not in caplog.text


def test_the_tool_file_id_is_read_back_from_our_urls_only() -> None:
    from loopwright.tools.files.signing import tool_file_of_url

    file_id = "3f1c2b4a-0d5e-4c6f-8a7b-9c0d1e2f3a4b"
    assert (
        tool_file_of_url(f"https://api.test/files/tools/{file_id}.pdf?timestamp=1&nonce=n&sign=s") == file_id
    )
    assert tool_file_of_url(f"/files/tools/{file_id}") == file_id
    assert tool_file_of_url(f"https://example.com/{file_id}.pdf") is None
    assert tool_file_of_url("/files/tools/not-an-id.png") is None
