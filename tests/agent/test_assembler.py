import asyncio
import hashlib
import json

import pytest

from pymemory.agent.assembler import MessageAssembler
from pymemory.agent.block_tools import core_memory_tools
from pymemory.agent.blocks import MemoryBlockSet
from pymemory.agent.tools import Tool, ToolResult, ToolSet
from pymemory.errors import ConflictError, ValidationError
from pymemory.item import dumps
from pymemory.retrieval.tokens import HeuristicTokenCounter


async def _noop(args):
    return ToolResult("ok")


SEARCH = Tool(
    name="search",
    description="Search the web.",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    handler=_noop,
)


def blocks() -> MemoryBlockSet:
    return MemoryBlockSet([{"label": "human", "value": "Name: Ana."}])


def step(i: int) -> list[dict]:
    return [
        {"role": "assistant", "content": f"thinking {i}"},
        {"role": "tool", "content": f"result {i}", "tool_call_id": f"c{i}"},
    ]


class Recorder:
    def __init__(self, reply: str = "SUMMARY") -> None:
        self.calls: list[list[dict]] = []
        self.reply = reply

    async def __call__(self, messages):
        self.calls.append(messages)
        return f"{self.reply} {len(self.calls)}"


def first_bytes(asm: MessageAssembler) -> bytes:
    return dumps(asm.build()[0]).encode("utf-8")


async def test_prefix_is_byte_stable_across_block_scratchpad_and_step_edits():
    b = blocks()
    asm = MessageAssembler(
        "You are a helpful assistant.",
        [*core_memory_tools(b), SEARCH],
        memory_blocks=b,
        chunk_size_steps=2,
    )
    first, prefix, digest = first_bytes(asm), asm.prefix_bytes(), asm.prefix_hash()
    tools_before = json.dumps(asm.tool_schemas())
    blocks_before = asm.build()[1]["content"]

    await b.append("human", "Lives in Porto.")
    await ToolSet(core_memory_tools(b)).call(
        "core_memory_replace", {"label": "human", "old_content": "Ana", "new_content": "Ana Lima"}
    )
    await b.add({"label": "task", "value": "Book a flight."})
    asm.set_scratchpad("todo: check prices")
    for i in range(5):
        asm.add_step(step(i))
    await asm.compact(Recorder(), keep_chunks=0)
    asm.set_scratchpad("todo: pay")

    built = asm.build()
    assert built[1]["content"] != blocks_before  # the blocks did change ...
    assert "Ana Lima" in built[1]["content"] and "<task>" in built[1]["content"]
    assert first_bytes(asm) == first  # ... and the prefix bytes did not
    assert asm.prefix_bytes() == prefix
    assert asm.prefix_hash() == digest == hashlib.sha256(prefix).hexdigest()
    assert json.dumps(asm.tool_schemas()) == tools_before


def test_prefix_is_canonical():
    a = MessageAssembler("sys", [{"name": "t", "b": 1, "a": {"y": 2, "x": 1}}])
    b = MessageAssembler("sys", [{"a": {"x": 1, "y": 2}, "b": 1, "name": "t"}])
    assert (
        a.prefix_bytes()
        == b.prefix_bytes()
        == (b'{"system":"sys","tools":[{"a":{"x":1,"y":2},"b":1,"name":"t"}]}')
    )
    assert a.prefix_hash() == b.prefix_hash()
    assert MessageAssembler("sys2", []).prefix_hash() != MessageAssembler("sys", []).prefix_hash()


def test_tool_formats_and_copies():
    asm = MessageAssembler("s", ToolSet([SEARCH]))
    assert asm.tool_schemas() == [SEARCH.openai_schema()]
    asm.tool_schemas()[0]["function"]["name"] = "changed"
    assert asm.tool_schemas()[0]["function"]["name"] == "search"
    anth = MessageAssembler("s", [SEARCH], tool_format="anthropic")
    assert anth.tool_schemas() == [SEARCH.anthropic_schema()]
    assert anth.prefix_hash() != asm.prefix_hash()


async def test_build_layout():
    b = blocks()
    asm = MessageAssembler("sys", memory_blocks=b)
    asm.add_step({"role": "user", "content": "hi"})
    asm.add_step(step(1))
    asm.set_scratchpad("plan: greet")
    msgs = asm.build()
    assert [m["role"] for m in msgs] == ["system", "user", "user", "assistant", "tool", "user"]
    assert msgs[0] == {"role": "system", "content": "sys"}
    assert msgs[1] == b.message()
    assert msgs[4]["tool_call_id"] == "c1"  # extra keys pass through
    assert msgs[-1]["content"] == "<scratchpad>\nplan: greet\n</scratchpad>"
    msgs[3]["content"] = "mutated"
    assert asm.build()[3]["content"] == "thinking 1"  # build() returns copies
    asm.set_scratchpad(None)
    assert asm.build()[-1]["role"] == "tool"
    asm.set_scratchpad("")
    assert asm.scratchpad is None
    assert [m["role"] for m in MessageAssembler("sys").build()] == ["system"]


def test_scratchpad_limit_refuses_not_truncates():
    asm = MessageAssembler("sys", scratchpad_limit=10)
    asm.set_scratchpad("0123456789")
    with pytest.raises(ValidationError, match="over scratchpad_limit=10"):
        asm.set_scratchpad("0123456789!")
    assert asm.scratchpad == "0123456789"
    with pytest.raises(ValidationError):
        asm.set_scratchpad(5)


def test_chunks_and_breakpoints():
    asm = MessageAssembler("sys", memory_blocks=blocks(), chunk_size_steps=2)
    for i in range(5):
        assert asm.add_step(step(i)) == i
    chunks = asm.chunks()
    assert [len(c) for c in chunks] == [2, 2, 1]
    assert chunks[1][0] == step(2)
    # system=0, blocks=1, steps take 2 messages each: chunk ends at 1+4=5 and 1+8=9.
    assert asm.cache_breakpoints() == [0, 5, 9]
    msgs = asm.build()
    assert msgs[5]["content"] == "result 1" and msgs[9]["content"] == "result 3"


async def test_compact_folds_whole_old_chunks():
    asm = MessageAssembler("sys", chunk_size_steps=2)
    for i in range(7):
        asm.add_step(step(i))
    rec = Recorder()
    assert await asm.compact(rec) == 4  # 3 complete chunks, keep the newest: fold 2 chunks
    assert rec.calls[0] == [m for i in range(4) for m in step(i)]
    assert asm.step_count == 3 and asm.compacted_steps == 4
    msgs = asm.build()
    assert msgs[1]["role"] == "user"
    assert msgs[1]["content"] == (
        "<summary_of_earlier_steps count=4>\nSUMMARY 1\n</summary_of_earlier_steps>"
    )
    assert msgs[2]["content"] == "thinking 4"
    assert asm.cache_breakpoints() == [0, 5]  # the chunk grid did not shift
    assert asm.add_step(step(7)) == 7

    # The next compaction folds the previous summary with the next chunk.
    assert await asm.compact(rec) == 2
    assert rec.calls[1][0]["content"].startswith("<summary_of_earlier_steps count=4>")
    assert rec.calls[1][1:] == step(4) + step(5)
    assert asm.summary == "SUMMARY 2" and asm.compacted_steps == 6


async def test_compact_with_nothing_to_fold_does_not_call():
    asm = MessageAssembler("sys", chunk_size_steps=3)
    for i in range(5):
        asm.add_step(step(i))
    rec = Recorder()
    assert await asm.compact(rec) == 0  # one complete chunk, and it is kept
    assert rec.calls == [] and asm.step_count == 5
    assert await asm.compact(rec, keep_chunks=0) == 3  # the incomplete chunk is never folded
    assert asm.step_count == 2


async def test_failed_summarizer_changes_nothing():
    asm = MessageAssembler("sys", chunk_size_steps=1)
    for i in range(3):
        asm.add_step(step(i))
    before = asm.build()

    async def boom(messages):
        raise RuntimeError("model down")

    async def empty(messages):
        return "  "

    with pytest.raises(RuntimeError):
        await asm.compact(boom)
    with pytest.raises(ValidationError, match="non-empty"):
        await asm.compact(empty)
    assert asm.build() == before and asm.compacted_steps == 0


async def test_steps_added_during_compaction_survive():
    asm = MessageAssembler("sys", chunk_size_steps=1)
    for i in range(3):
        asm.add_step(step(i))
    gate = asyncio.Event()

    async def slow(messages):
        await gate.wait()
        return "S"

    task = asyncio.create_task(asm.compact(slow))
    await asyncio.sleep(0)
    asm.add_step(step(3))
    with pytest.raises(ConflictError):
        asm.load_state(asm.export_state())
    gate.set()
    assert await task == 2
    assert [s[0]["content"] for s in asm.steps()] == ["thinking 2", "thinking 3"]


@pytest.mark.parametrize(
    "bad",
    [
        [],
        "hello",
        {"role": "system", "content": "sneaky"},
        {"role": "user"},
        [{"role": "user", "content": "ok"}, "nope"],
        {"role": "user", "content": float("inf")},
        {"role": "user", "content": {1: "x"}},
    ],
)
def test_bad_steps_are_refused(bad):
    asm = MessageAssembler("sys")
    asm.add_step({"role": "user", "content": "ok"})
    with pytest.raises(ValidationError):
        asm.add_step(bad)
    assert asm.step_count == 1


def test_constructor_validation():
    with pytest.raises(ValidationError):
        MessageAssembler(None)
    with pytest.raises(ValidationError):
        MessageAssembler("s", chunk_size_steps=0)
    with pytest.raises(ValidationError):
        MessageAssembler("s", tool_format="gemini")
    with pytest.raises(ValidationError):
        MessageAssembler("s", [object()])
    with pytest.raises(ValidationError):
        MessageAssembler("s", memory_blocks={"human": "x"})


async def test_state_round_trip():
    asm = MessageAssembler("sys", chunk_size_steps=1)
    for i in range(3):
        asm.add_step(step(i))
    await asm.compact(Recorder(), keep_chunks=1)
    asm.set_scratchpad("note")
    state = json.loads(json.dumps(asm.export_state()))
    other = MessageAssembler("sys", chunk_size_steps=1)
    other.load_state(state)
    assert other.build() == asm.build()
    assert other.compacted_steps == 2 and other.add_step(step(9)) == 3

    broken = dict(state, summary=None)
    with pytest.raises(ValidationError):
        other.load_state(broken)
    with pytest.raises(ValidationError):
        other.load_state(dict(state, steps=[[{"role": "system", "content": "x"}]]))
    assert other.step_count == 2  # failed loads changed nothing


def test_token_count_grows_with_content():
    counter = HeuristicTokenCounter()
    asm = MessageAssembler("You are helpful.", [SEARCH])
    base = asm.token_count(counter)
    assert base == counter.count("You are helpful.") + counter.count(
        json.dumps(asm.tool_schemas(), separators=(",", ":"), sort_keys=True)
    )
    asm.add_step({"role": "user", "content": "Where is the nearest train station?"})
    assert asm.token_count() == base + counter.count("Where is the nearest train station?")


async def test_recalled_memories_carry_retrieves_evidence_after_the_steps():
    from pymemory import Memory
    from pymemory.storage import MapKv

    memory = await Memory.open(MapKv())
    await memory.add(
        "Ana: First the billing export.\nBen: When does the permissions module go live?\n"
        "Ana: Next Tuesday, after the security review.\n" + "Ben: Small talk here.\n" * 40
    )
    found = await memory.retrieve("permissions module go live", max_tokens=120)
    asm = MessageAssembler("You are helpful.")
    asm.add_step({"role": "user", "content": "hi"})
    prefix = asm.prefix_bytes()
    asm.set_recalled(found)
    msgs = asm.build()
    assert msgs[-1]["role"] == "user"
    assert msgs[-1]["content"] == f"<recalled_memories>\n{found.text}\n</recalled_memories>"
    assert "Next Tuesday" in msgs[-1]["content"] and asm.prefix_bytes() == prefix
    asm.set_recalled("")
    assert asm.recalled is None and asm.build()[-1]["content"] == "hi"
    with pytest.raises(ValidationError):
        asm.set_recalled(42)  # type: ignore[arg-type]
    await memory.close()
