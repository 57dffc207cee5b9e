"""The CLI on what happens to memories after they are written: forget, feedback, the
archive, export / import and stats."""

from __future__ import annotations

import datetime as dt
import io
import json
import sys
import uuid
from pathlib import Path

import pytest
from cli_kit import DAY_MS, HEADER, LONG_TEXT, Cli, ids, local, now_ms, seed


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(tmp_path / "memory.db", capsys)


# --- forget / feedback / archive ----------------------------------------------------------


def test_forget_by_scope_removes_only_that_scope(cli: Cli) -> None:
    keep = [cli.add("user fact one", "--scope", "user"), cli.add("global fact")]
    cli.add("chat one", "--scope", "conversation")
    cli.add("chat two", "--scope", "conversation", "--tag", "x")
    code, out, _ = cli("forget", "--scope", "conversation")
    assert (code, out) == (0, "forgot 2 memories\n")
    assert sorted(ids(cli.json("list"))) == sorted(i["id"] for i in keep)
    assert cli.json("forget", "--scope", "conversation") == {"removed": 0}


def test_forget_by_ids_checks_every_id_first(cli: Cli) -> None:
    a, b, c = (cli.add(f"memory {n}") for n in "abc")
    code, _, err = cli("forget", a["id"], str(uuid.uuid4()))
    assert code == 1 and err.startswith("error [not_found]")
    assert len(cli.json("list")) == 3  # nothing deleted
    code, out, _ = cli("forget", a["id"], b["id"], a["id"])
    assert (code, out) == (0, "forgot 2 memories\n")
    assert ids(cli.json("list")) == [c["id"]]


def test_forget_by_type_tag_and_time(cli: Cli, tmp_path: Path) -> None:
    t = now_ms()
    _old, mid, new = seed(
        cli,
        tmp_path,
        {"timestamp": t - 3 * DAY_MS, "content": "three days ago"},
        {"timestamp": t - DAY_MS, "content": "yesterday", "type": "system_event"},
        {"timestamp": t - 1000, "content": "just now", "tags": ["tmp"]},
    )
    assert cli.json("forget", "--until", str(t - 2 * DAY_MS)) == {"removed": 1}
    assert ids(cli.json("list")) == [new.id, mid.id]
    assert cli.json("forget", "--type", "system_event") == {"removed": 1}
    assert ids(cli.json("list")) == [new.id]
    extra = cli.add("another one")
    assert cli.json("forget", "--tag", "tmp") == {"removed": 1}
    assert ids(cli.json("list")) == [extra["id"]]
    since = dt.datetime.fromtimestamp((extra["timestamp"] - 60_000) / 1000).isoformat()
    assert cli.json("forget", "--since", since) == {"removed": 1}
    assert cli.json("list") == []


def test_forget_usage_errors_and_all(cli: Cli, tmp_path: Path) -> None:
    seed(cli, tmp_path, {"timestamp": now_ms() - 90 * DAY_MS, "content": "ancient"})
    a = cli.add("recent")
    assert cli.json("archive", "--older-than", "30")["archived"] == 1
    for args, message in (
        ([], "give ids, a filter"),
        (["--all"], "add --yes to confirm"),
        ([a["id"], "--scope", "user"], "give ids or filters, not both"),
        (["--all", "--yes", "--tag", "x"], "--all takes no filters"),
        (["--since", "yesterday"], "expected epoch milliseconds or an ISO date-time"),
    ):
        code, out, err = cli("forget", *args)
        assert (code, out) == (2, ""), args
        assert message in err
    assert ids(cli.json("list")) == [a["id"]]
    code, out, _ = cli("forget", "--all", "--yes")
    assert (code, out) == (0, "forgot everything: 2 records (memories and archive)\n")
    stats = cli.json("stats")
    assert (stats["items"], stats["archived"]) == (0, 0)


def test_feedback_is_persisted_and_changes_ranking(cli: Cli) -> None:
    a = cli.add("coffee preferences: oat milk")
    b = cli.add("coffee machine is broken")
    assert cli.json("feedback", a["id"], "liked") == {
        "id": a["id"],
        "kind": "liked",
        "feedback": {"liked": 1, "disliked": 0, "important": False},
    }
    code, out, _ = cli("feedback", a["id"], "important")
    assert (code, out) == (0, f"important: {a['id']} (liked 1, disliked 0, important yes)\n")
    cli("feedback", b["id"], "disliked")
    assert cli.json("get", a["id"])["feedback"] == {"liked": 1, "disliked": 0, "important": True}
    ranked = cli.json("search", "coffee")["memories"]
    assert [m["item"]["id"] for m in ranked] == [a["id"], b["id"]]
    # liked x important (1.5 x 1.5) against disliked (0.5): feedback re-ranks.
    assert [m["feedback_weight"] for m in ranked] == [pytest.approx(2.25), pytest.approx(0.5)]
    code, _, err = cli("feedback", a["id"], "loved")
    assert code == 2 and "invalid choice: 'loved'" in err


def test_archive_and_search_archive(cli: Cli, tmp_path: Path) -> None:
    old, pinned = seed(
        cli,
        tmp_path,
        {"timestamp": now_ms() - 40 * DAY_MS, "content": "kubernetes cluster upgrade notes"},
        {"timestamp": now_ms() - 40 * DAY_MS, "content": "kubernetes access is via vpn"},
    )
    fresh = cli.add("fresh kubernetes memory")
    cli("feedback", pinned.id, "important")
    code, out, _ = cli("archive", "--older-than", "30")
    expected = "archived 1 memory older than 30 days (memories marked important stay)\n"
    assert (code, out) == (0, expected)
    assert sorted(ids(cli.json("list"))) == sorted([pinned.id, fresh["id"]])
    code, _, err = cli("get", old.id)
    assert code == 1 and "not_found" in err
    assert cli.json("archive", "--search", "cluster upgrade") == [
        {"id": old.id, "type": "message", "timestamp": old.timestamp, "content": old.content}
    ]
    code, out, _ = cli("archive", "--search", "")
    lines = out.splitlines()
    assert lines[0].split() == ["id", "created", "type", "content"]
    assert lines[2] == f"{old.id}  {local(old.timestamp)}  message  {old.content}"
    assert cli("archive", "--search", "nothing-like-this")[1] == "no archived memories match\n"
    assert cli("archive")[0] == 2  # one of --older-than / --search is required
    code, _, err = cli("archive", "--search", "", "--limit", "-1")
    assert code == 2 and "expected a whole number >= 0, got '-1'" in err
    assert cli.json("stats")["archived"] == 1


# --- export / import / stats ----------------------------------------------------------------


def test_export_import_round_trip(
    cli: Cli, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(cli, tmp_path, {"timestamp": now_ms() - 60 * DAY_MS, "content": "old archived fact"})
    cli.json("archive", "--older-than", "30")
    a = cli.add(LONG_TEXT, "--tag", "deploy", "--scope", "project:x", "--meta", "k=[1,2]")
    cli.add("short one", "--type", "user_feedback", "--ttl-ms", "86400000")
    cli("feedback", a["id"], "liked")

    code, exported, _ = cli("export")
    assert code == 0
    lines = exported.splitlines()
    assert lines[0] == HEADER
    assert sorted(json.loads(line)["kind"] for line in lines[1:]) == [
        "archived",
        "memory",
        "memory",
    ]
    target = tmp_path / "backup.jsonl"
    code, out, _ = cli("export", str(target))
    assert (code, out) == (0, f"exported 2 memories and 1 archived to {target}\n")
    assert target.read_text(encoding="utf-8") == exported
    assert cli.json("export", str(target)) == {"file": str(target), "memories": 2, "archived": 1}

    fresh = Cli(tmp_path / "fresh.db", capsys)
    code, out, _ = fresh("import", str(target))
    assert (code, out) == (0, f"imported {target}: 3 added, 0 replaced, 0 skipped "
                              "(1 of them archived)\n")  # fmt: skip
    assert fresh("export")[1] == exported
    assert fresh.json("get", a["id"])["feedback"]["liked"] == 1

    piped = Cli(tmp_path / "piped.db", capsys)
    monkeypatch.setattr(sys, "stdin", io.StringIO(exported))
    assert piped.json("import", "-") == {"added": 3, "replaced": 0, "skipped": 0, "archived": 1}
    assert piped("export")[1] == exported

    code, _, err = fresh("import", str(target))
    assert code == 1
    assert err.startswith("error [conflict]: 3 imported ids already exist")
    assert "hint: import --on-conflict skip|replace" in err
    assert fresh.json("import", str(target), "--on-conflict", "skip")["skipped"] == 3
    assert fresh.json("import", str(target), "--on-conflict", "replace")["replaced"] == 3
    assert fresh("export")[1] == exported


def test_import_and_export_errors(cli: Cli, tmp_path: Path) -> None:
    kept = cli.add("survives bad imports")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(HEADER + "\n{not json\n", encoding="utf-8")
    code, _, err = cli("import", str(bad))
    assert code == 1 and err.startswith("error [invalid_import]: line 2: not valid JSON")
    code, _, err = cli("import", str(tmp_path / "missing.jsonl"))
    assert code == 1 and err.startswith("error: ") and "missing.jsonl" in err
    code, _, err = cli("import", str(bad), "--on-conflict", "merge")
    assert code == 2 and "invalid choice: 'merge'" in err
    code, _, err = cli("export", str(tmp_path / "no-such-dir" / "out.jsonl"))
    assert code == 1 and err.startswith("error: ") and "Traceback" not in err
    assert not (tmp_path / "no-such-dir").exists()
    assert cli.json("list") == [kept]


def test_stats(cli: Cli, tmp_path: Path) -> None:
    code, out, _ = cli("stats")
    assert code == 0 and "memories    0" in out and "oldest      -" in out
    a = cli.add("a message")
    cli.add("pref", "--type", "user_preference", "--scope", "user")
    stats = cli.json("stats")
    assert stats["db"] == str(cli.db)
    assert stats["items"] == 2 and stats["archived"] == 0
    assert stats["by_type"] == {"message": 1, "user_preference": 1}
    assert stats["by_scope"] == {"global": 1, "user": 1}
    assert stats["oldest_ms"] == a["timestamp"]
    code, out, _ = cli("stats")
    fields = dict(line.split("  ", 1) for line in out.splitlines())
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    assert fields["db"] == str(cli.db)
    assert fields["memories"] == "2"
    assert fields["by type"] == "message 1, user_preference 1"
    assert fields["by scope"] == "global 1, user 1"
    assert fields["oldest"] == local(a["timestamp"])
    assert fields["schema"] == f"v{stats['schema_version']}"
