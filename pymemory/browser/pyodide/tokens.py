"""The browser's token counter: o200k_base counts from the worker's ``tiktoken.mjs``."""

from __future__ import annotations


class JsTokenCounter:
    """o200k_base counts from the worker (``tiktoken.mjs``, over js-tiktoken's ranks), the
    same counts as ``TiktokenCounter`` in CPython. Counting is synchronous, so the worker
    serves a call only once the ranks are parsed (it is ``ready`` before). ImportError
    outside a pymemory worker (no ``pymemory_js_tokens`` module)."""

    name = "o200k_base"

    def __init__(self) -> None:
        import pymemory_js_tokens  # registered by the worker before it imports this package

        self._count = pymemory_js_tokens.count

    def count(self, text: str) -> int:
        return int(self._count(text))
