"""Token counters for budgets: o200k_base through PyPI tiktoken and through the pure-Python
BPE (identical counts), in the browser through js-tiktoken (identical counts), and how far
the heuristic strays."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizer_corpus import corpus, corpus_by_kind

from pymemory.models.tokenizers import RankBPE, load_tiktoken_ranks
from pymemory.retrieval.tokens import (
    HeuristicTokenCounter,
    TiktokenCounter,
    TokenCounter,
    TokenizerCounter,
)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools import tokenizer_assets  # noqa: E402


@pytest.fixture(scope="module")
def ranks_path() -> Path:
    return tokenizer_assets.fetch_o200k_ranks()


@pytest.fixture(scope="module")
def ranks(ranks_path) -> dict[bytes, int]:
    return load_tiktoken_ranks(ranks_path)


@pytest.fixture(scope="module")
def fast(ranks) -> TiktokenCounter:
    import tiktoken  # noqa: F401  (the `models` extra)

    return TiktokenCounter(ranks, backend="tiktoken")


@pytest.fixture(scope="module")
def pure(ranks) -> TiktokenCounter:
    return TiktokenCounter(ranks, backend="python")


def test_ranks_file_is_tiktokens_own(ranks_path, ranks):
    # The sha256 that tiktoken pins for the o200k_base.tiktoken it downloads itself.
    assert tokenizer_assets.sha256(ranks_path) == tokenizer_assets.O200K_TIKTOKEN_SHA256
    assert len(ranks) == 199_998
    assert sorted(ranks.values()) == list(range(199_998))


def test_counters_follow_the_protocol(fast, pure):
    for counter in (fast, pure, HeuristicTokenCounter()):
        assert isinstance(counter, TokenCounter)
    assert fast.name == pure.name == "o200k_base"
    assert (fast.backend, pure.backend) == ("tiktoken", "python")


def test_known_counts(fast, pure):
    for counter in (fast, pure):
        assert counter.count("") == 0
        assert counter.count("Hello, world!") == 4
        assert counter.encode("Hello, world!") == [13225, 11, 2375, 0]
        # special-token text is plain text, never an error
        assert counter.count("<|endoftext|>") == 7


def test_tiktoken_and_pure_python_agree_on_corpus(fast, pure):
    texts = corpus()
    bad = [t[:80] for t in texts if fast.encode(t) != pure.encode(t)]
    assert not bad, f"{len(bad)} differ, e.g. {bad[:3]}"
    assert [fast.count(t) for t in texts] == [pure.count(t) for t in texts]


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cn", "Cs")), max_size=60))
def test_tiktoken_and_pure_python_agree_on_random_text(fast, pure, text):
    assert pure.encode(text) == fast.encode(text)


def test_heap_merge_equals_rescan_merge(ranks, fast):
    bpe = RankBPE(ranks)
    pieces = ["a" * 700, "ab" * 300, "é" * 400, "=" * 999, "😀" * 64, "Supercalifragilistic" * 9]
    pieces += [t for t in corpus() if 2 < len(t.encode()) < 400][::20]
    for piece in pieces:
        data = piece.encode()
        assert bpe._merge_long(data) == bpe._merge_short(data)
    for piece in pieces[:6]:
        assert bpe.encode_ordinary(piece) == fast.encode(piece)


def test_backend_auto_prefers_tiktoken(ranks_path):
    counter = TiktokenCounter(ranks_path)
    try:
        import tiktoken  # noqa: F401
    except ImportError:
        assert counter.backend == "python"
    else:
        assert counter.backend == "tiktoken"
    with pytest.raises(ValueError):
        TiktokenCounter(ranks_path, backend="rust")


def test_tokenizer_counter(ranks):
    path = tokenizer_assets.fetch_minilm_tokenizer()
    from pymemory.models.tokenizers import load_tokenizer

    counter = TokenizerCounter(load_tokenizer(path), "all-MiniLM-L6-v2")
    assert isinstance(counter, TokenCounter)
    assert counter.count("hello world") == 2  # no [CLS]/[SEP]
    assert counter.count("") == 0


# The heuristic's stated accuracy against o200k_base, measured on the corpus:
# for prose, CJK, code and URLs each string of 10+ tokens is within x0.45..x2.2 of the
# exact count, and each kind as a whole within x0.65..x1.7 (it over-counts English by about
# 1.6x). It under-counts digits, emoji and rare scripts (x0.4..x0.8) and is no estimate at
# all for runs of whitespace (0 tokens) or of one symbol ("=" * 100 is 100 tokens, not 1..2).
HEURISTIC_STRING_RANGE = (0.45, 2.2)
HEURISTIC_KIND_RANGE = (0.65, 1.7)


def test_heuristic_is_within_the_stated_factor(fast):
    heuristic = HeuristicTokenCounter()
    kinds = corpus_by_kind()
    for kind in ("english", "cjk", "code", "urls", "special"):
        exact = [fast.count(t) for t in kinds[kind]]
        guess = [heuristic.count(t) for t in kinds[kind]]
        ratio = sum(guess) / sum(exact)
        assert HEURISTIC_KIND_RANGE[0] <= ratio <= HEURISTIC_KIND_RANGE[1], (kind, ratio)
        for text, e, g in zip(kinds[kind], exact, guess, strict=True):
            if e >= 10:
                assert HEURISTIC_STRING_RANGE[0] <= g / e <= HEURISTIC_STRING_RANGE[1], (text, e, g)
    # over the whole corpus the errors roughly cancel out
    total_exact = sum(fast.count(t) for t in corpus())
    total_guess = sum(heuristic.count(t) for t in corpus())
    assert 0.8 <= total_guess / total_exact <= 1.25


def test_js_tiktoken_module_parser():
    module = (
        'export default {"pat_str":"x","special_tokens":{},"bpe_ranks":"! 0 IQ== Ig==\\nA 5 YWI="};'
    )
    assert tokenizer_assets.js_tiktoken_ranks(module) == [(b"!", 0), (b'"', 1), (b"ab", 5)]


# -- the browser side: worker/tiktoken.mjs in Chromium gives the same counts -----------------

_CHECK_WORKER = """
import * as tk from "../worker/tiktoken.mjs";
self.onmessage = async () => {
  await tk.init();
  const { texts } = await (await fetch("./corpus.json")).json();
  self.postMessage({ counts: texts.map((t) => tk.count(t)), ids: tk.encode("Hello, world!") });
};
"""

_CHECK_PAGE = """<!doctype html><meta charset="utf-8"><script type="module">
window.runCheck = () => new Promise((resolve, reject) => {
  const w = new Worker(new URL("./check.mjs", location.href), { type: "module" });
  w.onmessage = (e) => resolve(e.data);
  w.onerror = (e) => reject(new Error(e.message));
  w.postMessage("go");
});
</script>"""

# Runs in a child process: Playwright's sync API must not share this process's event loop.
_DRIVER = """
import functools, http.server, json, sys, threading
from playwright.sync_api import sync_playwright
root, chromium = sys.argv[1], sys.argv[2]
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=root))
threading.Thread(target=srv.serve_forever, daemon=True).start()
try:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--headless=new"])
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{srv.server_address[1]}/test/page.html")
        print(json.dumps(page.evaluate("runCheck()")))
        browser.close()
finally:
    srv.shutdown()
"""


def test_js_tiktoken_in_chromium_counts_like_tiktoken(tmp_path, fast, ranks_path):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("Chromium is not installed (apt-get install -y chromium)")
    tgz = tokenizer_assets.DOWNLOADS / f"js-tiktoken-{tokenizer_assets.JS_TIKTOKEN_VERSION}.tgz"
    vendor = tmp_path / "vendor" / "js-tiktoken"
    vendor.mkdir(parents=True)
    with tarfile.open(tgz) as tar:
        for member in ("chunk-VL2OQCWN.js", "ranks/o200k_base.js"):  # js-tiktoken's dist/
            (vendor / member).parent.mkdir(parents=True, exist_ok=True)
            (vendor / member).write_bytes(tar.extractfile(f"package/dist/{member}").read())
    (tmp_path / "worker").mkdir()
    shutil.copy(ROOT / "web" / "worker" / "tiktoken.mjs", tmp_path / "worker" / "tiktoken.mjs")
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "page.html").write_text(_CHECK_PAGE)
    (tmp_path / "test" / "check.mjs").write_text(_CHECK_WORKER)
    texts = list(corpus())
    (tmp_path / "test" / "corpus.json").write_text(json.dumps({"texts": texts}))
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_DRIVER), str(tmp_path), chromium],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["ids"] == [13225, 11, 2375, 0]
    expected = [fast.count(t) for t in texts]
    bad = [
        (t[:60], c, e) for t, c, e in zip(texts, result["counts"], expected, strict=True) if c != e
    ]
    assert not bad, f"{len(bad)} differ, e.g. {bad[:3]}"
