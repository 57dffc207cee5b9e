"""The index snapshot in real IndexedDB (issue 14): a worker's Pyodide fills a store,
closes it (the snapshot is written), reopens it from the snapshot with the same answers,
and sees what a second page's worker changed after the snapshot was written; the answers
equal those of a full rebuild of the same database."""

from __future__ import annotations

from test_pyodide_package import open_page, python_in_worker, site  # noqa: F401 (fixture)

COMMON = """
import json, logging, random
from pymemory.browser.pyodide import open_memory
from pymemory.retrieval import snapshot

class Seen(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []
    def emit(self, record):
        self.lines.append(record.getMessage())

seen = Seen()
logging.getLogger("pymemory").addHandler(seen)
logging.getLogger("pymemory").setLevel(logging.INFO)
NOW = 1_780_000_000_000
WORDS = ("deploy budget vault garden coffee invoice rocket piano harbor lantern meeting "
         "travel python server maya paris tokyo release review sprint ticket backup river "
         "museum concert winter summer report café 東京").split()
QUERIES = ["deploy the server", "coffee in paris", "budget review", "vault backup", "東京"]

async def observe(memory):
    out = {}
    for q in QUERIES:
        r = await memory.retrieve(q, max_items=10, max_tokens=100000)
        out[q] = [[m.item.to_json(), round(m.score, 9)] for m in r.memories]
    out["list"] = [i.to_json() for i in await memory.list(scope=None)]
    stats = await memory.stats()
    out["stats"] = [stats["items"], stats["archived"], stats["by_scope"]]
    return out

def opened_from_snapshot():
    return any("opened from the index snapshot" in line for line in seen.lines)
"""

FILL = COMMON + """
rng = random.Random(7)
entries = [{"text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 16))) + f" #{i}",
            "tags": rng.sample(["work", "home", "trip"], rng.randint(0, 2)),
            "scope": rng.choice(["user", "session"]), "timestamp": NOW - i * 60_000}
           for i in range(snapshot.MIN_ITEMS + 100)]
memory = await open_memory("@DB@", clock=lambda: NOW)
for start in range(0, len(entries), 500):
    await memory.add_many(entries[start:start + 500])
before = await observe(memory)
await memory.close()
memory = await open_memory("@DB@", clock=lambda: NOW)
after = await observe(memory)
used = opened_from_snapshot()
await memory.close()
json.dumps({"equal": before == after, "used": used, "items": before["stats"][0]})
"""

# A second page's worker changes the store after the snapshot was written and keeps its
# Memory open (so it writes no newer snapshot).
CHANGE = COMMON + """
memory = await open_memory("@DB@", clock=lambda: NOW, feedback_flush_s=3600)
items = await memory.list(scope=None)
added = await memory.add("the zebra gate code is forty two", scope="user", timestamp=NOW)
await memory.update(items[0].id, text="the vault moved to the harbor in winter")
await memory.feedback(items[1].id, "important")
await memory.flush()
import builtins
builtins.kept_memory = memory
json.dumps({"added": added.id, "updated": items[0].id})
"""

REOPEN = COMMON + """
memory = await open_memory("@DB@", clock=lambda: NOW)
with_snapshot = await observe(memory)
used = opened_from_snapshot()
zebra = [m.item.id for m in (await memory.retrieve("zebra gate code")).memories]
await snapshot.discard(memory.kv)  # the same database, rebuilt from every record:
snapshot.MIN_ITEMS = 10**9  # (and no new snapshot at this close)
await memory.close()
seen.lines.clear()
memory = await open_memory("@DB@", clock=lambda: NOW)
rebuilt = await observe(memory)
rebuilt_used = opened_from_snapshot()
await memory.close()
json.dumps({"used": used, "rebuilt_used": rebuilt_used, "zebra": zebra,
            "equal": with_snapshot == rebuilt, "items": with_snapshot["stats"][0]})
"""


def test_reopen_from_the_snapshot_in_indexeddb_and_see_another_pages_change(
    context, site  # noqa: F811
):
    base, _ = site
    requests: list[str] = []
    a = open_page(context, f"{base}/worker.html", requests)
    filled = python_in_worker(a, FILL.replace("@DB@", "snap-notes"))
    assert filled["used"] and filled["equal"], filled
    b = open_page(context, f"{base}/worker.html", requests)
    changed = python_in_worker(b, CHANGE.replace("@DB@", "snap-notes"))
    a.reload()
    again = python_in_worker(a, REOPEN.replace("@DB@", "snap-notes"))
    assert again["used"] and not again["rebuilt_used"]
    assert again["zebra"][:1] == [changed["added"]]
    assert again["items"] == filled["items"] + 1
    assert again["equal"]
    for page in (a, b):
        assert page.errors == []
