"""The one table of the JSON API's methods (pymemory.browser.rpc.methods) and the handlers."""

import json
import subprocess
import sys

from pymemory.browser.rpc import AGENT_METHODS, CORE_METHODS, METHODS, MUTATIONS, RpcApi
from pymemory.browser.rpc.agent_api import AgentRpc
from pymemory.browser.rpc.methods import handler_name
from pymemory.storage import MapKv


def test_every_method_has_its_handler_and_every_handler_its_method():
    assert not set(CORE_METHODS) & set(AGENT_METHODS)
    for name in METHODS:
        owner = AgentRpc if "." in name else RpcApi
        assert callable(getattr(owner, handler_name(name), None)), name
    handlers = {a for a in dir(RpcApi) if a.startswith("_m_")}
    handlers |= {a for a in dir(AgentRpc) if a.startswith("_a_")}
    assert handlers == {handler_name(name) for name in METHODS}


def test_the_mutations_are_the_memory_writes():
    assert set(MUTATIONS) == {
        "addMemory", "addMany", "update", "delete", "feedback", "clear", "archiveOlderThan",
        "importJsonl", "sweep", "sync",  # sync: what it pulls changes memories
    }  # fmt: skip
    for name, method in METHODS.items():
        assert method.required <= method.params, name


async def test_parameters_are_checked_against_the_table_before_the_handler():
    api = RpcApi(lambda name: _store(), feedback_flush_s=3600)
    try:
        for name, method in METHODS.items():
            answer = json.loads(await api.call("db", name, json.dumps({"notAParameter": 1})))
            assert answer["error"]["code"] == "invalid_input", name
            allowed = ", ".join(sorted(method.params)) or "none"
            assert answer["error"]["message"].endswith(f"allowed: {allowed}"), name
    finally:
        await api.close_all()


def test_the_agent_methods_are_imported_on_first_use_only():
    # The worker's boot imports pymemory.browser.rpc; the agent primitives (~15% of its
    # imports) come with the first dotted call, or the first use of their names.
    code = (
        "import sys, pymemory.browser.rpc as rpc\n"
        "assert 'pymemory.browser.rpc.agent_api' not in sys.modules\n"
        "from pymemory.browser.rpc import agent_rpc, make_observer_model\n"
        "assert 'pymemory.browser.rpc.agent_api' in sys.modules\n"
        "assert getattr(rpc, 'nonsense', None) is None\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


async def _store():
    return MapKv()
