"""The JSON API the pymemory worker serves, runtime-free (tested in CPython).

:class:`RpcApi` (:mod:`.api`) serves ``call(db, method, params_json)`` for the methods of
:mod:`.methods`, the one table of their names and parameters; :mod:`.envelope` is a
call's JSON in and out, :mod:`.wire` the results' JS shapes, :mod:`.params` the checks.
The agent primitives' ``<area>.<name>`` methods are in :mod:`.agent_api` (with
:mod:`.agent_state` and :mod:`.agent_wire`); it depends on the :class:`~.host.MemoryHost`
protocol, not on RpcApi, and RpcApi imports it on the first dotted call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .api import ModelUnavailableError, RpcApi
from .methods import AGENT_METHODS, CORE_METHODS, MAX_PARAMS_CHARS, METHODS, MUTATIONS, Method
from .unlock import Unlock
from .wire import archived_js, item_js, retrieval_js, stats_js

if TYPE_CHECKING:
    from .agent_api import AgentCallError, AgentRpc, agent_rpc, close_agents
    from .agent_wire import make_observer_model

#: The agent primitives' names, imported when first asked for: their modules are ~15% of
#: the worker's Python imports at boot, and most pages never call them.
_AGENT_NAMES = {"AgentCallError", "AgentRpc", "agent_rpc", "close_agents", "make_observer_model"}


def __getattr__(name: str) -> Any:
    if name not in _AGENT_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import agent_api, agent_wire

    return getattr(agent_wire if name == "make_observer_model" else agent_api, name)


__all__ = [
    "AGENT_METHODS",
    "CORE_METHODS",
    "MAX_PARAMS_CHARS",
    "METHODS",
    "MUTATIONS",
    "AgentCallError",
    "AgentRpc",
    "Method",
    "ModelUnavailableError",
    "RpcApi",
    "Unlock",
    "agent_rpc",
    "archived_js",
    "close_agents",
    "item_js",
    "make_observer_model",
    "retrieval_js",
    "stats_js",
]
