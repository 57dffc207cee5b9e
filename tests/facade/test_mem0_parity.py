"""What Mem0 users expect of a memory (issue #15), restated as data and run against ours.

Mem0's documented behaviour (restated, never its code):
- docs.mem0.ai/api-reference/memory/history-memory: ``history(memory_id)`` lists how a
  memory changed over time; an update keeps the old value (``old_memory``) beside the new
  one (``new_memory``), an added-only memory has one entry (``event: ADD``).
- docs.mem0.ai/api-reference (Search Memories / Get Memories): ``search(query, ...)``
  finds the relevant memories of an entity; ``get_all(...)`` fetches all of them.
- docs.mem0.ai/api-reference/memory/delete-memory: delete removes the memory.

Deliberate differences (README, "Python quick tour" and "What forget erases"):
- [DIFFERS] Mem0 keeps a DELETE event in the history of a deleted memory; here a delete
  erases the history with the memory ("forget means gone"), so ``history`` raises
  NotFoundError.
- [DIFFERS] Mem0's entries are events (ADD/UPDATE/DELETE with old/new text); ours are the
  versions themselves, each with ``valid_from``/``valid_to``. The table maps one onto the
  other: an UPDATE's old_memory is the previous version's content, its new_memory the
  next one's.
"""

from __future__ import annotations

import pytest

from pymemory import Memory, NotFoundError

# (case, steps, expected) -- steps run in order; "history" is the list of contents, oldest first
CASES = [
    (
        "an added memory has one history entry (Mem0: one ADD event)",
        [("add", "Alex is vegetarian.")],
        {"history": ["Alex is vegetarian."]},
    ),
    (
        "an update keeps what was true before (Mem0: UPDATE with old_memory/new_memory)",
        [("add", "Alex lives in Lisbon."), ("update", "Alex lives in Porto.")],
        {"history": ["Alex lives in Lisbon.", "Alex lives in Porto."]},
    ),
    (
        "two updates: every earlier value, in order",
        [("add", "Plan: basic."), ("update", "Plan: pro."), ("update", "Plan: team.")],
        {"history": ["Plan: basic.", "Plan: pro.", "Plan: team."]},
    ),
    (
        "search finds only the current value (Mem0: search returns the memory, updated)",
        [("add", "The wifi code is mango-17."), ("update", "The wifi code is papaya-42.")],
        {"search": ("wifi code", ["The wifi code is papaya-42."])},
    ),
    (
        "get_all returns every memory of the entity (Mem0: Get Memories)",
        [("add", "Alex likes tea."), ("add_other", "Sam likes coffee.")],
        {"get_all": ["Alex likes tea."]},
    ),
    (
        "[DIFFERS] a deleted memory has no history left (Mem0 keeps a DELETE event)",
        [("add", "Temporary note."), ("delete", None)],
        {"history": NotFoundError},
    ),
]


@pytest.mark.parametrize(("case", "steps", "expected"), CASES, ids=[c[0] for c in CASES])
async def test_mem0_documented_behaviour(case, steps, expected):
    async with await Memory.open() as memory:
        item = None
        for op, text in steps:
            if op == "add":
                item = await memory.add(text, scope="user:alex")
            elif op == "add_other":
                await memory.add(text, scope="user:sam")
            elif op == "update":
                await memory.update(item.id, text=text)
            elif op == "delete":
                await memory.delete(item.id)
        if "history" in expected:
            if expected["history"] is NotFoundError:
                with pytest.raises(NotFoundError):
                    await memory.history(item.id)
            else:
                got = [v.item.content for v in await memory.history(item.id)]
                assert got == expected["history"]
        if "search" in expected:
            query, contents = expected["search"]
            found = await memory.search(query, max_items=5)
            assert [m.item.content for m in found.memories] == contents
        if "get_all" in expected:
            got = [i.content for i in await memory.get_all(scope="user:alex")]
            assert got == expected["get_all"]
