"""The prompt text in the page equals CPython's: the same memories (a long transcript
among short notes) and queries give the same ``text``, token count and passages through
the JS client, the store worker, Pyodide and IndexedDB as through ``Memory`` in CPython."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

from browserkit import js

from pymemory import Memory
from pymemory.models import find_model_dir, load_minilm
from pymemory.models.ort import OrtRuntime

DAY_MS = 86_400_000
T0 = (int(time.time() * 1000) // DAY_MS - 3) * DAY_MS + 9 * 3_600_000  # 09:00 UTC
TRANSCRIPT = "\n".join(
    [
        "[15:00] Review of the permissions module",
        "Ana: Thanks everyone for joining, let's start with the agenda for today.",
        "Ben: First the status of the billing export, which is still blocked.",
        "Ana: The vendor promised a fix by Friday, so we wait until then.",
        "Ben: Next, the permissions module. We need to settle on the roles.",
        "Ana: Three roles: super admin for everything, department admin for their own "
        "department, and member, read only.",
        "Ben: And when does it go live?",
        "Ana: It goes live next Tuesday, after the security review on Monday.",
        "Ben: Then the onboarding survey: response rates are down to 12 percent.",
        "Ana: Let's send a reminder email on Thursday and look again next week.",
        "Ben: Finally, the office move: the movers come on the 14th at 8 am.",
        "Ana: 好的，下周二上线之前我们再确认一次权限角色。",
    ]
)
ADDS = [
    {"text": "I prefer answers as tables, not bullet lists.", "type": "user_preference",
     "timestamp": T0},
    {"text": TRANSCRIPT, "tags": ["meeting"], "timestamp": T0 + DAY_MS},
    {"text": "The security review moved to Monday morning.", "timestamp": T0 + 2 * DAY_MS},
    {"text": "用户要求把 Python 脚本改成支持 CSV 导出。", "timestamp": T0 + 2 * DAY_MS},
]  # fmt: skip
QUERIES = [
    ("when will it go live?", 100),
    ("when does the permissions module go live?", 400),
    ("roles and go-live date for the meeting minutes", 1500),
    ("权限角色 上线", 200),
]


async def cpython() -> list[dict]:
    out = []
    async with await Memory.open(None) as memory:
        for a in ADDS:
            await memory.add(**a)
        for q, budget in QUERIES:
            r = await memory.retrieve(q, max_tokens=budget)
            out.append({
                "text": r.text, "tokens": r.tokens_used,
                "passages": [[(p.start, p.end, p.why) for p in m.passages] for m in r.memories],
            })  # fmt: skip
    return out


def test_the_page_gets_the_same_prompt_text_as_cpython(harness):
    page = js(
        harness,
        """
        const m = pm.createAgentMemory({ dbName: args[0] }); await m.ready;
        for (const a of args[1]) await m.addMemory(a);
        const out = [];
        for (const [q, budget] of args[2]) {
          const r = await m.retrieve(q, { maxTokens: budget });
          out.push({ text: r.text, tokens: r.tokensUsed, inject: r.inject,
                     passages: r.memories.map((x) => x.passages.map((p) => [p.start, p.end, p.why])) });
        }
        return out;
        """,
        "passages",
        ADDS,
        QUERIES,
    )
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API keeps a loop in this thread
        reference = pool.submit(asyncio.run, cpython()).result()
    assert "goes live next Tuesday" in page[0]["text"] and "movers" not in page[0]["text"]
    assert all(p["inject"] == "passages" for p in page)
    for got, want in zip(page, reference, strict=True):
        assert got["text"] == want["text"]
        assert got["tokens"] == want["tokens"]
        assert [[tuple(s) for s in m] for m in got["passages"]] == want["passages"]


# No word of these is in the passage that answers them.
MEANING_QUERIES = [("what access levels were agreed?", 120), ("who handles relocation logistics?", 120)]


def test_with_minilm_the_page_quotes_the_passage_nearest_by_meaning(harness):
    """With MiniLM in the worker, the transcript has a vector per passage (in its one
    IndexedDB record); a question sharing no word with the answer gets the passage
    nearest by meaning, and the same text as CPython."""
    page = js(
        harness,
        """
        const m = pm.createAgentMemory({ dbName: args[0], models: ["embedder"] });
        await m.ready;
        await m.modelsReady;
        for (const a of args[1]) await m.addMemory(a);
        await pm.connection().call(args[0], "modelsIdle", {});
        const out = [];
        for (const [q, budget] of args[2]) {
          const r = await m.retrieve(q, { maxTokens: budget });
          out.push({ text: r.text, tokens: r.tokensUsed, mode: r.mode,
                     passages: r.memories.map((x) => x.passages.map((p) => [p.start, p.end, p.why])) });
        }
        return out;
        """,
        "passages-minilm",
        ADDS,
        MEANING_QUERIES,
    )

    async def cpython_run() -> list[dict]:
        minilm = await load_minilm(OrtRuntime(intra_op_threads=1), find_model_dir("minilm"))
        out = []
        async with await Memory.open(None) as memory:
            await memory.attach_embedder(minilm)
            for a in ADDS:
                await memory.add(**a)
            await memory.embed_idle()
            long = next(i for i in await memory.list() if i.text == TRANSCRIPT)
            assert memory.vectors.passage_count(long.id) >= 2
            for q, budget in MEANING_QUERIES:
                r = await memory.retrieve(q, max_tokens=budget)
                out.append({
                    "text": r.text, "tokens": r.tokens_used, "mode": r.mode,
                    "passages": [[(p.start, p.end, p.why) for p in m.passages]
                                 for m in r.memories],
                })  # fmt: skip
        return out

    with ThreadPoolExecutor(1) as pool:
        reference = pool.submit(asyncio.run, cpython_run()).result()
    assert "super admin" in page[0]["text"] and "movers" in page[1]["text"]
    assert "movers" not in page[0]["text"] and page[0]["mode"] == "hybrid"
    for got, want in zip(page, reference, strict=True):
        assert got["text"] == want["text"]
        assert got["tokens"] == want["tokens"]
        assert [[tuple(s) for s in m] for m in got["passages"]] == want["passages"]


TAB = """async ([db]) => {
  window.m = window.pymemory.createAgentMemory({ dbName: db, models: ["embedder"] });
  window.loads = 0;  // how many times the embedder became ready for this tab
  let was = null;
  window.m.onStatus((s) => {
    const now = s.models?.embedder ?? null;
    if (now === "ready" && was !== "ready") window.loads += 1;
    was = now;
  });
  await window.m.ready;
  await window.m.modelsReady;
  return window.m.status.role;
}"""
ASK = """async ([q, budget]) => {
  const r = await window.m.retrieve(q, { maxTokens: budget });
  return { text: r.text, mode: r.mode };
}"""


def test_two_tabs_with_minilm_quote_by_meaning_and_after_a_takeover_too(context, base_url):
    """The leader tab stores the transcript and embeds its passages; a follower tab's
    question that shares no word with the answer gets the passage nearest by meaning.
    The leader closes; the follower takes over, opens the store from IndexedDB, loads
    the embedder again in its own model worker and answers the same."""
    from browserkit import watch_errors

    pages = []
    for _ in range(2):
        page = context.new_page()
        page.errors = watch_errors(page)
        page.goto(f"{base_url}/web/pages/test/harness.html")
        page.wait_for_function("document.body.dataset.loaded === '1'")
        pages.append(page)
    leader, follower = pages
    assert leader.evaluate(TAB, ["passages-tabs"]) == "leader"
    assert follower.evaluate(TAB, ["passages-tabs"]) == "follower"
    leader.evaluate(
        """async ([adds]) => {
          for (const a of adds) await window.m.addMemory(a);
          await window.pymemory.connection().call("passages-tabs", "modelsIdle", {});
        }""",
        [ADDS],
    )
    before = [follower.evaluate(ASK, list(q)) for q in MEANING_QUERIES]
    assert all(r["mode"] == "hybrid" for r in before)
    assert "super admin" in before[0]["text"] and "movers" in before[1]["text"]
    leader.close()
    assert follower.evaluate("window.loads") == 1
    # The new leader's worker loads the embedder again (the client asks on the takeover).
    follower.wait_for_function(
        "window.m.status.role === 'leader' && window.loads === 2", timeout=120_000
    )  # a worker boot and a model load, on a busy machine
    after = [follower.evaluate(ASK, list(q)) for q in MEANING_QUERIES]
    assert after == before
    assert follower.errors == []
