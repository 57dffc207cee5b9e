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
