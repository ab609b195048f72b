"""ToolFiles: storing outputs, sidecar records, extension and type rules, data URLs, URLs, observations."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from loopwright.config import ConfigError, load_settings
from loopwright.tools.base import (
    BlobMessage,
    FileMessage,
    ImageMessage,
    JsonMessage,
    TextMessage,
    ToolContext,
)
from loopwright.tools.files import (
    LocalFileStorage,
    ToolFile,
    ToolFileError,
    ToolFiles,
    decode_data_url,
    extension_for,
    load_tool_files,
    observation_for,
    verify,
    with_file_observations,
)
from loopwright.tools.files.manager import clean_filename, human_size, mime_type_for

SECRET = b"manager-test-secret"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
CTX = ToolContext(user_id="alice", conversation_id="conv-1", app_id="app-1", message_id="msg-1")


@pytest.fixture
def files(tmp_path: Path) -> ToolFiles:
    return ToolFiles(LocalFileStorage(tmp_path / "tool-files"), SECRET, base_url="http://files.test", ttl=120)


def sidecar(tmp_path: Path, file: ToolFile) -> dict[str, object]:
    path = tmp_path / "tool-files" / file.id[:2] / f"{file.id}.json"
    data: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return data


# --- saving ------------------------------------------------------------------------------------------


async def test_blob_round_trip_with_record(files: ToolFiles, tmp_path: Path) -> None:
    file = await files.save_output(BlobMessage(b"%PDF-1.7 data", "application/pdf", "Q3 report.pdf"), CTX)
    assert (file.mime_type, file.size, file.extension, file.filename) == (
        "application/pdf",
        13,
        ".pdf",
        "Q3 report.pdf",
    )
    assert (file.user_id, file.conversation_id, file.app_id, file.message_id) == (
        "alice",
        "conv-1",
        "app-1",
        "msg-1",
    )
    assert file.remote_url is None and not file.is_image and file.name == "Q3 report.pdf"
    assert await files.get(file.id) == file
    assert await files.read(file) == b"%PDF-1.7 data"
    assert b"".join([c async for c in await files.open(file)]) == b"%PDF-1.7 data"
    record = sidecar(tmp_path, file)
    assert record["version"] == 1 and record["id"] == file.id and record["filename"] == "Q3 report.pdf"
    assert (tmp_path / "tool-files" / file.id[:2] / file.id).read_bytes() == b"%PDF-1.7 data"


async def test_ids_are_fresh_uuid4s(files: ToolFiles) -> None:
    import uuid

    ids = {(await files.save_bytes(b"x")).id for _ in range(5)}
    assert len(ids) == 5
    assert all(uuid.UUID(i).version == 4 and str(uuid.UUID(i)) == i for i in ids)


async def test_unnamed_file_is_named_after_its_id(files: ToolFiles) -> None:
    file = await files.save_bytes(PNG, mime_type="image/png")
    assert file.filename is None and file.name == f"{file.id}.png" and file.is_image


async def test_delete_removes_record_and_bytes(files: ToolFiles, tmp_path: Path) -> None:
    file = await files.save_bytes(b"bye")
    assert await files.delete(file.id) is True
    assert await files.get(file.id) is None
    assert await files.delete(file.id) is False
    assert await files.delete("../../etc/passwd") is False
    assert [p for p in (tmp_path / "tool-files").rglob("*") if p.is_file()] == []


async def test_get_refuses_non_ids_and_unreadable_records(files: ToolFiles, tmp_path: Path) -> None:
    assert await files.get("../secret_key") is None
    assert await files.get("3F2504E0-4F89-41D3-9A0C-0305E82C3301") is None
    assert await files.get("3f2504e0-4f89-41d3-9a0c-0305e82c3301") is None  # well formed, unknown
    file = await files.save_bytes(b"x")
    (tmp_path / "tool-files" / file.id[:2] / f"{file.id}.json").write_text("{not json")
    assert await files.get(file.id) is None


async def test_a_record_is_written_after_its_bytes(files: ToolFiles, tmp_path: Path) -> None:
    saved: list[str] = []
    storage = files.storage
    assert isinstance(storage, LocalFileStorage)
    real_save = storage.save

    async def recording(key: str, data: bytes) -> None:
        saved.append(key)
        await real_save(key, data)

    object.__setattr__(storage, "save", recording)
    file = await files.save_bytes(b"x")
    assert saved == [f"{file.id[:2]}/{file.id}", f"{file.id[:2]}/{file.id}.json"]


# --- extension and type rules ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mime", "filename", "ext"),
    [
        ("image/png", None, ".png"),
        ("image/jpeg", None, ".jpg"),
        ("application/pdf", None, ".pdf"),
        ("text/plain", None, ".txt"),
        ("application/octet-stream", None, ".bin"),
        ("application/x-made-up", None, ".bin"),
        ("image/png", "chart.PNG", ".png"),  # the filename's, lower-cased
        ("image/png", "chart.jpeg", ".jpeg"),  # the filename wins over the type
        ("application/pdf", "no-extension", ".pdf"),
        ("application/pdf", "x.averyveryverylongext", ".pdf"),  # > 10 characters: not an extension
        ("application/octet-stream", "x.tar.gz", ".gz"),
        ("application/octet-stream", "weird.ex!t", ".bin"),
    ],
)
def test_extension_rules(mime: str, filename: str | None, ext: str) -> None:
    assert extension_for(mime, filename) == ext


@pytest.mark.parametrize(
    ("declared", "filename", "expected"),
    [
        ("image/png", None, "image/png"),
        ("Image/PNG; charset=binary", None, "image/png"),
        ("application/octet-stream", "data.csv", "text/csv"),
        (None, "notes.pdf", "application/pdf"),
        ("application/octet-stream", None, "application/octet-stream"),
        ("text/html\r\nX-Evil: 1", None, "application/octet-stream"),  # never reaches a header
        ("nonsense", "a.unknownext", "application/octet-stream"),
    ],
)
def test_mime_type_rules(declared: str | None, filename: str | None, expected: str) -> None:
    assert mime_type_for(declared, filename) == expected


def test_filenames_are_cleaned() -> None:
    assert clean_filename("../../etc/passwd") == "passwd"
    assert clean_filename("C:\\Users\\x\\report.pdf") == "report.pdf"
    assert clean_filename("a\x00b\nc.txt") == "abc.txt"
    assert clean_filename("..") is None and clean_filename("dir/") is None and clean_filename(None) is None
    long = clean_filename("n" * 500 + ".pdf")
    assert long is not None and len(long) == 200 and long.endswith(".pdf")


# --- data URLs ---------------------------------------------------------------------------------------


def test_decode_data_urls() -> None:
    b64 = base64.b64encode(PNG).decode()
    assert decode_data_url(f"data:image/png;base64,{b64}") == ("image/png", PNG)
    assert decode_data_url(f"DATA:image/png;BASE64,{b64.rstrip('=')}") == ("image/png", PNG)  # no padding
    urlsafe = base64.urlsafe_b64encode(PNG).decode()
    assert decode_data_url(f"data:image/png;base64,{urlsafe}") == ("image/png", PNG)
    wrapped = "\n".join(b64[i : i + 76] for i in range(0, len(b64), 76))
    assert decode_data_url(f"data:image/png;base64,{wrapped}")[1] == PNG
    assert decode_data_url(f"data:image/png;base64,{quote(b64)}")[1] == PNG  # percent-encoded
    assert decode_data_url("data:,Hello%2C%20World") == ("text/plain", b"Hello, World")
    assert decode_data_url("data:text/csv;charset=utf-8,a,b%0A1,2") == ("text/csv", b"a,b\n1,2")


@pytest.mark.parametrize("url", ["data:image/png;base64", "data:image/png;base64,@@@@", "data:;base64,abc$"])
def test_broken_data_urls(url: str) -> None:
    with pytest.raises(ToolFileError):
        decode_data_url(url)


async def test_image_data_url_is_stored(files: ToolFiles) -> None:
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    file = await files.save_output(ImageMessage(url), CTX)
    assert (file.mime_type, file.extension, file.size) == ("image/png", ".png", len(PNG))
    assert await files.read(file) == PNG


async def test_file_data_url_takes_the_declared_type_unless_generic(files: ToolFiles) -> None:
    csv = "data:text/csv,a%2Cb"
    generic = await files.save_output(FileMessage(csv, filename="t.csv"), CTX)
    assert (generic.mime_type, generic.filename, generic.extension) == ("text/csv", "t.csv", ".csv")
    declared = await files.save_output(FileMessage(csv, mime_type="text/plain"), CTX)
    assert declared.mime_type == "text/plain" and await files.read(declared) == b"a,b"


# --- URLs that are not data ------------------------------------------------------------------------


async def test_http_urls_stay_links_and_are_not_fetched(files: ToolFiles, tmp_path: Path) -> None:
    # Nothing listens on this port: a fetch would fail the test (and conftest blocks other hosts).
    image = await files.save_output(ImageMessage("http://127.0.0.1:9/charts/q3%20sales.png"), CTX)
    assert image.remote_url == "http://127.0.0.1:9/charts/q3%20sales.png"
    assert (image.size, image.mime_type, image.filename, image.extension) == (
        None,
        "image/png",
        "q3 sales.png",
        ".png",
    )
    assert files.url_for(image) == image.remote_url
    assert await files.get(image.id) is None  # nothing stored
    anonymous = await files.save_output(ImageMessage("https://img.example/render?id=7"), CTX)
    assert anonymous.mime_type == "image/png" and anonymous.filename == "render"
    doc = await files.save_output(FileMessage("https://docs.example/a.pdf", filename="Annual.pdf"), CTX)
    assert (doc.mime_type, doc.name) == ("application/pdf", "Annual.pdf")
    assert not (tmp_path / "tool-files").exists()


async def test_own_tool_file_urls_give_the_existing_file(files: ToolFiles) -> None:
    stored = await files.save_bytes(PNG, mime_type="image/png", ctx=CTX)
    signed = files.url_for(stored)
    assert await files.save_output(ImageMessage(signed), CTX) == stored
    relative = f"/files/tools/{stored.id}.png"
    assert await files.save_output(FileMessage(relative), CTX) == stored
    with pytest.raises(ToolFileError, match="no such tool file"):
        await files.save_output(FileMessage("/files/tools/3f2504e0-4f89-41d3-9a0c-0305e82c3301.png"), CTX)


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://host/x.png", "relative/path.png", "javascript:alert(1)", "C:\\x.png"]
)
async def test_other_urls_are_refused(files: ToolFiles, url: str) -> None:
    with pytest.raises(ToolFileError, match="unsupported file URL|no such tool file"):
        await files.save_output(FileMessage(url), CTX)


# --- store_outputs, URLs, observations --------------------------------------------------------------


async def test_store_outputs_in_order_with_urls_and_observations(files: ToolFiles) -> None:
    outputs = [
        TextMessage("here you go"),
        BlobMessage(PNG, "image/png", "chart.png"),
        JsonMessage({"a": 1}),
        BlobMessage(b"\x00\x01binary", "application/octet-stream", "dump.bin"),
        ImageMessage("data:image/png;base64,***"),
        FileMessage("https://example.com/a.pdf"),
    ]
    stored = await files.store_outputs(outputs, CTX)
    assert [s.output for s in stored] == [outputs[1], outputs[3], outputs[4], outputs[5]]
    chart, dump, broken, remote = stored
    assert chart.file is not None and chart.file.filename == "chart.png"
    assert dump.file is not None and dump.file.mime_type == "application/octet-stream"
    assert broken.file is None and broken.url == "" and "does not decode" in broken.observation
    assert remote.file is not None and remote.url == "https://example.com/a.pdf"
    for item in (chart, dump):
        assert item.file is not None
        assert item.url.startswith(f"http://files.test/files/tools/{item.file.id}{item.file.extension}?")
        q = {k: v[0] for k, v in parse_qs(urlsplit(item.url).query).items()}
        assert verify(item.file.id, q["timestamp"], q["nonce"], q["sign"], secret=SECRET)
        assert files.verify(item.file.id, q["timestamp"], q["nonce"], q["sign"])
        assert item.observation == observation_for(item.file, item.url)
    assert '"dump.bin" (application/octet-stream, 8 bytes)' in dump.observation
    assert dump.url in dump.observation


async def test_store_outputs_with_no_files(files: ToolFiles) -> None:
    assert await files.store_outputs([TextMessage("x")], CTX) == []


async def test_url_ttl_and_base_override(files: ToolFiles) -> None:
    file = await files.save_bytes(b"x", mime_type="text/plain")
    url = files.url_for(file, base_url="", now=1_000_000)
    assert url.startswith(f"/files/tools/{file.id}.txt?timestamp=1000000&")
    q = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert files.verify(file.id, q["timestamp"], q["nonce"], q["sign"], now=1_000_120)
    assert not files.verify(file.id, q["timestamp"], q["nonce"], q["sign"], now=1_000_121)  # ttl=120


def test_observation_text() -> None:
    image = ToolFile("i", "image/png", 2048, ".png", "chart.png", 0)
    assert observation_for(image, "http://x/files/tools/i.png?s=1") == (
        'The image "chart.png" (image/png, 2.0 KB) has been created and sent to the user; you do not need '
        "to create it again, just tell the user to check it. URL: http://x/files/tools/i.png?s=1"
    )
    remote = ToolFile("r", "application/pdf", None, ".pdf", "a.pdf", 0, remote_url="https://e/a.pdf")
    assert observation_for(remote, "https://e/a.pdf").startswith(
        'The file "a.pdf" (application/pdf) has been'
    )
    assert human_size(5) == "5 bytes" and human_size(3 * 1024 * 1024) == "3.0 MB"


def test_the_secret_is_not_in_repr(files: ToolFiles) -> None:
    assert SECRET.decode() not in repr(files)


# --- from settings -----------------------------------------------------------------------------------


async def test_from_settings_with_a_configured_key(tmp_path: Path) -> None:
    env = {
        "LOOPWRIGHT_SECRET_KEY": "from-env",
        "LOOPWRIGHT_FILES_URL": "https://api.example/",
        "LOOPWRIGHT_FILES_URL_TTL": "60",
    }
    settings = load_settings(env, path=None)
    assert "from-env" not in repr(settings)
    files = await load_tool_files(settings, tmp_path)
    assert (files.secret, files.base_url, files.ttl) == (b"from-env", "https://api.example", 60)
    assert isinstance(files.storage, LocalFileStorage) and files.storage.root == tmp_path / "tool-files"
    assert not (tmp_path / "secret_key").exists()


async def test_from_settings_defaults_make_and_keep_a_key(tmp_path: Path) -> None:
    settings = load_settings({}, path=None)
    assert (settings.secret_key, settings.files_url, settings.files_url_ttl) == (None, "", 300)
    first = await load_tool_files(settings, tmp_path)
    second = await load_tool_files(settings, tmp_path)
    assert first.secret == second.secret and (tmp_path / "secret_key").is_file()
    file = await first.save_bytes(b"x")
    q = {k: v[0] for k, v in parse_qs(urlsplit(first.url_for(file)).query).items()}
    assert second.verify(file.id, q["timestamp"], q["nonce"], q["sign"])  # survives a "restart"


def test_settings_from_toml(tmp_path: Path) -> None:
    toml = tmp_path / "lw.toml"
    toml.write_text('secret_key = "k"\nfiles_url = "http://h:5001"\nfiles_url_ttl = 900\n')
    settings = load_settings({}, path=toml)
    assert settings.secret_key is not None and settings.secret_key.get_secret_value() == "k"
    assert (settings.files_url, settings.files_url_ttl) == ("http://h:5001", 900)


@pytest.mark.parametrize("ttl", ["0", "-5", "ten", "1.5"])
def test_bad_ttl_is_a_config_error(ttl: str) -> None:
    with pytest.raises(ConfigError, match="files_url_ttl"):
        load_settings({"LOOPWRIGHT_FILES_URL_TTL": ttl}, path=None)


def test_bad_ttl_in_toml(tmp_path: Path) -> None:
    toml = tmp_path / "lw.toml"
    toml.write_text('files_url_ttl = "300"\n')
    with pytest.raises(ConfigError, match="files_url_ttl must be an integer"):
        load_settings({}, path=toml)


async def test_with_file_observations_feeds_the_engines_rendering(files: ToolFiles) -> None:
    from loopwright.tools.engine import render_observation

    outputs = [
        TextMessage("Done."),
        BlobMessage(b"a,b", "text/csv", "t.csv"),
        BlobMessage(b"a,b", "text/csv", "t.csv"),  # equal to the one before, still its own file
        JsonMessage({"rows": 1}),
    ]
    stored = await files.store_outputs(outputs, CTX)
    replaced = with_file_observations(outputs, stored)
    assert replaced[0] is outputs[0] and replaced[3] is outputs[3]
    assert replaced[1] == TextMessage("\n" + stored[0].observation + "\n")  # on a line of its own
    assert replaced[2] == TextMessage(stored[1].observation + "\n")
    assert stored[0].url != stored[1].url
    text = render_observation(replaced)
    assert text.startswith('Done.\nThe file "t.csv" (text/csv, 3 bytes)')
    assert stored[0].url + "\n" in text and stored[1].url + "\n" in text and text.endswith('{"rows": 1}')
    with pytest.raises(ValueError, match="do not match"):
        with_file_observations(outputs, stored[:1])
