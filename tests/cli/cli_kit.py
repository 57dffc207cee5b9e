"""What the CLI tests share: ``pymemory --db <db> ...`` run in-process with its output
captured, and items seeded with chosen timestamps through ``import``."""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pymemory.cli import main
from pymemory.item import MemoryItem, dumps

DAY_MS = 86_400_000
HEADER = '{"format":"pymemory-export","version":1}'
LONG_TEXT = (
    "Hi! Thanks so much. So basically, the deploy to staging failed yesterday because the "
    "database migration timed out after 30 seconds. We decided to split the migration into "
    "three smaller steps and run them one by one tomorrow morning. Let me know if you have "
    "any questions."
)


@dataclass
class Cli:
    """Runs ``pymemory --db <db> ...`` in-process and captures its output."""

    db: Path
    capsys: pytest.CaptureFixture[str]

    def __call__(self, *args: str) -> tuple[int, str, str]:
        code = main(["--db", str(self.db), *args])
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, *args: str) -> Any:
        code, out, err = self("--json", *args)
        assert code == 0, err
        return json.loads(out)

    def add(self, text: str, *args: str) -> dict[str, Any]:
        return self.json("add", text, *args)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def local(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000).isoformat(sep=" ", timespec="seconds")


def seed(cli: Cli, tmp_path: Path, *specs: dict[str, Any]) -> list[MemoryItem]:
    """Import items with chosen timestamps (``add`` always stamps "now")."""
    items = [
        MemoryItem(
            id=str(uuid.uuid4()),
            type=s.get("type", "message"),
            timestamp=s["timestamp"],
            content=s["content"],
            text=s["content"],
            metadata={},
            scope=s.get("scope", "global"),
            tags=tuple(s.get("tags", ())),
        )
        for s in specs
    ]
    lines = [HEADER, *(dumps({"kind": "memory", "item": i.to_dict()}) for i in items)]
    path = tmp_path / f"seed-{uuid.uuid4().hex}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert cli.json("import", str(path))["added"] == len(items)
    return items


def ids(rows: list[dict[str, Any]]) -> list[str]:
    return [r["id"] for r in rows]
