"""An error message that shows a caller's value survives any value (issue 30).

``str()``/``repr()`` of an int over 4,300 digits raises ValueError and of a list nested
10,000 deep raises RecursionError, so a message built with ``{value!r}`` turned a
documented ValidationError into a bare one. Every such message goes through
``pymemory.errors.shown``; these are the places outside the ``Memory`` facade (which
tests/facade/test_facade_fuzz.py covers) where a public call reached one.
"""

from __future__ import annotations

import pytest

from pymemory.agent.assembler import MessageAssembler
from pymemory.agent.checkpoint import InMemoryCheckpointer
from pymemory.agent.memory_agent import MemoryAgent
from pymemory.agent.structured import StructuredMemory
from pymemory.browser.rpc import make_observer_model
from pymemory.encoder import RuleEncoder
from pymemory.errors import PymemoryError, ValidationError, shown
from pymemory.item import MAX_JSON_DEPTH, check_json
from pymemory.models.generate import GenerationConfig
from pymemory.storage import MapKv


def _deep_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


HUGE = 10**5000
UNSHOWABLE = [HUGE, -HUGE, _deep_list(10_000), [HUGE]]
IDS = ["10**5000", "-10**5000", "list depth 10000", "[10**5000]"]


@pytest.mark.parametrize("value", UNSHOWABLE, ids=IDS)
def test_shown_describes_what_repr_cannot_print(value):
    text = shown(value)
    assert 0 < len(text) <= 80


async def _model(request):  # never called
    raise AssertionError


def _calls(value):
    """Calls that must refuse ``value`` with a documented error."""
    negative = -HUGE if value is HUGE else value  # where a huge positive int is valid

    async def checkpoint():
        await InMemoryCheckpointer().latest(value)

    async def structured():
        await StructuredMemory(MapKv()).get(value, "k")

    async def summarize():
        RuleEncoder().summarize("some text", type=value)

    async def metadata_key():
        check_json({"k": {value if not isinstance(value, list) else 7: 1}}, "metadata",
                   max_depth=MAX_JSON_DEPTH)  # fmt: skip

    async def agent_budget():
        MemoryAgent(_model, MapKv(), token_limit=negative)

    async def assembler_format():
        MessageAssembler("You are helpful.", tool_format=value)

    async def assembler_role():
        MessageAssembler("You are helpful.").add_step({"role": value, "content": "x"})

    async def wire_model_kind():
        make_observer_model({"kind": value})

    async def generation():
        GenerationConfig(max_new_tokens=negative)

    return [
        checkpoint,
        structured,
        summarize,
        metadata_key,
        agent_budget,
        assembler_format,
        assembler_role,
        wire_model_kind,
        generation,
    ]


@pytest.mark.parametrize("value", UNSHOWABLE, ids=IDS)
async def test_messages_that_show_a_value_survive_any_value(value):
    for call in _calls(value):
        # The local model's settings raise a plain ValueError (internal, not the facade).
        expected = ValueError if call.__name__ == "generation" else PymemoryError
        with pytest.raises(expected) as err:
            await call()
        assert len(str(err.value)) < 400, call.__name__


async def test_langgraph_checks_survive_any_value():
    pytest.importorskip("langgraph")
    from langgraph.store.base import InvalidNamespaceError

    from pymemory.integrations.langgraph.checks import check_namespace, check_ttl_minutes

    for value in UNSHOWABLE:
        with pytest.raises(InvalidNamespaceError):
            check_namespace(("users", value))
    with pytest.raises(ValidationError, match="an int of about 5001 digits"):
        check_ttl_minutes(HUGE)
