"""The agent primitives over the worker's JSON API: the ``<area>.<name>`` methods.

:class:`~.api.RpcApi` hands every method name with a dot to :meth:`AgentRpc.handler`, with
the parameters already checked against :data:`~.methods.AGENT_METHODS`.
Each database's primitives run over that database's own KvBackend (``memory.kv``, the
IndexedDB store in the browser), next to its memories, under their own key prefixes
(``blk:``, ``ns:``, ``fs:``, ``mt:``, ``ckpt:``, ``obs:``), so they survive a page reload.
The worker keeps ONE instance of each primitive per (database, id): a block set per
``setId``, an observer per ``sessionId``, and one structured memory, checkpointer,
``memory`` tool and ``memory_kv`` tool per database (:mod:`.agent_state`). They share the
Memory's clock. The JS shapes and parameter checks are in :mod:`.agent_wire`.

Methods (parameters and results in the JS naming; ``?`` marks an optional parameter):

``blocks.open {setId, blocks?, maxBlocks?}`` -> BlockSet
    Open a set of core memory blocks (``{label, value?, limit?, description?,
    readOnly?}``). A stored set wins over ``blocks``: opening is how a run resumes.
    ``created`` says whether this call wrote a new set.
``blocks.get {setId, label}`` -> Block; ``blocks.list {setId}`` -> BlockSet;
``blocks.render {setId, lettaCompat?}`` -> string; ``blocks.message {setId, lettaCompat?}``
-> ``{role, content}`` (``lettaCompat: true``: Letta's rendering, "" for no blocks);
``blocks.setValue {setId, label, value}`` -> Block (the app's edit, read-only blocks too).
    A set stored by an earlier worker is opened on first use; an unknown one: not_found.
``structured.put {namespace, key, value, metadata?, ttlMs?}`` -> Entry
    ``ttlMs`` absent: the namespace default; null: never expires.
``structured.get {namespace, key}`` -> Entry | null;
``structured.list {namespace, prefix?, limit?}`` -> Entry[];
``structured.search {namespace, query, limit?, prefix?}`` -> ``{entry, score}[]``;
``structured.delete {namespace, key, purge?}`` -> boolean (a live value was deleted);
``structured.history {namespace, key}`` -> Entry[]; ``structured.decay {namespace?}`` -> int.
``tools.call {name, args?, setId?}`` -> ``{content, artifact, isError}``
    Runs ``core_memory_append`` / ``core_memory_replace`` or Letta's ``memory_replace`` /
    ``memory_insert`` / ``memory_rethink`` (on block set ``setId``), the
    Anthropic-compatible ``memory`` tool (``/memories`` files) or the ``memory_kv`` tool.
    ``args`` is an object or the model's raw JSON text. A bad call by the model is a
    result with ``isError: true``; an unknown tool name is not_found.
``tools.schemas {format?, setId?, native?, letta?}`` -> object[]
    The tools' schemas: ``format`` "openai" (default) or "anthropic"; ``native: true``
    gives the Anthropic ``memory_20250818`` entry for the ``memory`` tool; ``letta: true``
    (with ``setId``) lists Letta's three ``memory_*`` block tools instead of ``core_memory_*``.
``checkpoints.save {runId, state, metadata?}`` -> Checkpoint;
``checkpoints.latest {runId}`` -> Checkpoint | null; ``checkpoints.list {runId}`` ->
Checkpoint[]; ``checkpoints.load {runId, seq}`` -> Checkpoint; ``checkpoints.deleteRun
{runId}`` -> int; ``checkpoints.runs {}`` -> string[].
``observer.configure {sessionId, model, tokenThreshold?, keepRecentSteps?}`` -> ObserverStatus
    ``model``: ``{kind: "openai", baseUrl, model, apiKey?, provider?, timeoutMs?}``,
    ``{kind: "anthropic", model, apiKey?, baseUrl?, timeoutMs?}`` or ``{kind: "rules",
    maxChars?}``. Configuring a configured session waits for its scan in flight, then
    changes its model and thresholds; its unobserved steps are kept.
``observer.noteStep {sessionId, step}`` -> ObserverStatus (a step: text, a message or a
list of messages; a scan may start in the background);
``observer.flush {sessionId}`` -> ObserverStatus
    Waits for the scan in flight. If a scan failed since the last flush, the call fails
    once with that error's code (``llm_error`` for the model); its steps stay unobserved.
``observer.status {sessionId}`` -> ObserverStatus;
``observer.list {sessionId}`` -> Observation[]; ``observer.prompt {sessionId}`` -> string.
    ``list`` and ``prompt`` also read the stored observations of an unconfigured session.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from ...agent.block_tools import LETTA_TOOL_NAMES, core_memory_tools, letta_memory_tools
from ...agent.blocks import DEFAULT_MAX_BLOCKS, MemoryBlockSet, block_key
from ...agent.llm import RuleObserver
from ...agent.llm.base import excerpt, parse_arguments
from ...agent.memory_tool import AnthropicMemoryTool
from ...agent.observational import ObservationalMemory
from ...agent.tools import ToolResult, ToolSet
from ...errors import NotFoundError, PymemoryError, ValidationError, shown
from .agent_state import DbAgents, SessionObserver, close_model
from .agent_wire import (
    block_from_js,
    block_js,
    blockset_js,
    checkpoint_js,
    entry_js,
    error_js,
    make_observer_model,
    observation_js,
    tool_result_js,
)
from .host import MemoryHost
from .methods import AGENT_METHODS, handler_name
from .params import check_bool, check_int, check_session_id, check_str

Handler = Callable[[str, Any], Awaitable[Any]]
CORE_TOOLS = ("core_memory_append", "core_memory_replace")
BLOCK_TOOLS = (*CORE_TOOLS, *LETTA_TOOL_NAMES)  # the tools that need a block set


class AgentCallError(PymemoryError):
    """An error reported with a given stable code (an observer failure, say)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class AgentRpc:
    """The ``<area>.<name>`` methods of one API (see the module docstring)."""

    def __init__(self, host: MemoryHost) -> None:
        self._host = host
        self._dbs: dict[str, DbAgents] = {}

    def handler(self, method: str) -> Handler | None:
        """What serves ``method`` (an ``<area>.<name>`` of AGENT_METHODS), else None."""
        if method not in AGENT_METHODS:
            return None
        return getattr(self, handler_name(method), None)

    async def close(self) -> None:
        """Wait for observer scans and close observer models (tests and shutdown)."""
        dbs, self._dbs = list(self._dbs.values()), {}
        for state in dbs:
            await state.close()

    async def state(self, db: str) -> DbAgents:
        """The primitives of database ``db``, bound to its Memory as open now."""
        memory = await self._host.memory(db)
        state = self._dbs.get(db)
        if state is not None and state.memory is memory:
            return state
        # First use, or the database was closed and opened again (a new KV store).
        fresh = DbAgents(memory)
        self._dbs[db] = fresh
        if state is not None:
            await state.close()
        return fresh

    async def _blockset(
        self, state: DbAgents, set_id: object, *, fresh: bool = False
    ) -> MemoryBlockSet:
        """The worker's instance of a set; ``fresh``: re-read first (reads do, so they
        show what other writers of the store changed; edits apply to the stored set)."""
        key = block_key(check_str("setId", set_id))
        found = state.blocksets.get(set_id)  # type: ignore[arg-type]
        if found is not None:
            if fresh:
                await found.refresh()
            return found
        async with state.lock:
            found = state.blocksets.get(set_id)  # type: ignore[arg-type]
            if found is None:
                if await state.kv.get(key) is None:
                    raise NotFoundError(
                        f"no memory block set {shown(set_id)}; create it with blocks.open"
                    )
                found = await MemoryBlockSet.open(state.kv, set_id)  # type: ignore[arg-type]
                state.blocksets[set_id] = found  # type: ignore[index]
        return found

    async def _toolset(self, state: DbAgents, set_id: object) -> ToolSet:
        if set_id is not None:
            check_str("setId", set_id)
        tools = state.toolsets.get(set_id)  # type: ignore[arg-type]
        if tools is None:
            core = []
            if set_id is not None:
                blocks = await self._blockset(state, set_id)
                core = [*core_memory_tools(blocks), *letta_memory_tools(blocks)]
            tools = state.toolsets.setdefault(  # type: ignore[arg-type]
                set_id, ToolSet([*core, state.memory_tool, state.kv_tool])
            )
        return tools

    def _observer(self, state: DbAgents, session_id: object) -> SessionObserver:
        sid = check_session_id(session_id)
        observer = state.observers.get(sid)
        if observer is None:
            raise NotFoundError(
                f"no observer for session {shown(sid)} in this worker; "
                "call observer.configure first"
            )
        return observer

    # --- blocks -------------------------------------------------------------------------------

    async def _a_blocks_open(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        set_id = check_str("setId", p["setId"])
        key = block_key(set_id)
        raw = p.get("blocks", [])
        if raw is None:
            raw = []
        if not isinstance(raw, list):
            raise ValidationError("blocks must be a list of block objects")
        blocks = [block_from_js(i, b) for i, b in enumerate(raw)]
        max_blocks = check_int("maxBlocks", p.get("maxBlocks", DEFAULT_MAX_BLOCKS), 1)
        state = await self.state(db)
        created = False
        async with state.lock:
            found = state.blocksets.get(set_id)
            if found is None:
                created = await state.kv.get(key) is None
                found = await MemoryBlockSet.open(state.kv, set_id, blocks, max_blocks=max_blocks)
                state.blocksets[set_id] = found
        return {**blockset_js(set_id, found), "created": created}

    async def _a_blocks_get(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        blocks = await self._blockset(await self.state(db), p["setId"], fresh=True)
        return block_js(blocks.get(check_str("label", p["label"])))

    async def _a_blocks_list(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        found = await self._blockset(await self.state(db), p["setId"], fresh=True)
        return blockset_js(p["setId"], found)

    async def _a_blocks_render(self, db: str, p: dict[str, Any]) -> str:
        letta = check_bool("lettaCompat", p.get("lettaCompat", False))
        return (await self._blockset(await self.state(db), p["setId"], fresh=True)).render(letta)

    async def _a_blocks_message(self, db: str, p: dict[str, Any]) -> dict[str, str]:
        letta = check_bool("lettaCompat", p.get("lettaCompat", False))
        return (await self._blockset(await self.state(db), p["setId"], fresh=True)).message(letta)

    async def _a_blocks_setValue(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        blocks = await self._blockset(await self.state(db), p["setId"])
        return block_js(await blocks.set_value(check_str("label", p["label"]), p["value"]))

    # --- structured memory ----------------------------------------------------------------------

    async def _a_structured_put(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        ttl = p.get("ttlMs", "namespace")  # absent: the namespace default; null: never
        entry = await (await self.state(db)).structured.put(
            p["namespace"], p["key"], p["value"], metadata=p.get("metadata"), ttl_ms=ttl
        )
        return entry_js(entry)

    async def _a_structured_get(self, db: str, p: dict[str, Any]) -> dict[str, Any] | None:
        entry = await (await self.state(db)).structured.get(p["namespace"], p["key"])
        return None if entry is None else entry_js(entry)

    async def _a_structured_list(self, db: str, p: dict[str, Any]) -> list[dict[str, Any]]:
        entries = await (await self.state(db)).structured.list(
            p["namespace"], prefix=p.get("prefix", ""), limit=p.get("limit")
        )
        return [entry_js(e) for e in entries]

    async def _a_structured_search(self, db: str, p: dict[str, Any]) -> list[dict[str, Any]]:
        hits = await (await self.state(db)).structured.search(
            p["namespace"], p["query"], limit=p.get("limit", 10), prefix=p.get("prefix", "")
        )
        return [{"entry": entry_js(h.entry), "score": h.score} for h in hits]

    async def _a_structured_delete(self, db: str, p: dict[str, Any]) -> bool:
        purge = check_bool("purge", p.get("purge", False))
        return await (await self.state(db)).structured.delete(p["namespace"], p["key"], purge=purge)

    async def _a_structured_history(self, db: str, p: dict[str, Any]) -> list[dict[str, Any]]:
        entries = await (await self.state(db)).structured.history(p["namespace"], p["key"])
        return [entry_js(e) for e in entries]

    async def _a_structured_decay(self, db: str, p: dict[str, Any]) -> int:
        return await (await self.state(db)).structured.decay(p.get("namespace"))

    # --- tools --------------------------------------------------------------------------------

    async def _a_tools_call(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        name = check_str("name", p["name"])
        set_id = p.get("setId")
        tools = await self._toolset(await self.state(db), set_id)
        if name not in tools:
            if name in BLOCK_TOOLS and set_id is None:
                raise ValidationError(f"{name} edits a memory block set: pass setId")
            raise NotFoundError(f"no tool named {shown(name)}; tools: {', '.join(tools.names())}")
        args = p.get("args", {})
        if isinstance(args, str):  # the model's raw JSON text
            parsed, invalid = parse_arguments(args)
            if invalid is not None:
                return tool_result_js(
                    ToolResult(
                        f"Error: {name} takes a JSON object of arguments, got "
                        f"{excerpt(invalid, 120)!r}",
                        {"tool": name, "outcome": "error", "error": "invalid_arguments"},
                        is_error=True,
                    )
                )
            args = parsed
        return tool_result_js(await tools.call(name, args))

    async def _a_tools_schemas(self, db: str, p: dict[str, Any]) -> list[dict[str, Any]]:
        fmt = p.get("format", "openai")
        if fmt not in ("openai", "anthropic"):
            raise ValidationError(f'format must be "openai" or "anthropic", got {shown(fmt)}')
        native = check_bool("native", p.get("native", False))
        letta = check_bool("letta", p.get("letta", False))
        if letta and p.get("setId") is None:
            raise ValidationError("letta: true lists the tools of a memory block set: pass setId")
        # One set's tools: core_memory_* (default) or Letta's memory_* (letta: true).
        hidden = CORE_TOOLS if letta else LETTA_TOOL_NAMES
        toolset = await self._toolset(await self.state(db), p.get("setId"))
        tools = [t for t in toolset if t.name not in hidden]
        if fmt == "openai":
            return [t.openai_schema() for t in tools]
        return [
            t.anthropic_schema(native=native)
            if isinstance(t, AnthropicMemoryTool)
            else t.anthropic_schema()
            for t in tools
        ]

    # --- checkpoints --------------------------------------------------------------------------

    async def _a_checkpoints_save(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        cp = await (await self.state(db)).checkpoints.save(
            p["runId"], p["state"], metadata=p.get("metadata")
        )
        return checkpoint_js(cp)

    async def _a_checkpoints_latest(self, db: str, p: dict[str, Any]) -> dict[str, Any] | None:
        cp = await (await self.state(db)).checkpoints.latest(p["runId"])
        return None if cp is None else checkpoint_js(cp)

    async def _a_checkpoints_list(self, db: str, p: dict[str, Any]) -> list[dict[str, Any]]:
        return [checkpoint_js(c) for c in await (await self.state(db)).checkpoints.list(p["runId"])]

    async def _a_checkpoints_load(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        return checkpoint_js(await (await self.state(db)).checkpoints.load(p["runId"], p["seq"]))

    async def _a_checkpoints_deleteRun(self, db: str, p: dict[str, Any]) -> int:
        return await (await self.state(db)).checkpoints.delete_run(p["runId"])

    async def _a_checkpoints_runs(self, db: str, p: dict[str, Any]) -> list[str]:
        return await (await self.state(db)).checkpoints.runs()

    # --- observational memory -----------------------------------------------------------------

    async def _status(self, sid: str, observer: SessionObserver) -> dict[str, Any]:
        obs = observer.memory
        return {
            "sessionId": sid,
            "model": dict(observer.info),
            "tokenThreshold": obs.token_threshold,
            "keepRecentSteps": obs.keep_recent_steps,
            "scanning": obs.scanning,
            "unobservedTokens": obs.unobserved_tokens,
            "scans": obs.scans,
            "observations": len(await obs.list()),
            "lastError": error_js(obs.last_error),
        }

    async def _a_observer_configure(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        sid = check_session_id(p["sessionId"])
        options: dict[str, int] = {}
        if "tokenThreshold" in p:
            options["token_threshold"] = check_int("tokenThreshold", p["tokenThreshold"], 1)
        if "keepRecentSteps" in p:
            options["keep_recent_steps"] = check_int("keepRecentSteps", p["keepRecentSteps"], 0)
        model, info = make_observer_model(p["model"])
        state = await self.state(db)
        observer = state.observers.get(sid)
        if observer is None:
            timed = {"clock": state.clock} if state.clock else {}
            obs = ObservationalMemory(model, sid, state.kv, **options, **timed)
            observer = state.observers[sid] = SessionObserver(obs, model, info)
        else:  # keep the session's unobserved steps; swap what was asked for
            await observer.memory.flush()  # the scan in flight finishes on the old model
            old = observer.model  # no scan runs now, and nothing awaits until the swap
            observer.memory.observer_model = model
            observer.model, observer.info = model, info
            for name, value in options.items():
                setattr(observer.memory, name, value)
            await close_model(old)
        return await self._status(sid, observer)

    async def _a_observer_noteStep(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        observer = self._observer(await self.state(db), p["sessionId"])
        observer.memory.note_step(p["step"])
        return await self._status(observer.memory.session_id, observer)

    async def _a_observer_flush(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        observer = self._observer(await self.state(db), p["sessionId"])
        await observer.memory.flush()
        last = observer.memory.last_error
        if last is not None and last is not observer.reported:
            observer.reported = last
            error = error_js(last) or {}
            raise AgentCallError(
                error["code"],
                f"the observer failed (its steps stay unobserved): {error['message']}",
            )
        return await self._status(observer.memory.session_id, observer)

    async def _a_observer_status(self, db: str, p: dict[str, Any]) -> dict[str, Any]:
        observer = self._observer(await self.state(db), p["sessionId"])
        return await self._status(observer.memory.session_id, observer)

    async def _observations(self, db: str, session_id: object) -> ObservationalMemory:
        sid = check_session_id(session_id)
        state = await self.state(db)
        observer = state.observers.get(sid)
        if observer is not None:
            return observer.memory
        return ObservationalMemory(RuleObserver(), sid, state.kv)  # reads only, never scans

    async def _a_observer_list(self, db: str, p: dict[str, Any]) -> list[dict[str, Any]]:
        obs = await self._observations(db, p["sessionId"])
        return [observation_js(o) for o in await obs.list()]

    async def _a_observer_prompt(self, db: str, p: dict[str, Any]) -> str:
        return await (await self._observations(db, p["sessionId"])).format_for_prompt()


_AGENTS: weakref.WeakKeyDictionary[MemoryHost, AgentRpc] = weakref.WeakKeyDictionary()


def agent_rpc(api: MemoryHost) -> AgentRpc:
    """The AgentRpc of ``api`` (one per API, made on first use)."""
    agents = _AGENTS.get(api)
    if agents is None:
        agents = _AGENTS[api] = AgentRpc(api)
    return agents


async def close_agents(api: MemoryHost) -> None:
    """Wait for observer scans and close the observer models of ``api``."""
    agents = _AGENTS.get(api)
    if agents is not None:
        await agents.close()


__all__ = ["AgentCallError", "AgentRpc", "agent_rpc", "close_agents"]
