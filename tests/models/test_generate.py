"""Greedy decoding with a KV cache (pymemory.models.generate): a toy session checks the
feeds, the cache and every constraint; the real SmolLM2 model checks determinism and that
a cached prompt prefix changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pymemory.models.generate import (
    CausalLmSpec,
    GenerationConfig,
    generate,
    log_softmax_at,
    next_token,
    prefill,
)

SPEC = CausalLmSpec(num_layers=2, num_kv_heads=1, head_dim=2, vocab_size=10)
STOP = 0


class ToySession:
    """An InferenceSession whose "model" wants ``next_of[token]`` after ``token`` (default
    token + 1) and whose cache stores each token id, so feeds can be checked exactly."""

    def __init__(self, spec: CausalLmSpec = SPEC, next_of: dict[int, int] | None = None):
        self.spec = spec
        self.next_of = next_of or {}
        self.calls: list[int] = []  # tokens per call
        names = [p for p, _ in spec.past_names()]
        self.input_names = ("input_ids", "attention_mask", "position_ids", *names)
        self.output_names = (spec.logits, *[q for _, q in spec.past_names()])

    def wanted(self, token: int) -> int:
        return self.next_of.get(token, (token + 1) % self.spec.vocab_size)

    async def run(self, feeds, output_names=None):
        ids = feeds["input_ids"]
        assert ids.dtype == np.int64 and ids.shape[0] == 1
        n = ids.shape[1]
        past = feeds["past_key_values.0.key"].shape[2]
        assert feeds["attention_mask"].shape == (1, past + n)
        assert feeds["attention_mask"].all()
        assert feeds["position_ids"].tolist() == [list(range(past, past + n))]
        self.calls.append(n)
        out = {}
        for past_name, present in self.spec.past_names():
            old = feeds[past_name]
            assert old.shape == (1, 1, past, 2) and old.dtype == np.float32
            new = np.stack([ids[0].astype(np.float32), np.arange(past, past + n)], -1)
            out[present] = np.concatenate([old, new[None, None]], axis=2)
        logits = np.zeros((1, n, self.spec.vocab_size), np.float32)
        for i, token in enumerate(ids[0]):
            distance = np.abs(np.arange(self.spec.vocab_size) - self.wanted(int(token)))
            logits[0, i] = 0.01 * np.arange(self.spec.vocab_size) - distance  # ties: higher
        out[self.spec.logits] = logits
        names = output_names or self.output_names
        return {k: out[k] for k in names}


def config(**kw) -> GenerationConfig:
    return GenerationConfig(**{"stop_ids": (STOP,), "max_new_tokens": 20, **kw})


async def test_chunked_prefill_feeds_the_cache_in_order():
    session = ToySession()
    prompt = [5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8]  # 13 tokens
    cache, logits = await prefill(session, SPEC, prompt, chunk=5)
    assert session.calls == [5, 5, 3]
    assert cache.length == 13 and cache.ids == prompt
    keys = cache.values["past_key_values.1.key"]
    assert keys[0, 0, :, 0].tolist() == prompt  # every token, in order
    assert keys[0, 0, :, 1].tolist() == list(range(13))  # at its position
    assert int(np.argmax(logits)) == 9  # after token 8 comes 9


async def test_greedy_until_a_stop_token():
    session = ToySession()
    out = await generate(
        session, SPEC, [4, 5], config(), decode=lambda ids: ",".join(map(str, ids))
    )
    assert out.ids == [6, 7, 8, 9]  # then 0 = STOP, not part of the output
    assert out.stop_reason == "stop" and out.text == "6,7,8,9"
    assert out.prompt_tokens == 2
    assert len(out.logprobs) == 5 and all(lp <= 0 for lp in out.logprobs)
    assert out.overridden == 0


async def test_max_new_tokens_and_no_wasted_model_call():
    session = ToySession(next_of={3: 3})
    out = await generate(session, SPEC, [3], config(max_new_tokens=4))
    assert out.ids == [3, 3, 3, 3] and out.stop_reason == "length"
    assert session.calls == [1, 1, 1, 1]  # prompt + 3 steps: the 4th token needs no call


async def test_min_new_tokens_bans_an_early_stop():
    session = ToySession(next_of={9: STOP, 2: STOP})
    out = await generate(session, SPEC, [9], config(min_new_tokens=1))
    assert out.ids[0] != STOP and out.stop_reason == "stop"


async def test_allowed_and_banned_tokens():
    session = ToySession()
    out = await generate(session, SPEC, [4], config(allowed_ids=frozenset({5, 7, 8})))
    assert out.ids[:3] == [5, 7, 8]  # 6 is not allowed: 7 is the closest allowed after 5
    assert set(out.ids) <= {5, 7, 8} and out.overridden >= 1
    out = await generate(session, SPEC, [4], config(banned_ids=frozenset({6})))
    assert 6 not in out.ids


async def test_no_repeat_ngram_counts_only_the_output():
    session = ToySession(next_of={3: 3, 4: 3})
    out = await generate(session, SPEC, [3, 3, 3], config(no_repeat_ngram=1, max_new_tokens=5))
    assert len(set(out.ids)) == len(out.ids)  # no token twice
    assert out.ids[0] == 3  # the prompt's 3s do not count
    out = await generate(session, SPEC, [3], config(no_repeat_ngram=2, max_new_tokens=6))
    pairs = list(zip(out.ids, out.ids[1:], strict=False))
    assert len(pairs) == len(set(pairs))


async def test_token_filter_sees_the_best_tokens_in_order_stop_included():
    session = ToySession(next_of={5: STOP})
    offered: list[int] = []

    def no_sevens(output, token):
        offered.append(token)
        return token != 7

    out = await generate(session, SPEC, [5], config(), token_filter=no_sevens)
    assert offered[0] == STOP  # the stop token is offered like any other
    assert out.ids == [] and out.stop_reason == "stop"
    out = await generate(session, SPEC, [6], config(max_new_tokens=3), token_filter=no_sevens)
    assert 7 not in out.ids


async def test_a_filter_that_accepts_nothing_ends_generation():
    out = await generate(ToySession(), SPEC, [3], config(), token_filter=lambda o, t: False)
    assert out.ids == [] and out.stop_reason == "empty"


async def test_the_repeat_ban_yields_to_the_filter():
    session = ToySession(next_of={3: 4, 4: 3})
    only = {3, 4}
    out = await generate(
        session,
        SPEC,
        [2],
        config(no_repeat_ngram=2, max_new_tokens=6),
        token_filter=lambda o, t: t in only,
    )
    assert out.stop_reason == "length" and len(out.ids) == 6


async def test_stop_after_keeps_the_token_and_ends():
    out = await generate(ToySession(), SPEC, [4], config(stop_after_ids=(6,)))
    assert out.ids == [5, 6] and out.stop_reason == "stop"


async def test_a_cached_prefix_gives_the_same_output_and_stays_unchanged():
    prompt = [1, 2, 3, 4, 5, 6, 7, 8, 2]
    plain = await generate(ToySession(), SPEC, prompt, config(prefill_chunk=4))
    session = ToySession()
    prefix, _ = await prefill(session, SPEC, prompt[:4], chunk=4)
    before = dict(prefix.values)
    cached = await generate(session, SPEC, prompt[4:], config(prefill_chunk=4), prefix=prefix)
    assert cached.ids == plain.ids
    assert cached.prompt_tokens == len(prompt)
    assert prefix.length == 4 and all(prefix.values[k] is v for k, v in before.items())
    again = await generate(session, SPEC, prompt[4:], config(prefill_chunk=4), prefix=prefix)
    assert again.ids == plain.ids


def test_next_token_and_log_softmax():
    logits = np.array([0.0, 2.0, 1.0, -1.0], np.float32)
    assert next_token(logits, [], GenerationConfig(stop_ids=())) == 1
    mask = np.array([True, False, True, True])
    assert next_token(logits, [], GenerationConfig(stop_ids=()), mask) == 2
    assert next_token(logits, [], GenerationConfig(stop_ids=()), np.zeros(4, bool)) is None
    probs = np.exp(logits) / np.exp(logits).sum()
    assert log_softmax_at(logits, 2) == pytest.approx(np.log(probs[2]), abs=1e-6)


async def test_bad_arguments():
    with pytest.raises(ValueError):
        await generate(ToySession(), SPEC, [], config())
    with pytest.raises(ValueError):
        GenerationConfig(max_new_tokens=0)
    with pytest.raises(ValueError):
        GenerationConfig(no_repeat_ngram=-1)
    with pytest.raises(ValueError):
        await prefill(ToySession(), SPEC, [1], chunk=0)


# --- the real model ------------------------------------------------------------------

MODELS = Path(__file__).resolve().parents[2] / ".cache" / "models" / "smollm2"


@pytest.fixture(scope="module")
def smollm2():
    missing = [
        f
        for f in ("model.onnx", "config.json", "generation.json", "tokenizer.json")
        if not (MODELS / f).is_file()
    ]
    if missing:
        pytest.fail(f"{MODELS} lacks {missing}: run python3 build.py setup", pytrace=False)
    from pymemory.models.ort import OrtRuntime
    from pymemory.models.tokenizers import load_tokenizer

    cfg = json.loads((MODELS / "config.json").read_text())
    gen = json.loads((MODELS / "generation.json").read_text())
    session = OrtRuntime().load_sync(MODELS / cfg["file"])
    return CausalLmSpec.from_config(cfg), gen, session, load_tokenizer(MODELS / "tokenizer.json")


def chatml(gen: dict, user: str) -> str:
    return gen["prompt_template"].format(system=gen["default_system"], user=user)


async def test_real_model_greedy_is_deterministic_and_stops(smollm2):
    spec, gen, session, tok = smollm2
    prompt = tok.encode(chatml(gen, "What is the capital of France?"), add_special_tokens=False)
    cfg = GenerationConfig(
        max_new_tokens=24,
        stop_ids=tuple(gen["stop_token_ids"]),
        prefill_chunk=gen["prefill_chunk_tokens"],
    )
    first = await generate(session, spec, prompt, cfg, decode=tok.decode)
    second = await generate(session, spec, prompt, cfg, decode=tok.decode)
    assert first.ids == second.ids and first.text == second.text
    assert "Paris" in first.text
    assert first.stop_reason == "stop"
    assert first.prefill_ms > 0 and first.decode_ms > 0 and first.steps == len(first.ids)


async def test_real_model_prefix_cache_matches_a_full_prefill(smollm2):
    spec, gen, session, tok = smollm2
    prompt = tok.encode(
        chatml(gen, "Summarize: the standup moves to 9:30 on Mondays."), add_special_tokens=False
    )
    chunk = gen["prefill_chunk_tokens"]
    cfg = GenerationConfig(
        max_new_tokens=12, stop_ids=tuple(gen["stop_token_ids"]), prefill_chunk=chunk
    )
    plain = await generate(session, spec, prompt, cfg)
    cut = 2 * chunk  # on a chunk boundary: the same calls, so the same int8 rounding
    prefix, _ = await prefill(session, spec, prompt[:cut], chunk=chunk)
    cached = await generate(session, spec, prompt[cut:], cfg, prefix=prefix)
    assert cached.ids == plain.ids
    assert cached.prompt_tokens == len(prompt)
