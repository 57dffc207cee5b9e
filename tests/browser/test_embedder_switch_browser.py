"""A store in IndexedDB embedded with one embedder, reopened with another: re-embedded in
the worker's background loop, retrieval correct throughout (docs/models.md)."""

import pytest
from browserkit import js

from pymemory.models.embedding import HashingEmbedder

B = HashingEmbedder(seed=7)


def test_another_embedder_re_embeds_the_store_in_the_background(harness):
    result = js(
        harness,
        """
        const m = pm.createAgentMemory({ dbName: args[0] });
        await m.ready;
        const conn = pm.connection();
        const notes = [];
        for (let i = 0; i < 300; i += 50) {
          await m.addMany(Array.from({ length: 50 }, (_, j) => ({ text: `note ${i + j} about topic ${i + j}` })));
        }
        const target = await m.addMemory("the bike storage code at the office is 7291, written on the "
          + "whiteboard next to the kitchen after the facilities team changed it last spring");
        const first = await conn.call(args[0], "loadModels", { embedder: "hashing" });
        await conn.call(args[0], "modelsIdle", {});
        await conn.call(args[0], "close", {});
        await conn.call(args[0], "open", {});
        const loaded = await conn.call(args[0], "loadModels", { embedder: "hashing", hashing: { seed: 7 } });
        const during = [];
        // Until it is done, not a count of loops: the pace of the background loop
        // depends on the machine (CI once stopped at 256 of 301 after 200 loops).
        const deadline = Date.now() + 180000;
        while (Date.now() < deadline) {
          const before = (await m.stats()).embedding.embedded;
          const r = await m.retrieve("office bike storage code", { trace: true });
          const s = (await m.stats()).embedding;
          during.push({ top: r.memories[0]?.item.id, notes: r.notes, before, ...s });
          if (s.embedded === s.items) break;
        }
        const idle = await conn.call(args[0], "modelsIdle", {});
        const after = await m.retrieve("office bike storage code", { trace: true });
        return { target, first, loaded, during, idle, after, stats: await m.stats() };
        """,
        "switch",
    )
    assert result["first"]["embedding"]["model"].endswith("-s0")
    loaded = result["loaded"]
    assert loaded["embedder"]["name"] == B.name
    assert loaded["embedding"]["model"] == B.name and loaded["embedding"]["items"] == 301
    assert loaded["embedding"]["embedded"] < 301  # the old vectors went at attach
    during = result["during"]
    assert len(during) > 1 and during[0]["embedded"] < 301 and during[-1]["embedded"] == 301
    embedded = [d["embedded"] for d in during]
    assert embedded == sorted(embedded)
    for d in during:  # the target is found whether or not it is embedded yet
        assert d["top"] == result["target"]["id"]
        # The background loop goes on while the retrieve runs: between the two counts.
        missing = [int(n.split()[0]) for n in d["notes"] if "not embedded yet" in n]
        assert len(d["notes"]) == len(missing) <= 1
        assert 301 - d["embedded"] <= (missing or [0])[0] <= 301 - d["before"]
    assert result["idle"]["embedded"] == 301
    assert result["stats"]["embedding"] == {"model": B.name, "embedded": 301, "items": 301}
    after = result["after"]
    assert after["mode"] == "hybrid" and after["notes"] == []
    top = after["memories"][0]
    query, text = B.embed_sync([after["query"], top["item"]["text"]])
    assert top["dense"] == pytest.approx(float(query @ text), abs=0.02)  # B's vectors only
