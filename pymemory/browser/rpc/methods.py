"""The methods of the worker's JSON API: the one table of their names and parameters.

:class:`~.api.RpcApi` serves a call only if its method is here: it checks the call's
parameters against the method's entry before its handler runs (``RpcApi._m_<name>`` for
the memory methods, ``AgentRpc._a_<area>_<name>`` for the agent primitives' ``<area>.<name>``
ones; a test checks that every entry has its handler and every handler its entry).
Parameter names are the JS ones (camelCase). ``mutates``: the method changes the
database's memories, so a page's other hooks refresh after it (writes of the agent
primitives to their own records do not count).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .params import check_params

#: Longest parameters JSON a call may send (characters), checked before parsing; an import
#: (the whole JSON Lines text in one string) may be longer.
MAX_PARAMS_CHARS = 32 * 2**20
MAX_IMPORT_CHARS = 512 * 2**20


@dataclass(frozen=True)
class Method:
    """One method: the parameters it takes, those it needs, and how it is served."""

    params: frozenset[str] = frozenset()
    required: frozenset[str] = frozenset()
    #: The method changes the database's memories (see the module docstring).
    mutates: bool = False
    #: Longest parameters JSON it accepts (characters).
    max_chars: int = MAX_PARAMS_CHARS
    #: Its handler also takes the call's progress callback.
    progress: bool = False

    def check(self, params: Any) -> dict[str, Any]:
        """``params`` (None: ``{}``) if its keys are this method's (ValidationError if not)."""
        return check_params(params, self.params, self.required)


def _method(params: str = "", required: str = "", **options: Any) -> Method:
    """A table row: parameter names separated by spaces; ``required`` a subset of them."""
    allowed = frozenset(params.split())
    needed = frozenset(required.split())
    assert needed <= allowed, f"required {needed - allowed} not among the parameters"
    return Method(allowed, needed, **options)


#: addMemory's parameters, also those of each entry of addMany.
ADD_FIELDS = frozenset({"text", "content", "type", "metadata", "tags", "scope", "ttlMs",
                        "timestamp"})  # fmt: skip
#: The fields of a block object in ``blocks.open``'s ``blocks``.
BLOCK_FIELDS = frozenset({"label", "value", "limit", "description", "readOnly"})

#: The memory methods (``Memory``'s API, plus model and diagnostic calls).
CORE_METHODS: dict[str, Method] = {
    "open": _method(),
    "close": _method(),
    "addMemory": Method(ADD_FIELDS, mutates=True),
    "addMany": _method("entries", "entries", mutates=True),
    "get": _method("id", "id"),
    "history": _method("id", "id"),
    "update": _method(
        "id text content type metadata tags scope ttlMs expectedVersion", "id", mutates=True
    ),
    "delete": _method("id expectedVersion", "id", mutates=True),
    "list": _method("scope type tags sinceMs untilMs limit"),
    "retrieve": _method("query strategy maxItems maxTokens trace condense inject", "query"),
    "feedback": _method("id kind durable", "id kind", mutates=True),
    "flush": _method(),
    "clear": _method("scope tags type sinceMs untilMs all", mutates=True),
    "archiveOlderThan": _method("days keepImportant", "days", mutates=True),
    "searchArchive": _method("query limit"),
    "sweep": _method(mutates=True),
    "stats": _method(),
    "exportJsonl": _method(),
    "importJsonl": _method(
        "text onConflict chunkSize", "text", mutates=True, max_chars=MAX_IMPORT_CHARS, progress=True
    ),
    "loadModels": _method("embedder summarizer hashing"),
    "modelsIdle": _method(),
    "embed": _method("texts inputIds raw model"),
    "runKvConformance": _method(),
    # One round with a CouchDB hub (docs/sync.md); pulled changes change memories.
    "sync": _method("url auth live atOpen timeoutMs", "url", mutates=True),
    # The database's sync state now (the client polls it during a round: status.sync.round).
    "syncStatus": _method(),
}

#: The agent primitives' methods (documented in :mod:`.agent_api`).
AGENT_METHODS: dict[str, Method] = {
    "blocks.open": _method("setId blocks maxBlocks", "setId"),
    "blocks.get": _method("setId label", "setId label"),
    "blocks.list": _method("setId", "setId"),
    "blocks.render": _method("setId lettaCompat", "setId"),
    "blocks.message": _method("setId lettaCompat", "setId"),
    "blocks.setValue": _method("setId label value", "setId label value"),
    "structured.put": _method("namespace key value metadata ttlMs", "namespace key value"),
    "structured.get": _method("namespace key", "namespace key"),
    "structured.list": _method("namespace prefix limit", "namespace"),
    "structured.search": _method("namespace query limit prefix", "namespace query"),
    "structured.delete": _method("namespace key purge", "namespace key"),
    "structured.history": _method("namespace key", "namespace key"),
    "structured.decay": _method("namespace"),
    "tools.call": _method("name args setId", "name"),
    "tools.schemas": _method("format setId native letta"),
    "checkpoints.save": _method("runId state metadata", "runId state"),
    "checkpoints.latest": _method("runId", "runId"),
    "checkpoints.list": _method("runId", "runId"),
    "checkpoints.load": _method("runId seq", "runId seq"),
    "checkpoints.deleteRun": _method("runId", "runId"),
    "checkpoints.runs": _method(),
    "observer.configure": _method(
        "sessionId model tokenThreshold keepRecentSteps", "sessionId model"
    ),
    "observer.noteStep": _method("sessionId step", "sessionId step"),
    "observer.flush": _method("sessionId", "sessionId"),
    "observer.status": _method("sessionId", "sessionId"),
    "observer.list": _method("sessionId", "sessionId"),
    "observer.prompt": _method("sessionId", "sessionId"),
}

#: Every method, by the name the client calls it by.
METHODS: dict[str, Method] = {**CORE_METHODS, **AGENT_METHODS}

#: The methods that change a database's memories.
MUTATIONS = frozenset(name for name, m in METHODS.items() if m.mutates)


def handler_name(method: str) -> str:
    """The attribute that serves ``method``: ``_m_addMemory`` on RpcApi,
    ``_a_blocks_open`` on AgentRpc for ``blocks.open``."""
    area, dot, name = method.partition(".")
    return f"_a_{area}_{name}" if dot else f"_m_{method}"
