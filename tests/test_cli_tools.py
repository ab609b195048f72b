"""``loopwright tools import`` against spec files and a real SQLite file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopwright.cli import app
from loopwright.store import repositories as repo
from loopwright.store.db import Database

FIXTURES = Path(__file__).parent / "tools" / "openapi" / "fixtures"
SWAGGER = FIXTURES / "swagger2.yaml"


@pytest.fixture
def db_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "lw.db"
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("LOOPWRIGHT_TOOL_ALLOW_HOSTS", raising=False)
    monkeypatch.setenv("LOOPWRIGHT_DB", str(path))
    monkeypatch.chdir(tmp_path)  # no stray loopwright.toml
    return path


async def _latest(path: Path, app_id: str) -> dict[str, Any]:
    db = Database(f"sqlite+aiosqlite:///{path}")
    try:
        async with db.transaction() as s:
            config = await repo.latest_config(s, app_id)
            assert config is not None
            return dict(config.config)
    finally:
        await db.close()


def test_check_lists_the_operations(db_path: Path) -> None:
    result = CliRunner().invoke(app, ["tools", "import", str(SWAGGER), "--check"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines == [
        "getPet\tGET /pets/{petId}\tGet a pet.",
        "pets_post\tPOST /pets\tAdd a pet.",
        "uploadPhoto\tPOST /pets/{petId}/photo\tPOST /pets/{petId}/photo",
    ]
    assert "3 operation(s)" in result.stderr
    assert not db_path.exists()  # --check touches no database


def test_include_narrows_the_list(db_path: Path) -> None:
    result = CliRunner().invoke(app, ["tools", "import", str(SWAGGER), "--check", "--include", "getPet"])
    assert result.exit_code == 0 and result.stdout.splitlines() == ["getPet\tGET /pets/{petId}\tGet a pet."]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([str(SWAGGER)], "give the app with --app APP_ID"),
        (["missing.yaml", "--check"], "spec file not found"),
        ([str(SWAGGER), "--check", "--auth-type", "oauth"], "unknown value 'oauth'"),
        ([str(SWAGGER), "--check", "--auth-type", "api_key_header"], "needs api_key or api_key_env"),
        ([str(SWAGGER), "--check", "--allow-host", "bad host"], "allow_hosts: not an IP address"),
        ([str(SWAGGER), "--check", "--include", "nope"], "no operation named 'nope'"),
        ([str(SWAGGER), "--app", "no-such-app"], "no app with id 'no-such-app'"),
    ],
)
def test_errors_are_one_clear_line(db_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["tools", "import", *args])
    assert result.exit_code == 1
    assert message in result.stderr and result.stderr.count("error:") == 1


def test_an_invalid_spec_names_the_path(db_path: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/x": {"get": {}}}})
    )
    result = CliRunner().invoke(app, ["tools", "import", str(bad), "--check"])
    assert result.exit_code == 1
    assert f"{bad}: invalid spec at $.paths./x.get" in result.stderr


def test_a_url_goes_through_the_guard(db_path: Path, no_network: Any) -> None:
    result = CliRunner().invoke(app, ["tools", "import", "http://169.254.169.254/openapi.json", "--check"])
    assert result.exit_code == 1 and "blocked request to 169.254.169.254: a cloud metadata" in result.stderr
    result = CliRunner().invoke(app, ["tools", "import", "http://127.0.0.1:9/openapi.json", "--check"])
    assert "blocked request to 127.0.0.1: a loopback address" in result.stderr
    assert no_network.blocked == []


def test_import_stores_the_toolset_on_the_app(db_path: Path) -> None:
    runner = CliRunner()
    made = runner.invoke(app, ["app", "create", "Pets", "--model", "local"])
    assert made.exit_code == 0, made.output
    app_id = made.stdout.strip()
    args = [
        "tools",
        "import",
        str(SWAGGER),
        "--app",
        app_id,
        "--auth-type",
        "api_key_query",
        "--api-key-env",
        "PK",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "added to app" in result.stderr
    again = runner.invoke(app, args)  # importing the same spec again replaces it
    assert again.exit_code == 0
    config = asyncio.run(_latest(db_path, app_id))
    assert config["toolsets"] == [
        {
            "type": "openapi",
            "spec": str(SWAGGER.resolve()),
            "auth_type": "api_key_query",
            "api_key_env": "PK",
            "api_key_header": "Authorization",
            "api_key_header_prefix": "custom",
            "api_key_query_param": "key",
            "allow_hosts": [],
            "connect_timeout": 10.0,
            "read_timeout": 60.0,
        }
    ]
