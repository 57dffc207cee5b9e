"""docs/sync.md's example runs against the test hub and prints what the page shows."""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from docblocks import block, section

PAGE = "docs/sync.md"
HEADING = "## One round"


def test_the_sync_example_prints_what_the_page_shows(hub: str) -> None:
    code = block(PAGE, HEADING).body.replace("http://127.0.0.1:5984/memory-alice", hub)
    code = code.replace("passphrase=", "iterations=1000, passphrase=")  # a fast KDF in tests
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, PAGE, "exec"), {"__name__": "__main__"})
    after = section(PAGE, HEADING).split("```\n\nprints")[1].split("\n\n")[1]
    assert out.getvalue().splitlines() == [line.strip() for line in after.splitlines()]


def test_the_later_edit_example_prints_what_the_page_shows(hub: str) -> None:
    """"The later edit wins": the phone's edit, a second after the laptop's, survives on
    both although the laptop syncs last; the laptop's is in history as the loser."""
    heading = "## Conflicts and deletes"
    code = block(PAGE, heading).body.replace("http://127.0.0.1:5984/memory-bob", hub)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, PAGE, "exec"), {"__name__": "__main__"})
    after = section(PAGE, heading).split("```\n\nprints")[1].split("\n\n")[1]
    assert out.getvalue().splitlines() == [line.strip() for line in after.splitlines()]
