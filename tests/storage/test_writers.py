"""Two writers on one store: two real OS processes, each with its own Memory (and agent
primitives) on one SQLite file (issue 12). Each test is named after a scenario that went
wrong before: the steps run in the order the scenario describes, and the racing ones have
both processes hammer the store at the same moment.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

PEER = Path(__file__).with_name("writers_peer.py")


class Peer:
    """One writer process (tests/storage/writers_peer.py) over the store at ``path``."""

    def __init__(self, path: Path, name: str) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, str(PEER), str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
        assert self._read() == {"ready": True}

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        assert line, f"peer {self.name} died"
        return json.loads(line)

    def send(self, call: str, *args, repeat: int | None = None, **kwargs) -> None:
        command = {"call": call, "args": list(args), "kwargs": kwargs}
        if repeat is not None:
            command["repeat"] = repeat
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def answer(self) -> dict:
        return self._read()

    def __call__(self, call: str, *args, **kwargs):
        """Run one call and return its result (or raise AssertionError with its error)."""
        self.send(call, *args, **kwargs)
        answer = self.answer()
        assert answer["ok"], f"{self.name}: {call} failed: {answer}"
        return answer["result"]

    def fails(self, call: str, *args, **kwargs) -> dict:
        self.send(call, *args, **kwargs)
        answer = self.answer()
        assert not answer["ok"], f"{self.name}: {call} should have failed: {answer}"
        return answer

    def reopen(self, path: Path) -> None:
        self.proc.stdin.write(json.dumps({"reopen": str(path)}) + "\n")
        self.proc.stdin.flush()
        assert self._read() == {"ready": True}

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        self.proc.stdout.close()


def race(a: Peer, b: Peer, call: str, *args, **kwargs) -> tuple[dict, dict]:
    """Send the same call to both peers before reading either answer."""
    a.send(call, *args, **kwargs)
    b.send(call, *args, **kwargs)
    return a.answer(), b.answer()


@pytest.fixture
def store(tmp_path) -> Path:
    return tmp_path / "shared.db"


@pytest.fixture(scope="module")
def processes(tmp_path_factory):
    first = tmp_path_factory.mktemp("writers") / "first.db"
    a, b = Peer(first, "A"), Peer(first, "B")
    yield a, b
    a.close()
    b.close()


@pytest.fixture
def peers(processes, store):
    """Two writer processes, each with a Memory on this test's fresh SQLite file."""
    for peer in processes:
        peer.reopen(store)
    return processes


# --- the scenarios of issue 12 -------------------------------------------------------


def test_a_never_saw_bs_add(peers):
    """A never saw B's add (get -> NotFoundError). Now A's get, list and retrieve do."""
    a, b = peers
    a("memory.list")  # A has loaded its view before B writes
    item = b("memory.add", "The launch code word is pineapple", tags=["secret"])
    assert a("memory.get", item["id"])["content"] == item["content"]
    assert [i["id"] for i in a("memory.list")] == [item["id"]]
    assert a("memory.retrieve", "launch code word")["ids"] == [item["id"]]
    assert a("memory.stats")["items"] == 1


def test_as_durable_feedback_after_bs_update_keeps_the_update(peers):
    """A's durable feedback after B's update reverted B's update (tags and content lost)."""
    a, b = peers
    item = a("memory.add", "Meeting notes from Monday", tags=["meeting"])
    b("memory.get", item["id"])
    b("memory.update", item["id"], content="Monday: roles agreed", tags=["meeting", "roles"])
    a("memory.feedback", item["id"], "liked", durable=True)
    for peer in (a, b):
        got = peer("memory.get", item["id"])
        assert got["content"] == "Monday: roles agreed"
        assert got["tags"] == ["meeting", "roles"]
        assert got["feedback"]["liked"] == 1
        assert got["version"] == 3  # added, updated, liked


def test_one_like_from_each_adds_up(peers):
    """One like from each ended as liked=1; now the counts add up, even racing."""
    a, b = peers
    item = a("memory.add", "A useful answer")
    b("memory.get", item["id"])
    a("memory.feedback", item["id"], "liked")  # batched, not written yet
    b("memory.feedback", item["id"], "liked")
    a("memory.flush")
    b("memory.flush")
    assert a("memory.get", item["id"])["feedback"]["liked"] == 2
    answers = race(a, b, "memory.feedback", item["id"], "liked", durable=True, repeat=50)
    assert all(x["ok"] for x in answers)
    for peer in (a, b):
        assert peer("memory.get", item["id"])["feedback"]["liked"] == 102


def test_bs_feedback_after_as_delete_does_not_resurrect_it(peers):
    """B's feedback after A's delete resurrected the deleted item."""
    a, b = peers
    item = a("memory.add", "Forget me")
    b("memory.get", item["id"])
    b("memory.feedback", item["id"], "important")  # pending in B
    a("memory.delete", item["id"])
    assert b("memory.flush") == 0  # the pending feedback is dropped, not written back
    assert b.fails("memory.get", item["id"])["code"] == "not_found"
    assert b.fails("memory.feedback", item["id"], "liked", durable=True)["code"] == "not_found"
    assert b.fails("memory.update", item["id"], tags=["x"])["code"] == "not_found"
    assert "Forget me" not in a("export") and "Forget me" not in b("export")
    assert a("memory.stats")["items"] == b("memory.stats")["items"] == 0


def test_as_clear_all_removes_bs_items(peers):
    """A's clear(all=True) left B's item in the store."""
    a, b = peers
    a("memory.add", "from A")
    a("memory.list")
    b("memory.add", "from B, written after A last looked")
    b("memory.add_many", [{"text": f"B bulk {i}", "timestamp": 1_000_000} for i in range(30)])
    assert b("memory.archive_older_than", 1) == 30
    assert a("memory.stats")["archived"] == 30
    assert a("memory.clear", all=True) == 32  # A's, B's and B's 30 archived ones
    for peer in (a, b):
        assert peer("memory.list") == []
        assert peer("memory.stats")["archived"] == 0
        assert peer("memory.search_archive") == []
    assert a("export").count("\n") == 1  # the header only


def test_as_import_with_on_conflict_error_refuses_bs_item(peers):
    """A's import_(on_conflict="error") silently replaced B's item."""
    a, b = peers
    a("memory.list")
    item = b("memory.add", "B's original text")
    dump = b("export").replace("B's original text", "an imported replacement")
    assert a.fails("memory.import_", dump)["code"] == "conflict"
    assert b("memory.get", item["id"])["content"] == "B's original text"
    assert a("memory.import_", dump, on_conflict="skip")["skipped"] == 1
    assert a("memory.import_", dump, on_conflict="replace")["replaced"] == 1
    replaced = b("memory.get", item["id"])
    assert replaced["content"] == "an imported replacement"
    assert replaced["version"] == 2


def test_other_process_sees_a_clear_and_retrieves_none_of_it(peers):
    """After B cleared everything, A's retrieve still returned the pineapple code word:
    the two-process form of the two-tab scenario."""
    a, b = peers
    a("memory.add", "The launch code word is pineapple", scope="conversation")
    a("memory.add", "Keep this preference", scope="user")
    assert b("memory.retrieve", "launch code word pineapple")["ids"]
    assert a("memory.retrieve", "pineapple")["ids"]
    assert b("memory.clear", scope="conversation") == 1
    result = a("memory.retrieve", "launch code word pineapple")
    assert "pineapple" not in result["text"] and result["ids"] == []
    assert [i["content"] for i in a("memory.list")] == ["Keep this preference"]


def test_two_adders_at_once_both_see_all(peers):
    a, b = peers
    answers = race(a, b, "memory.add_many", [{"text": f"note {i}"} for i in range(100)], repeat=3)
    assert all(x["ok"] for x in answers)
    for peer in (a, b):
        assert len(peer("memory.list")) == 600
        assert peer("memory.stats")["items"] == 600


def test_stale_update_with_expected_version_conflicts(peers):
    a, b = peers
    item = a("memory.add", "v1 text")
    b("memory.update", item["id"], tags=["b"])
    conflict = a.fails("memory.update", item["id"], content="A's edit", expected_version=1)
    assert conflict["code"] == "conflict"
    assert a("memory.get", item["id"])["tags"] == ["b"]
    assert a("memory.update", item["id"], content="A's edit", expected_version=2)["version"] == 3


def test_racing_updates_of_different_fields_both_land(peers):
    a, b = peers
    item = a("memory.add", "shared item")
    a.send("memory.update", item["id"], tags=["from-a"], repeat=20)
    b.send("memory.update", item["id"], metadata={"from": "b"}, repeat=20)
    assert a.answer()["ok"] and b.answer()["ok"]
    for peer in (a, b):
        got = peer("memory.get", item["id"])
        assert got["tags"] == ["from-a"] and got["metadata"]["from"] == "b"
        assert got["version"] == 41


def test_forgotten_text_leaves_the_sqlite_files(peers, store):
    """Forget means gone: after delete and clear, the text is in no file of the store
    (secure_delete zeroes the records, the WAL is checkpointed and truncated)."""
    a, b = peers
    keep = a("memory.add", "an ordinary note")
    gone = a("memory.add", "zanzibar-7741 is the vault combination")
    b("memory.retrieve", "vault combination")  # B has it in memory
    b("memory.add", "mangosteen-5512 conversation detail", scope="conversation")
    a("memory.delete", gone["id"])
    b("memory.clear", scope="conversation")
    assert b("memory.retrieve", "vault combination zanzibar")["ids"] == []
    blob = b"".join(p.read_bytes() for p in store.parent.glob(store.name + "*"))
    assert b"zanzibar-7741" not in blob and b"mangosteen-5512" not in blob
    assert b"an ordinary note" in blob  # the check can see text that is there
    assert a("memory.get", keep["id"])["content"] == "an ordinary note"


def test_racing_updates_from_two_processes_keep_every_version_in_history(peers, store):
    """Item history with two writers: each update keeps the version it replaced, in one
    transaction with the update, so racing updates leave one gapless history; a delete
    in the other process erases all of it, from the files too."""
    a, b = peers
    item = a("memory.add", "ledger entry 0")
    a.send("memory.update", item["id"], text="ledger entry from A", repeat=15)
    b.send("memory.update", item["id"], text="ledger entry from B", repeat=15)
    assert a.answer()["ok"] and b.answer()["ok"]
    versions = b("memory.history", item["id"])
    assert [v["item"].get("version", 1) for v in versions] == list(range(1, 32))
    assert versions[0]["item"]["content"] == "ledger entry 0"
    assert all(v["valid_to"] == w["valid_from"] for v, w in itertools.pairwise(versions))
    assert versions[-1]["valid_to"] is None
    a("memory.delete", item["id"])
    assert b.fails("memory.history", item["id"])["code"] == "not_found"
    blob = b"".join(p.read_bytes() for p in store.parent.glob(store.name + "*"))
    assert b"ledger entry" not in blob


# --- the agent primitives ------------------------------------------------------------


def test_two_block_appends_keep_both(peers):
    """Two block appends lost one."""
    a, b = peers
    a("open_blocks")
    b("open_blocks")
    a("blocks.append", "log", "from A")
    b("blocks.append", "log", "from B")
    answers = race(a, b, "blocks.append", "log", "line", repeat=100)
    assert all(x["ok"] for x in answers)
    a("blocks.refresh")
    value = a("blocks.get", "log")["value"]
    assert value.startswith("from A\nfrom B\n")
    assert value.count("line") == 200


def test_two_simultaneous_structured_puts_keep_every_version(peers):
    """Two simultaneous StructuredMemory.put of one key lost a version from history."""
    a, b = peers
    answers = race(a, b, "structured.put", "semantic", "plan", {"step": 1}, repeat=100)
    assert all(x["ok"] for x in answers)
    history = a("structured.history", "semantic", "plan")
    assert [e["version"] for e in history] == list(range(1, 201))
    assert sum(e["valid_to"] is None for e in history) == 1


def test_two_memory_tool_creates_of_one_path_one_fails(peers):
    """Two memory-tool creates of one path both reported success."""
    a, b = peers
    args = {"command": "create", "path": "/memories/notes.md", "file_text": "A's notes"}
    first = a("tool.call", args)
    second = b("tool.call", {**args, "file_text": "B's notes"})
    assert not first["is_error"] and second["is_error"]
    assert "already exists" in second["content"]
    outcomes = []
    for i in range(40):
        path = f"/memories/race-{i}.md"
        ra, rb = race(a, b, "tool.call", {"command": "create", "path": path, "file_text": "x"})
        outcomes.append(sorted([ra["result"]["is_error"], rb["result"]["is_error"]]))
    assert outcomes == [[False, True]] * 40
    view = a("tool.call", {"command": "view", "path": "/memories/notes.md"})
    assert "A's notes" in view["content"]


def test_observation_seq_ids_are_unique_across_writers(peers):
    a, b = peers
    answers = race(a, b, "observe", "the user asked for a CSV export of the sales table", repeat=10)
    assert all(x["ok"] for x in answers)
    seqs = [o["seq_id"] for o in a("observer.list")]
    assert seqs == list(range(1, 21))


def test_checkpoints_of_one_run_from_two_writers_get_distinct_seqs(peers):
    a, b = peers
    answers = race(a, b, "checkpoints.save", "run-1", {"step": "x"}, repeat=25)
    assert all(x["ok"] for x in answers)
    seqs = [c["seq"] for c in a("checkpoints.list", "run-1")]
    assert seqs == list(range(1, 51))
    assert a("checkpoints.latest", "run-1")["seq"] == 50


def test_memory_kv_tool_racing_writes_create_a_key_once(peers):
    a, b = peers
    outcomes = []
    for i in range(30):
        args = {"operation": "write", "key": f"k{i}", "text": "x"}
        ra, rb = race(a, b, "kvtool.call", args)
        outcomes.append(
            sorted([ra["result"]["artifact"]["outcome"], rb["result"]["artifact"]["outcome"]])
        )
    assert outcomes == [["created", "updated"]] * 30
    assert "30 memories" in a("kvtool.call", {"operation": "list"})["content"]


# --- what held before: keep it true ---------------------------------------------------


def test_kill_9_of_a_writer_mid_batch_loses_nothing_acknowledged(store, tmp_path):
    """SIGKILL a Memory writer while it writes batches; the other process's view and a
    fresh open hold every acknowledged batch whole and no partial one."""
    reader = Peer(store, "reader")
    try:
        acked: dict[int, set[str]] = {}
        for round_no in range(8):
            writer = subprocess.Popen(
                [sys.executable, "-c", SPIN, str(store)],
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, "PYTHONPATH": os.getcwd()},
            )
            lines = [json.loads(writer.stdout.readline()) for _ in range(2 + round_no % 3)]
            writer.send_signal(signal.SIGKILL)
            writer.wait()
            lines += [json.loads(x) for x in writer.stdout.read().splitlines()]
            writer.stdout.close()
            for ack in lines:
                acked[(round_no, ack["ack"])] = set(ack["ids"])
            by_batch: dict[str, set[str]] = {}
            for item in reader("memory.list"):
                by_batch.setdefault(item["tags"][0], set()).add(item["id"])
            assert all(len(ids) == 200 for ids in by_batch.values()), "a partial batch"
            seen = set().union(*by_batch.values())
            assert all(ids <= seen for ids in acked.values()), "an acknowledged batch lost"
            assert len(seen) == 200 * len(by_batch)
    finally:
        reader.close()


SPIN = """
import asyncio, json, sys, uuid
from pymemory import Memory

async def main(path):
    memory = await Memory.open(path)
    tag = uuid.uuid4().hex[:8]
    batch = 0
    while True:
        items = await memory.add_many(
            [{"text": f"round {tag} batch {batch} item {i}", "tags": [f"{tag}-{batch}"]}
             for i in range(200)])
        print(json.dumps({"ack": batch, "ids": [i.id for i in items]}), flush=True)
        batch += 1

asyncio.run(main(sys.argv[1]))
"""
