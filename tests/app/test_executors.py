"""Choosing the executor (app.run.executors): the setting, its check, and a clear error for the durable
executor without its extra."""

from __future__ import annotations

import importlib.util

import pytest
from typer.testing import CliRunner

from loopwright.app.run import executors
from loopwright.cli import app
from loopwright.config import ConfigError, load_settings


def test_the_executor_setting() -> None:
    assert load_settings(env={}).executor == "in-process"
    assert load_settings(env={"LOOPWRIGHT_EXECUTOR": "durable"}).executor == "durable"
    with pytest.raises(ConfigError, match="LOOPWRIGHT_EXECUTOR"):
        load_settings(env={"LOOPWRIGHT_EXECUTOR": "fast"})


def test_the_durable_executor_without_its_extra_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    executors.check_executor("in-process")
    with pytest.raises(ConfigError, match="unknown executor 'fast'"):
        executors.check_executor("fast")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "dbos" else real(name, *a)
    )
    with pytest.raises(ConfigError, match=r"pip install 'loopwright\[durable\]'"):
        executors.check_executor("durable")
    result = CliRunner().invoke(app, ["serve", "--executor", "durable"])
    assert result.exit_code == 2 and "loopwright[durable]" in result.output
