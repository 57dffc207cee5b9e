"""The command-line interface, driven in-process through ``main()`` and once as a subprocess."""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from cli_kit import DAY_MS, LONG_TEXT, Cli, ids, local, now_ms, seed

import pymemory
from pymemory.cli import default_db_path, main, parse_meta, parse_time


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(tmp_path / "memory.db", capsys)


# --- defaults and entry points ----------------------------------------------------------


def test_default_db_path_per_platform(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PYMEMORY_DB", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_db_path("linux") == tmp_path / "xdg" / "pymemory" / "memory.db"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")  # ignored, as the XDG spec says
    assert default_db_path("linux") == tmp_path / ".local" / "share" / "pymemory" / "memory.db"
    expected = tmp_path / "Library" / "Application Support" / "pymemory" / "memory.db"
    assert default_db_path("darwin") == expected
    monkeypatch.setenv("APPDATA", str(tmp_path / "Roaming"))
    assert default_db_path("win32") == tmp_path / "Roaming" / "pymemory" / "memory.db"
    monkeypatch.setenv("PYMEMORY_DB", str(tmp_path / "chosen.db"))
    assert default_db_path("linux") == tmp_path / "chosen.db"


def test_pymemory_db_env_is_the_default_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env_db = tmp_path / "env" / "memory.db"
    monkeypatch.setenv("PYMEMORY_DB", str(env_db))
    assert main(["add", "stored through the environment variable"]) == 0
    capsys.readouterr()
    assert env_db.exists()
    assert main(["--json", "list"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["content"] for r in rows] == ["stored through the environment variable"]
    # --db wins over the environment.
    assert main(["--db", str(tmp_path / "other.db"), "--json", "list"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_help_version_and_missing_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("add", "search", "list", "get", "forget", "feedback", "archive", "export",
                    "import", "stats"):  # fmt: skip
        assert command in out
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"pymemory {pymemory.__version__}"
    assert main([]) == 2
    assert "required: COMMAND" in capsys.readouterr().err


def test_python_dash_m_entry_point(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(pymemory.__file__).resolve().parents[1])}
    db = str(tmp_path / "sub.db")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pymemory", "--db", db, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )

    added = run("add", "The user prefers tabs over spaces", "--type", "user_preference")
    assert added.returncode == 0, added.stderr
    assert "user_preference" in added.stdout
    found = run("search", "tabs or spaces", "--json")
    assert found.returncode == 0, found.stderr
    memories = json.loads(found.stdout)["memories"]
    assert [m["item"]["content"] for m in memories] == ["The user prefers tabs over spaces"]
    missing = run("get", str(uuid.uuid4()))
    assert missing.returncode == 1
    assert missing.stderr.startswith("error [not_found]: no memory with id")
    assert "Traceback" not in missing.stderr
    assert run("frobnicate").returncode == 2


# --- add / get ----------------------------------------------------------------------------


def test_add_human_output(cli: Cli) -> None:
    code, out, err = cli(
        "add", "The user prefers dark mode", "--type", "user_preference", "--tag", "ui",
        "--tag", "editor", "--scope", "user",
    )  # fmt: skip
    assert (code, err) == (0, "")
    fields = dict(line.split(None, 1) for line in out.splitlines())
    uuid.UUID(fields["id"])
    assert fields["type"] == "user_preference"
    assert fields["scope"] == "user"
    assert fields["tags"] == "ui, editor"
    assert fields["content"] == "The user prefers dark mode"
    assert fields["summary"].startswith("no")


def test_add_json_with_metadata_and_ttl(cli: Cli) -> None:
    item = cli.add(
        "Ran the test suite", "--type", "tool_result", "--meta", "confidence=0.5",
        "--meta", "tool=pytest", "--meta", 'extra={"passed": 12}', "--ttl-ms", "60000",
    )  # fmt: skip
    assert set(item) == {
        "id", "type", "timestamp", "content", "content_method", "scope", "tags", "ttl_ms",
        "feedback", "metadata", "text", "summarized",
    }  # fmt: skip
    assert item["type"] == "tool_result"
    assert item["scope"] == "global"
    assert item["ttl_ms"] == 60000
    assert item["metadata"] == {
        "source": "cli", "confidence": 0.5, "references": [], "tool": "pytest",
        "extra": {"passed": 12},
    }  # fmt: skip
    assert item["summarized"] is False
    assert cli.json("get", item["id"]) == item


def test_add_long_text_is_summarised_and_get_shows_everything(cli: Cli) -> None:
    item = cli.add(LONG_TEXT, "--tag", "deploy")
    assert item["summarized"] is True
    assert item["text"] == LONG_TEXT
    assert 0 < len(item["content"]) <= 200
    assert item["content_method"] == "rules"
    code, out, _ = cli("get", item["id"])
    assert code == 0
    assert f"id        {item['id']}" in out
    assert f"created   {local(item['timestamp'])}" in out
    assert "expires   never" in out
    assert "feedback  liked 0, disliked 0, important no" in out
    assert f"content   {item['content']}" in out
    assert f"summary   yes (rules); full text kept, {len(LONG_TEXT)} chars" in out
    assert f"text      {LONG_TEXT}" in out


def test_add_reads_stdin(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("Remember the milk\n"))
    item = cli.add("-")
    assert item["text"] == "Remember the milk"
    assert item["content"] == "Remember the milk"


def test_expired_memory_is_not_found(cli: Cli) -> None:
    item = cli.add("short-lived note", "--ttl-ms", "1")
    time.sleep(0.01)
    code, _, err = cli("get", item["id"])
    assert code == 1
    assert err.startswith("error [not_found]:") and "expired" in err


def test_unknown_id_is_not_found(cli: Cli) -> None:
    missing = str(uuid.uuid4())
    for args in (["get", missing], ["forget", missing], ["feedback", missing, "liked"]):
        code, out, err = cli(*args)
        assert (code, out) == (1, "")
        assert err == f"error [not_found]: no memory with id '{missing}'\n"


def test_bad_input_fails_and_leaves_the_store_unchanged(cli: Cli) -> None:
    kept = cli.add("the only memory")
    code, out, err = cli("add", "never stored", "--type", "bogus")
    assert (code, out) == (2, "")
    assert "argument --type: invalid choice: 'bogus'" in err
    assert "user_preference" in err  # the valid types are listed
    code, _, err = cli("add", "never stored", "--scope", "no spaces allowed")
    assert code == 1
    assert err.startswith("error [invalid_input]: scope must be")
    code, _, err = cli("add", "   ")
    assert (code, err) == (1, "error [invalid_input]: text must not be empty\n")
    code, _, err = cli("add", "never stored", "--meta", "no-equals-sign")
    assert code == 2 and "expected KEY=VALUE" in err
    code, _, err = cli("list", "--type", "bogus")
    assert code == 2 and "invalid choice" in err
    assert cli.json("list") == [kept]


def test_library_error_exit_codes_never_show_a_traceback(cli: Cli) -> None:
    code, _, err = cli("search", "x", "--hours", "0")
    assert (code, err) == (1, "error [invalid_strategy]: time_window.hours must be > 0\n")
    code, _, err = cli("search", "x", "--max-items", "0")
    assert code == 1 and err.startswith("error [invalid_input]: max_items must be an int >= 1")


# --- list / search ----------------------------------------------------------------------


def test_list_newest_first_with_filters(cli: Cli, tmp_path: Path) -> None:
    t = now_ms() - 10 * DAY_MS
    a, b, c, d = seed(
        cli,
        tmp_path,
        {"timestamp": t, "content": "oldest", "scope": "user", "tags": ["x"]},
        {"timestamp": t + 1000, "content": "second", "type": "tool_result"},
        {"timestamp": t + 2000, "content": "third", "scope": "user", "tags": ["y"]},
        {"timestamp": t + 3000, "content": "newest", "tags": ["x", "y"]},
    )
    assert ids(cli.json("list")) == [d.id, c.id, b.id, a.id]
    assert ids(cli.json("list", "--limit", "2")) == [d.id, c.id]
    assert ids(cli.json("list", "--scope", "user")) == [c.id, a.id]
    assert ids(cli.json("list", "--type", "tool_result")) == [b.id]
    assert ids(cli.json("list", "--tag", "x")) == [d.id, a.id]
    assert ids(cli.json("list", "--tag", "x", "--scope", "user")) == [a.id]
    code, out, _ = cli("list", "--scope", "user")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["id", "created", "type", "scope", "tags", "content"]
    assert set(lines[1]) == {"-", " "}
    assert lines[2] == f"{c.id}  {local(c.timestamp)}  message  user   y     third"
    assert lines[3] == f"{a.id}  {local(a.timestamp)}  message  user   x     oldest"
    assert len(lines) == 4
    code, out, _ = cli("list", "--scope", "nobody")
    assert (code, out) == (0, "no memories\n")


def test_global_options_after_the_command(cli: Cli, tmp_path: Path) -> None:
    item = cli.add("placed options")
    code, out, _ = cli("list", "--json")
    assert code == 0 and ids(json.loads(out)) == [item["id"]]
    other = tmp_path / "other.db"
    code, out, _ = cli("list", "--db", str(other), "--json")
    assert code == 0 and json.loads(out) == []
    assert other.exists()


def test_search_ranks_with_scores_and_filters(cli: Cli, tmp_path: Path) -> None:
    old = now_ms() - 3 * DAY_MS
    seed(cli, tmp_path, {"timestamp": old, "content": "dark mode for the terminal too"})
    pref = cli.add("The user prefers dark mode in the editor", "--type", "user_preference")
    cli.add("Lunch is at noon", "--tag", "food")
    result = cli.json("search", "dark mode editor")
    assert set(result) == {
        "query", "mode", "memories", "text", "tokens_used", "max_tokens", "max_items",
        "token_counter", "trace", "strategy", "notes", "window", "inject",
    }  # fmt: skip
    assert result["mode"] == "bm25"
    assert result["strategy"] is None and result["trace"] is None
    memories = result["memories"]
    assert memories[0]["item"]["id"] == pref["id"]
    assert [m["item"]["content"] for m in memories] == [
        "The user prefers dark mode in the editor",
        "dark mode for the terminal too",
    ]
    for m in memories:
        product = m["relevance"] * m["decay"] * m["feedback_weight"] * m["time_match"]
        assert m["score"] == pytest.approx(product)
        assert m["relevance"] == pytest.approx(m["lexical_part"] + m["dense_part"])
    # Neither a message nor a preference fades by default (relevance decides).
    assert memories[1]["decay"] == memories[0]["decay"] == 1.0
    # The text: each memory's block under a line per day; its tokens counted exactly.
    assert sum(m["tokens"] for m in memories) < result["tokens_used"] <= 1500
    assert all(m["line"] in result["text"] for m in memories)
    assert result["inject"] == "passages"

    recent = cli.json("search", "dark mode", "--hours", "24")
    assert [m["item"]["id"] for m in recent["memories"]] == [pref["id"]]
    assert recent["strategy"] == {
        "kind": "compose",
        "strategies": [{"kind": "time_window", "hours": 24.0, "since_ms": None, "until_ms": None}],
    }
    typed = cli.json("search", "", "--type", "message", "--tag", "food")
    assert typed["mode"] == "recency"
    assert [m["item"]["content"] for m in typed["memories"]] == ["Lunch is at noon"]

    one = cli.json("search", "dark mode editor", "--max-items", "1")
    code, out, _ = cli("search", "dark mode editor", "--max-items", "1")
    assert code == 0
    lines = out.splitlines()
    m = one["memories"][0]
    assert lines[0] == f"1 memory · {one['tokens_used']}/1500 tokens (o200k_base) · max 1 item · " + (
        "ranked by bm25"
    )
    assert lines[2].startswith(f"1. {pref['id']}  user_preference  global  ")
    assert lines[3] == "   The user prefers dark mode in the editor"
    assert lines[4].startswith(
        f"   score {m['score']:.3f} = relevance {m['relevance']:.3f} × decay "
    )
    assert lines[4].endswith(f"· {m['tokens']} tokens")


def test_search_trace_shows_why_candidates_were_cut(cli: Cli) -> None:
    best = cli.add("dark mode dark mode everywhere", "--scope", "user")
    second = cli.add("dark mode in the editor", "--scope", "user")
    other = cli.add("dark mode toggle is broken", "--scope", "conversation")
    cli.add("nothing relevant here", "--scope", "user")
    result = cli.json("search", "dark mode", "--scope", "user", "--max-items", "1", "--trace")
    status = {r["id"]: r["status"] for r in result["trace"] if r["status"] != "no_match"}
    assert status == {best["id"]: "included", second["id"]: "max_items", other["id"]: "scope"}
    assert {r["status"] for r in result["trace"]} >= {"no_match"}  # the unrelated item
    assert [m["item"]["id"] for m in result["memories"]] == [best["id"]]
    included = next(r for r in result["trace"] if r["status"] == "included")
    assert included["tokens"] < result["tokens_used"]  # its block; the day line besides
    prompt = cli("search", "dark mode", "--scope", "user", "--max-items", "1", "--prompt")[1]
    assert prompt.rstrip("\n") == result["text"] and best["text"] in prompt

    tight = cli.json("search", "dark mode", "--max-tokens", "3", "--trace")
    assert tight["memories"] == []
    assert {r["status"] for r in tight["trace"]} - {"no_match"} == {"token_budget"}

    code, out, _ = cli("search", "dark mode", "--scope", "user", "--max-items", "1", "--trace")
    assert code == 0
    trace = out[out.index("trace: 4 candidates, best first") :].splitlines()
    assert trace[1].split() == [
        "#", "status", "score", "relevance", "bm25", "decay", "feedback", "tokens", "id",
        "content",
    ]  # fmt: skip
    rows = {line.split()[8]: line.split()[1] for line in trace[3:]}
    assert {k: v for k, v in rows.items() if v != "no_match"} == status
    assert any(line.split()[7] == "-" for line in trace[3:])  # no tokens counted when cut


# --- argument parsing helpers --------------------------------------------------------------


def test_parse_meta() -> None:
    assert parse_meta("n=3") == ("n", 3)
    assert parse_meta("flag=true") == ("flag", True)
    assert parse_meta("who=ada") == ("who", "ada")
    assert parse_meta("eq=a=b") == ("eq", "a=b")
    assert parse_meta("x=NaN") == ("x", "NaN")  # not a JSON number
    for bad in ("novalue", "=1"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_meta(bad)


def test_parse_time() -> None:
    assert parse_time("1700000000000") == 1_700_000_000_000
    assert parse_time("2024-01-02T03:04:05.678+00:00") == 1_704_164_645_678
    assert parse_time("2024-01-02T03:04:05Z") == 1_704_164_645_000
    midnight = dt.datetime(2024, 1, 2).timestamp() * 1000  # local time
    assert parse_time("2024-01-02") == round(midnight)
    with pytest.raises(argparse.ArgumentTypeError):
        parse_time("last tuesday")
