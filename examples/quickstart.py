"""README's Python tour, as is: its output is the one README shows (tests/test_package.py)."""

import asyncio
import tempfile
from pathlib import Path

from pymemory import Memory, by_tag, compose, time_window


async def main() -> None:
    path = Path(tempfile.mkdtemp()) / "demo.db"  # a SQLite file; Memory.open(None): in memory
    async with await Memory.open(path) as memory:
        pref = await memory.add(
            "Hi! Thanks for yesterday. From now on I prefer answers as tables, not bullet lists.",
            type="user_preference",
            scope="user",
        )
        print("stored:", pref.content)
        await memory.add(
            "Today at 3pm we reviewed the permissions module with the product team. "
            "We settled on three roles: super admin (everything), department admin (own "
            "department) and member (read only). It goes live next Tuesday.",
            tags=["meeting", "permissions"],
        )
        await memory.add(  # forgotten after a minute
            '{"city": "Beijing", "temp_c": 23, "sky": "cloudy"}', type="tool_result", ttl_ms=60_000
        )
        await memory.add("用户要求把 Python 脚本改成支持 CSV 导出。", tags=["code"])

        result = await memory.retrieve("write the meeting minutes: roles and go-live date")
        print(f"\nretrieve -> {len(result.items)} item(s), {result.tokens_used} tokens")
        print(result.text)  # the lines to inject into the prompt

        await memory.feedback(pref.id, "important")  # batched, flushed every 3 s
        result = await memory.retrieve(
            "meeting roles", compose(time_window(hours=24), by_tag("meeting")), trace=True
        )
        print("\ntrace:")
        for c in result.trace:
            print(
                f"  {c.status:<12} relevance={c.relevance:.2f} decay={c.decay:.2f} "
                f"feedback={c.feedback_weight:.1f} score={c.score:.2f}  {c.content[:50]}"
            )

        print("\nCSV 导出 ->", (await memory.retrieve("CSV 导出")).items[0].content)
        print("token counter:", (await memory.stats())["token_counter"])
        unrelated = await memory.retrieve("what is the capital of Peru?")
        print("unrelated query ->", len(unrelated.items), "items")  # nothing is padded in


asyncio.run(main())
