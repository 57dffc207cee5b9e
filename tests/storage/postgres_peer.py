"""One app-server process for tests/storage/test_postgres_processes.py.

    python tests/storage/postgres_peer.py DSN NAMESPACE NAME SEED COUNT

opens a Memory on PostgreSQL (its own pool) and adds COUNT memories, with a sprinkling of
updates and deletes of any process's items and ``clear`` of a scope of its own. It prints
one JSON line per step: an intent before a call that removes something (``deleting``,
``clearing``), and an acknowledgement after every call that returned (``add``,
``update``, ``del``, ``cleared``), so the test can tell what was acknowledged even when
it SIGKILLs the process at a random moment. Every ``list()`` it makes is checked for
items of another namespace (``foreign``).
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pymemory import Memory
from pymemory.errors import NotFoundError
from pymemory.storage.postgres import PostgresKv


def say(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


async def main(dsn: str, namespace: str, name: str, seed: int, count: int) -> None:
    rng = random.Random(seed)
    kv = await PostgresKv.open(dsn, namespace=namespace)
    memory = await Memory.open(kv, feedback_flush_s=3600, sweep_interval_s=3600)
    say(ready=True)
    for i in range(count):
        item = await memory.add(f"{namespace} {name} item {i}", tags=[name], scope="kept")
        say(add=item.id)
        roll = rng.random()
        if roll < 0.25 or i % 50 == 0:
            seen = await memory.list()
            foreign = [m.content for m in seen if not m.content.startswith(namespace + " ")]
            say(seen=len(seen), foreign=foreign[:3])
            if seen and roll < 0.08:
                target = rng.choice(seen)
                try:
                    done = await memory.update(target.id, content=f"{target.content} (edited)")
                    say(update=done.id, version=done.version)
                except NotFoundError:
                    say(missed=target.id)  # deleted meanwhile: never brought back
            elif seen and roll < 0.14:
                target = rng.choice(seen)
                say(deleting=target.id)
                try:
                    await memory.delete(target.id)
                    say(deleted=target.id)
                except NotFoundError:
                    say(missed=target.id)
        if roll > 0.97:
            scope = f"tmp-{name}-{i}"
            temp = await memory.add_many(
                [{"text": f"{namespace} {name} temp {j}", "scope": scope} for j in range(3)]
            )
            say(clearing=[t.id for t in temp])
            say(cleared=await memory.clear(scope=scope), ids=[t.id for t in temp])
    say(done=True)
    await memory.close()
    await kv.close()


if __name__ == "__main__":
    dsn, namespace, name, seed, count = sys.argv[1:6]
    asyncio.run(main(dsn, namespace, name, int(seed), int(count)))
