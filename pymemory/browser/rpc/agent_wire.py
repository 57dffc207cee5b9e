"""The JS shapes of the agent primitives (:mod:`.agent_api`), both ways.

``*_js`` turns an agent primitive's value into its JSON form in the JS naming;
:func:`block_from_js` and :func:`make_observer_model` read a block and an observer model
from a method's parameters (ValidationError for a bad one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...agent.blocks import MemoryBlock, MemoryBlockSet
from ...agent.checkpoint import Checkpoint
from ...agent.llm import AnthropicModel, OpenAIChatModel, RuleObserver
from ...agent.observational import Observation
from ...agent.structured import Entry
from ...agent.tools import ToolResult
from ...errors import PymemoryError, ValidationError, shown
from .methods import BLOCK_FIELDS
from .params import check_int, check_params, check_str, check_url

# --- JS shapes ----------------------------------------------------------------------------


def block_js(block: MemoryBlock) -> dict[str, Any]:
    return {
        "label": block.label,
        "value": block.value,
        "limit": block.limit,
        "description": block.description,
        "readOnly": block.read_only,
        "chars": block.chars,
    }


def blockset_js(set_id: str, blocks: MemoryBlockSet) -> dict[str, Any]:
    return {
        "setId": set_id,
        "maxBlocks": blocks.max_blocks,
        "revision": blocks.revision,
        "blocks": [block_js(b) for b in blocks.list()],
    }


def entry_js(entry: Entry) -> dict[str, Any]:
    return {
        "namespace": entry.namespace,
        "key": entry.key,
        "value": entry.value,
        "version": entry.version,
        "validFrom": entry.valid_from,
        "validTo": entry.valid_to,
        "expiresAt": entry.expires_at,
        "metadata": entry.metadata,
    }


def checkpoint_js(cp: Checkpoint) -> dict[str, Any]:
    return {
        "runId": cp.run_id,
        "seq": cp.seq,
        "createdAtMs": cp.created_at_ms,
        "state": cp.state,
        "metadata": cp.metadata,
    }


def observation_js(obs: Observation) -> dict[str, Any]:
    return {
        "seqId": obs.seq_id,
        "createdAtMs": obs.created_at_ms,
        "text": obs.text,
        "priority": obs.priority,
        "coversSteps": {"from": obs.covers_steps.first, "to": obs.covers_steps.last},
    }


def tool_result_js(result: ToolResult) -> dict[str, Any]:
    return {"content": result.content, "artifact": result.artifact, "isError": result.is_error}


def error_js(exc: BaseException | None) -> dict[str, str] | None:
    if exc is None:
        return None
    if isinstance(exc, PymemoryError):
        code = exc.code
    elif isinstance(exc, ValueError):  # e.g. an empty observation: the model's answer
        code = "llm_error"
    else:
        code = "internal"
    return {"code": code, "message": str(exc) or type(exc).__name__}


# --- parameters -----------------------------------------------------------------------------


def block_from_js(index: int, raw: object) -> MemoryBlock:
    """Block ``index`` of ``blocks.open``'s ``blocks`` as a MemoryBlock."""
    if not isinstance(raw, dict):
        raise ValidationError(f"blocks[{index}] must be an object")
    try:
        p = check_params(raw, BLOCK_FIELDS, {"label"})
        return MemoryBlock(**{("read_only" if k == "readOnly" else k): v for k, v in p.items()})
    except ValidationError as exc:
        raise ValidationError(f"blocks[{index}]: {exc}") from None


def _timeout(p: Mapping[str, Any]) -> float | None:
    if p.get("timeoutMs") is None:
        return None
    return check_int("timeoutMs", p["timeoutMs"], 1) / 1000


def make_observer_model(spec: object) -> tuple[Any, dict[str, Any]]:
    """The observer model for a ``model`` parameter, and its description (no API key)."""
    if not isinstance(spec, dict):
        raise ValidationError('model must be an object such as {"kind": "rules"}')
    kind = spec.get("kind")
    if kind == "rules":
        p = check_params(spec, {"kind", "maxChars"})
        if "maxChars" in p:
            model = RuleObserver(max_chars=check_int("maxChars", p["maxChars"], 1))
        else:
            model = RuleObserver()
        return model, {"kind": "rules"}
    if kind == "openai":
        fields = {"kind", "baseUrl", "apiKey", "model", "provider", "timeoutMs"}
        p = check_params(spec, fields, {"kind", "baseUrl", "model"})
        api_key = p.get("apiKey")
        if api_key is not None:
            check_str("apiKey", api_key)
        model = OpenAIChatModel(
            check_url("baseUrl", p["baseUrl"]),
            api_key,
            check_str("model", p["model"]),
            provider=check_str("provider", p.get("provider", "openai")),
            timeout=_timeout(p),
        )
        return model, {"kind": "openai", "baseUrl": p["baseUrl"], "model": p["model"]}
    if kind == "anthropic":
        fields = {"kind", "baseUrl", "apiKey", "model", "timeoutMs"}
        p = check_params(spec, fields, {"kind", "model"})
        api_key = p.get("apiKey")
        if api_key is not None:
            check_str("apiKey", api_key)
        base = check_url("baseUrl", p.get("baseUrl", "https://api.anthropic.com"))
        model = AnthropicModel(base, api_key, check_str("model", p["model"]), timeout=_timeout(p))
        return model, {"kind": "anthropic", "baseUrl": base, "model": p["model"]}
    raise ValidationError(f'model.kind must be "openai", "anthropic" or "rules", got {shown(kind)}')
