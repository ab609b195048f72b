"""Choosing the action of a ReAct reply by the model's own probabilities.

``choose_by_question`` (what the embedded model uses when the round asks the user's question) turns
the choice around ("noisy channel", Min et al. 2022): instead of how likely the words "Tool needed:
calculator." are after the question, how likely the question is after a short text about each tool
(its description and the questions of its worked examples) — a few dozen tokens of evidence per
option instead of one or two, which a 135M-parameter model reads far more reliably. It too is
calibrated: each option's score for the neutral question "N/A" is subtracted, so a tool with many
examples (whose text makes any question likelier) gains nothing from that alone.

The older procedure, kept for rounds that are not the user's question:
With ``tool_choice="auto"`` the grammar lets a reply open with "Tool needed: <tool>." for any offered
tool or "Tool needed: none.". Greedy decoding settles that on the first token where the options
differ, where a small model's prior for the short, common "none" outweighs its reading of the
question. Here each option is scored whole — the log-probability of its tokens after the prompt —
and, when a neutral prompt is given (the same prompt with the question replaced by "N/A"), calibrated
by subtracting the option's score there ("contextual calibration", Zhao et al. 2021): what counts is
how much the question itself moves the model toward an option. Nothing looks at the question's words;
the model's own probabilities decide.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from loopwright.model.prompt_cache import KvSnapshot


def choose(llama: Any, prompt: str, options: Sequence[tuple[str, str]], neutral: str | None = None) -> str:
    """The key of the best option; ``options`` are ``(key, text that follows the prompt)``."""
    scores = score(llama, prompt, options)
    if neutral is not None:
        prior = _prior(llama, neutral, options)
        scores = {k: v - CALIBRATION * prior[k] for k, v in scores.items()}
    return max(scores, key=scores.__getitem__)


# How much of the neutral prompt's preference is removed. On bench/eval_local_tools.py with the
# default model: 0 (greedy) selects the right tool for 62 % of the questions, 0.5 for 46 %, 0.75 for
# 67 % (42 % with valid arguments), 1 for 67 % (38 %; greetings start calling tools).
CALIBRATION = 0.75

_priors: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, float]] = {}


def choose_by_question(
    llama: Any,
    contexts: Sequence[tuple[str, str]],
    question: str,
    neutral: str = "N/A",
    in_time: Callable[[], bool] = lambda: True,
    prime: Callable[[list[int]], object] | None = None,
) -> str:
    """The key of the context after which ``question`` is likeliest, relative to ``neutral``;
    ``contexts`` are ``(key, prompt text that the question follows)``. Once ``in_time()`` is false
    (the run's budget is spent) no further context is scored: the best so far, or the last key
    (``none``, by the caller's order) if none was. ``prime``, when given, makes the context hold a
    context's tokens but its last (``prompt_cache.ContextStates``: kept from an earlier run), so
    only that token and the question are evaluated."""
    # The contexts take the model's context window from its start; what it held (the system prompt
    # of the conversation, which the reply after this choice reuses) is put back afterwards: copying
    # it is several times faster than evaluating a thousand tokens again.
    saved = KvSnapshot.take(llama) if llama.n_tokens > _WORTH_SAVING else None
    scores: dict[str, float] = {}
    try:
        for key, context in contexts:
            if not in_time():
                break
            if prime is not None:
                prime(llama.tokenize(context.encode(), add_bos=False, special=True)[:-1])
            evidence = score(llama, context, [("question", question + "\n"), ("neutral", neutral + "\n")])
            scores[key] = evidence["question"] - QUESTION_CALIBRATION * evidence["neutral"]
    finally:
        if saved is not None:
            saved.restore(llama)
    if not scores:
        return contexts[-1][0]
    return max(scores, key=scores.__getitem__)


_WORTH_SAVING = 256  # tokens


# On bench/eval_local_phrasings.py (40 questions, calculator and current_time) the choice is right for
# 34 without calibration and 39 with it; on bench/eval_local_tools.py (26 questions, 12 tools, most
# without worked examples) 14 and 20. The contexts stand alone: after the conversation's system
# prompt (which would share its evaluation) the choice was right for 30 of the 40.
QUESTION_CALIBRATION = 1.0


def _prior(llama: Any, neutral: str, options: Sequence[tuple[str, str]]) -> dict[str, float]:
    key = (neutral, tuple(options))
    prior = _priors.get(key)
    if prior is None:
        if len(_priors) > 32:
            _priors.clear()
        prior = _priors[key] = score(llama, neutral, options)
    return prior


def score(llama: Any, prompt: str, options: Sequence[tuple[str, str]]) -> dict[str, float]:
    """Log-probability of each option's text after the prompt."""
    prompt_tokens = llama.tokenize(prompt.encode(), add_bos=False, special=True)
    base = _eval_prompt(llama, prompt_tokens)
    first = _log_softmax(_last_logits(llama))
    scores: dict[str, float] = {}
    for key, text in options:
        tokens = llama.tokenize((prompt + text).encode(), add_bos=False, special=True)[len(prompt_tokens) :]
        if not tokens:
            scores[key] = 0.0
            continue
        total = float(first[tokens[0]])
        llama.n_tokens = base
        if len(tokens) > 1:
            rows = _eval_all_logits(llama, tokens[:-1])
            total += sum(float(_log_softmax(row)[token]) for row, token in zip(rows, tokens[1:], strict=True))
        scores[key] = total
    llama.n_tokens = base  # later generation reuses the evaluated prompt
    return scores


def _eval_prompt(llama: Any, tokens: list[int]) -> int:
    # Reuse what the context already holds of this prompt; evaluate at least the last token, whose
    # logits the scoring needs.
    held = llama.input_ids[: llama.n_tokens].tolist()
    common = 0
    for a, b in zip(held, tokens, strict=False):
        if a != b:
            break
        common += 1
    llama.n_tokens = min(common, len(tokens) - 1)
    llama.eval(tokens[llama.n_tokens :])
    return int(llama.n_tokens)


def _eval_all_logits(llama: Any, tokens: list[int]) -> list[Any]:
    """Evaluate ``tokens`` after what the context holds in one llama.cpp decode, with the logits of
    every position (``Llama.eval`` keeps only the last one's unless the whole model was loaded with
    ``logits_all``): one decode for an option's tokens instead of one per token. Options are short
    (a question, "N/A"): far below the batch size."""
    if len(tokens) > llama.n_batch:
        rows = []
        for i in range(0, len(tokens), llama.n_batch):
            rows += _eval_all_logits(llama, tokens[i : i + llama.n_batch])
        return rows
    llama._ctx.kv_cache_seq_rm(-1, llama.n_tokens, -1)
    past = llama.n_tokens
    llama._batch.set_batch(batch=tokens, n_past=past, logits_all=True)
    llama._ctx.decode(llama._batch)
    llama.input_ids[past : past + len(tokens)] = tokens
    llama.n_tokens = past + len(tokens)
    n_vocab = llama.n_vocab()
    return [
        np.ctypeslib.as_array(llama._ctx.get_logits_ith(i), shape=(n_vocab,)).astype(np.float64)
        for i in range(len(tokens))
    ]


def _last_logits(llama: Any) -> Any:
    return np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),)).astype(np.float64)


def _log_softmax(logits: Any) -> Any:
    shifted = logits - logits.max()
    return shifted - np.log(np.exp(shifted).sum())


def follow(llama: Any, prompt: str, replies: Sequence[str], repeat_penalty: float = 1.0) -> int:
    """The index of the reply greedy decoding picks when only ``replies`` may follow ``prompt`` —
    the model decides at every token where two replies part, as under a grammar that allows exactly
    these replies. What they share is evaluated in one llama.cpp decode, not token by token, and
    nothing is evaluated once one reply is left: a reply whose every stretch but a few choices is
    fixed (a grammar's answer sentence) costs a decode per choice, not one per token.

    ``repeat_penalty`` is llama.cpp's, over the last ``llama.last_n_tokens_size`` tokens, as its
    sampler applies it."""
    prompt_tokens = llama.tokenize(prompt.encode(), add_bos=False, special=True)
    options = [
        llama.tokenize((prompt + r).encode(), add_bos=False, special=True)[len(prompt_tokens) :]
        for r in replies
    ]
    alive = list(range(len(options)))
    if len(alive) == 1:  # nothing to choose: nothing to evaluate
        return 0
    _eval_prompt(llama, prompt_tokens)
    at = 0
    while len(alive) > 1:
        shared = _shared_run(options, alive, at)
        if shared:  # fixed for every reply left: evaluated at once
            llama.eval(shared)
            at += len(shared)
            continue
        ending = [i for i in alive if len(options[i]) == at]
        if ending:  # one reply ends where others go on: the shortest is what a grammar's end allows
            return ending[0]
        logits = _penalized(llama, _last_logits(llama), repeat_penalty)
        best = max({options[i][at] for i in alive}, key=lambda token: logits[token])
        alive = [i for i in alive if options[i][at] == best]
        llama.eval([best])
        at += 1
    return alive[0]


def _shared_run(options: Sequence[list[int]], alive: Sequence[int], at: int) -> list[int]:
    """The tokens from ``at`` on that every reply in ``alive`` has, up to the first where they part."""
    run: list[int] = []
    while True:
        at_end = any(at + len(run) >= len(options[i]) for i in alive)
        if at_end or len({options[i][at + len(run)] for i in alive}) != 1:
            return run
        run.append(options[alive[0]][at + len(run)])


def _penalized(llama: Any, logits: Any, penalty: float) -> Any:
    if penalty == 1.0:
        return logits
    recent = set(llama.input_ids[max(0, llama.n_tokens - llama.last_n_tokens_size) : llama.n_tokens].tolist())
    for token in recent:
        logits[token] = logits[token] / penalty if logits[token] > 0 else logits[token] * penalty
    return logits
