"""pymemory's LangGraph store (pymemory/integrations/langgraph.py) against LangGraph's own
published store behaviours, restated as data, with LangGraph's InMemoryStore as control.

Sources of the behaviours (read, restated; no LangGraph code or test code is copied):

* BASE: langchain-ai/langgraph libs/checkpoint/langgraph/store/base/__init__.py (the
  docstrings of BaseStore, Item, SearchItem, GetOp, PutOp, SearchOp, ListNamespacesOp,
  TTLConfig)
* STORE_TESTS: langchain-ai/langgraph libs/checkpoint/tests/test_store.py
* NS_TESTS: langchain-ai/langgraph libs/checkpoint/tests/test_store_namespace_validation.py
* SQLITE_TESTS: langchain-ai/langgraph libs/checkpoint-sqlite/tests/test_store.py
* TTL_TESTS: langchain-ai/langgraph libs/checkpoint-sqlite/tests/test_ttl.py
* PG: langchain-ai/langgraph libs/checkpoint-postgres/langgraph/store/postgres/base.py
* DOCS: https://docs.langchain.com/oss/python/langgraph/persistence#memory-store (source:
  langchain-ai/langgraph docs/docs/concepts/persistence.md, "Memory Store")

Every case runs against PymemoryStore over MapKv and over SqliteKv, and against
LangGraph's InMemoryStore (with an index whose embed function is pymemory's hashing
embedder, so its query ranking works offline) as a control that the expectation is
LangGraph's. A case where InMemoryStore is known to disagree with the published behaviour
says so (``control=DIFFERS``) and the control run checks that it still does; a case where
pymemory deliberately differs carries ``ours=`` and ``why=`` (README "LangGraph store").
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from helpers import Clock
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from pymemory.agent.llm import ChatRequest, HttpxTransport, Message, OpenAIChatModel, ToolCall
from pymemory.errors import ValidationError
from pymemory.integrations.langgraph import PymemoryStore
from pymemory.models.embedding import HashingEmbedder
from pymemory.storage import MapKv, SqliteKv

pytest_plugins = ["llm_server"]  # the llm_server fixture

SAME = "same"
DIFFERS = "differs"  # LangGraph's InMemoryStore is known not to do what is published
NO_CONTROL = "no-control"  # InMemoryStore cannot run the case (no TTL support)

HASHING = HashingEmbedder(384)


@dataclass(frozen=True)
class Case:
    id: str
    setup: tuple = ()  # steps: ("put", ns, key, value, kwargs) | ("tick", minutes) | ("get", ...)
    call: tuple = ()  # ("get"|"search"|"list"|"put"|"delete"|"batch"|"created_kept", ...)
    expect: tuple = ()  # (kind, data): what LangGraph documents
    ours: tuple | None = None  # what pymemory does instead, where it deliberately differs
    why: str = ""  # the deliberate difference, named
    control: str = SAME
    control_why: str = ""


def puts(ns: tuple, *items: tuple) -> tuple:
    return tuple(("put", ns, key, value, {}) for key, value in items)


NS6 = (
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("b", "a", "f"),
    ("users", "123"),
    ("users", "456", "settings"),
    ("admin", "users", "789"),
)
SPREAD = tuple(("put", ns, f"id_{i}", {"data": f"value_{i:02d}"}, {}) for i, ns in enumerate(NS6))
DOCS_ABC = (
    ("put", ("test", "docs"), "doc1", {"title": "First Doc", "author": "Alice", "n": 1}, {}),
    ("put", ("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "n": 2}, {}),
    ("put", ("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "n": 3}, {}),
)
FRUIT = puts(
    ("test",),
    ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
    ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
    ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
    ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
)
WHALES = (
    ("put", ("w",), "d1", {"text": "blue whale"}, {}),
    ("put", ("w",), "d2", {"text": "green frog"}, {}),
    ("put", ("w",), "d3", {"text": "blue whale"}, {"index": False}),
)
DOC = {"foo": "bar"}

CASES: list[Case] = [
    # --- namespaces: BASE BaseStore.put "Raises: InvalidNamespaceError: If the namespace is
    # empty, its root label is "langgraph", or a label is empty, is not a string, or
    # contains a period"; STORE_TESTS test_cannot_put_empty_namespace.
    Case(
        "put-empty-namespace",
        call=("put", (), "foo", DOC),
        expect=("raises", InvalidNamespaceError),
    ),
    Case(
        "put-label-with-period",
        call=("put", ("the", "thing.about"), "foo", DOC),
        expect=("raises", InvalidNamespaceError),
    ),
    Case(
        "put-empty-label",
        call=("put", ("some", "fun", ""), "foo", DOC),
        expect=("raises", InvalidNamespaceError),
    ),
    Case(
        "put-root-langgraph",
        call=("put", ("langgraph", "foo"), "bar", DOC),
        expect=("raises", InvalidNamespaceError),
    ),
    # STORE_TESTS test_cannot_put_empty_namespace: "langgraph" below the root is fine.
    Case(
        "put-inner-langgraph-label",
        setup=puts(("foo", "langgraph", "foo"), ("bar", DOC)),
        call=("get", ("foo", "langgraph", "foo"), "bar"),
        expect=("get", DOC),
    ),
    # NS_TESTS test_base_rejects_invalid_labels: get/search/list refuse (123,), ("foo.bar",).
    Case(
        "get-non-string-label",
        call=("get", (123,), "key"),
        expect=("raises", InvalidNamespaceError),
    ),
    Case(
        "search-label-with-period",
        call=("search", ("foo.bar",)),
        expect=("raises", InvalidNamespaceError),
    ),
    Case(
        "list-prefix-empty-label",
        call=("list", {"prefix": ("foo", "")}),
        expect=("raises", InvalidNamespaceError),
    ),
    # --- get / put / delete: DOCS "Memory Store" (put, then read it back); SQLITE_TESTS
    # TestSqliteStore.test_basic_store_ops (update, other namespace, delete).
    Case("get-absent-is-none", call=("get", ("test",), "nope"), expect=("get", None)),
    Case(
        "put-then-get",
        setup=puts(("1", "memories"), ("m1", {"food_preference": "I like pizza"})),
        call=("get", ("1", "memories"), "m1"),
        expect=("get", {"food_preference": "I like pizza"}),
    ),
    Case(
        "put-again-updates",
        setup=puts(("t",), ("d", {"v": 1}), ("d", {"v": 2})),
        call=("get", ("t",), "d"),
        expect=("get", {"v": 2}),
    ),
    Case(
        "get-other-namespace-is-none",
        setup=puts(("test", "documents"), ("doc1", {"v": 1})),
        call=("get", ("test", "other_documents"), "doc1"),
        expect=("get", None),
    ),
    Case(
        "delete-then-get",
        setup=(*puts(("t",), ("d", {"v": 1})), ("delete", ("t",), "d")),
        call=("get", ("t",), "d"),
        expect=("get", None),
    ),
    # BASE PutOp.value: "None to mark the item for deletion"; SQLITE_TESTS test_batch_put_ops.
    Case(
        "putop-none-deletes",
        setup=puts(("t",), ("k3", {"v": 3})),
        call=("batch", [PutOp(("t",), "k1", {"v": 1}), PutOp(("t",), "k3", None)]),
        expect=("then_search", ("t",), ["k1"]),
    ),
    # BASE BaseStore.batch: "results ... order matches the order of input operations";
    # SQLITE_TESTS test_batch_order (a put gives None, a missing key gives None).
    Case(
        "batch-results-in-order",
        setup=puts(("test", "foo"), ("key1", {"data": "value1"})),
        call=(
            "batch",
            [
                GetOp(("test", "foo"), "key1"),
                PutOp(("test", "bar"), "key2", {"d": 2}),
                SearchOp(("test",), {"data": "value1"}),
                GetOp(("test",), "key3"),
            ],
        ),
        expect=("batch", ["key1", None, ["key1"], None]),
    ),
    # BASE Item: "created_at: Timestamp of item creation. updated_at: Timestamp of last
    # update"; PG: a put over an existing key updates value and updated_at, not created_at.
    Case(
        "update-keeps-created-at",
        call=("created_kept", ("t",), "d", {"v": 1}, {"v": 2}),
        expect=("times", {"value": {"v": 2}, "created_kept": True, "updated_later": True}),
        control=DIFFERS,
        control_why="InMemoryStore writes a fresh created_at on every put (its _apply_put_ops)",
    ),
    # --- search: BASE SearchOp.namespace_prefix "() # Search entire store"; DOCS: search
    # "will return all memories for a given user as a list. The most recent memory is the
    # last in the list"; SQLITE_TESTS TestSqliteStore.test_search.
    Case(
        "search-covers-sub-namespaces",
        setup=DOCS_ABC,
        call=("search", ("test",)),
        expect=("keyset", {"doc1", "doc2", "img1"}),
    ),
    Case(
        "search-one-namespace",
        setup=DOCS_ABC,
        call=("search", ("test", "docs")),
        expect=("keyset", {"doc1", "doc2"}),
    ),
    Case(
        "search-empty-prefix-is-whole-store",
        setup=(*DOCS_ABC, *puts(("other",), ("o", {"x": 1}))),
        call=("search", ()),
        expect=("keyset", {"doc1", "doc2", "img1", "o"}),
    ),
    Case(
        "search-label-not-string-prefix",
        setup=puts(("ab",), ("x", {"v": 1})),
        call=("search", ("a",)),
        expect=("keys", []),
    ),
    Case(
        "search-most-recent-last",
        setup=puts(("1", "memories"), ("m1", {"v": 1}), ("m2", {"v": 2}), ("m3", {"v": 3})),
        call=("search", ("1", "memories")),
        expect=("keys", ["m1", "m2", "m3"]),
    ),
    # BASE SearchItem.score: "Relevance/similarity score if from a ranked operation".
    Case(
        "no-query-no-score",
        setup=DOCS_ABC,
        call=("search", ("test", "docs")),
        expect=("scored", [("doc1", False), ("doc2", False)]),
    ),
    # SQLITE_TESTS test_search: limit=2 gives 2 of 3, offset=2 gives the last one.
    Case(
        "search-limit",
        setup=DOCS_ABC,
        call=("search", ("test",), {"limit": 2}),
        expect=("count", 2),
    ),
    Case(
        "search-offset",
        setup=DOCS_ABC,
        call=("search", ("test",), {"offset": 2}),
        expect=("count", 1),
    ),
    # --- filter: BASE SearchOp.filter ("exact matches or comparison operators": $eq $ne
    # $gt $gte $lt $lte, and "Multiple conditions"); SQLITE_TESTS test_search (author).
    Case(
        "filter-equality",
        setup=DOCS_ABC,
        call=("search", ("test",), {"filter": {"author": "Alice"}}),
        expect=("keyset", {"doc1", "img1"}),
    ),
    Case(
        "filter-gt",
        setup=FRUIT,
        call=("search", ("test",), {"filter": {"score": {"$gt": 4.49}}}),
        expect=("keyset", {"doc1"}),
    ),
    Case(
        "filter-gte",
        setup=FRUIT,
        call=("search", ("test",), {"filter": {"score": {"$gte": 4.0}}}),
        expect=("keyset", {"doc1", "doc3"}),
    ),
    Case(
        "filter-lt",
        setup=FRUIT,
        call=("search", ("test",), {"filter": {"score": {"$lt": 3.5}}}),
        expect=("keyset", {"doc2"}),
    ),
    Case(
        "filter-lte",
        setup=FRUIT,
        call=("search", ("test",), {"filter": {"score": {"$lte": 3.5}}}),
        expect=("keyset", {"doc2", "doc4"}),
    ),
    Case(
        "filter-eq",
        setup=FRUIT,
        call=("search", ("test",), {"filter": {"color": {"$eq": "green"}}}),
        expect=("keyset", {"doc3"}),
    ),
    Case(
        "filter-ne",
        setup=FRUIT,
        call=("search", ("test",), {"filter": {"color": {"$ne": "red"}}}),
        expect=("keyset", {"doc3", "doc4"}),
    ),
    Case(
        "filter-multiple-conditions",
        setup=FRUIT,
        call=("search", ("test",), {"filter": {"score": {"$gte": 4.0}, "color": "green"}}),
        expect=("keyset", {"doc3"}),
    ),
    # PG _get_filter_condition and InMemoryStore: an unknown operator is a ValueError
    # ("Unsupported operator"); pymemory's ValidationError is a ValueError.
    Case(
        "filter-unknown-operator",
        setup=FRUIT,
        call=("search", ("test",), {"filter": {"score": {"$regex": "x"}}}),
        expect=("raises", ValueError),
    ),
    # langchain-ai/langgraph libs/checkpoint/tests/test_inmemory_store_dotted_filters.py and
    # issue #7795: a dotted filter key walks nested objects (SqliteStore does; the
    # InMemoryStore fix is not released in the langgraph installed here).
    Case(
        "filter-dotted-key",
        setup=puts(
            ("docs",), ("hyphen", {"user": {"access-level": "nested"}}), ("flat", {"user": "x"})
        ),
        call=("search", ("docs",), {"filter": {"user.access-level": "nested"}}),
        expect=("keys", ["hyphen"]),
        control=DIFFERS,
        control_why="langgraph#7795: InMemoryStore reads dotted keys literally",
    ),
    # BASE SearchOp.filter comparisons; PG compares value->>key, which is NULL (no match)
    # for an item without the field.
    Case(
        "filter-gt-missing-field",
        setup=puts(("t",), ("has", {"score": 5}), ("lacks", {"other": 1})),
        call=("search", ("t",), {"filter": {"score": {"$gt": 1}}}),
        expect=("keys", ["has"]),
        control=DIFFERS,
        control_why="InMemoryStore raises TypeError (float(None)) on an item lacking the field",
    ),
    # --- query: STORE_TESTS test_vector_search_with_filters (filter + query, best first),
    # test_embed_with_path (a query ranks every item, unindexed ones get score None),
    # test_vector_update_with_embedding (index=False items trail; a put re-indexes),
    # test_vector_search_edge_cases (query "" returns the item).
    Case(
        "query-with-filter-ranks",
        setup=FRUIT,
        call=("search", ("test",), {"query": "apple", "filter": {"color": "red"}}),
        expect=("first_of", "doc1", 2),
    ),
    Case(
        "query-with-filter-ranks-car",
        setup=FRUIT,
        call=("search", ("test",), {"query": "car", "filter": {"color": "red"}}),
        expect=("first_of", "doc2", 2),
    ),
    Case(
        "query-with-two-conditions",
        setup=FRUIT,
        call=(
            "search",
            ("test",),
            {"query": "apple", "filter": {"score": {"$gte": 4.0}, "color": "green"}},
        ),
        expect=("first_of", "doc3", 1),
    ),
    Case(
        "query-drops-nothing",
        setup=WHALES,
        call=("search", ("w",), {"query": "zebra"}),
        expect=("keyset", {"d1", "d2", "d3"}),
    ),
    Case(
        "query-unindexed-last-without-score",
        setup=WHALES,
        call=("search", ("w",), {"query": "blue whale"}),
        expect=("scored", [("d1", True), ("d2", True), ("d3", False)]),
    ),
    Case(
        "query-unindexed-cut-by-limit",
        setup=WHALES,
        call=("search", ("w",), {"query": "blue whale", "limit": 2}),
        expect=("keys", ["d1", "d2"]),
    ),
    Case(
        "query-empty-string",
        setup=puts(("test",), ("doc1", {"text": "test document"})),
        call=("search", ("test",), {"query": ""}),
        expect=("keys", ["doc1"]),
    ),
    Case(
        "put-reindexes",
        setup=puts(
            ("test",),
            ("doc1", {"text": "zany zebra Xerxes"}),
            ("doc2", {"text": "something about dogs"}),
            ("doc3", {"text": "text about birds"}),
            ("doc1", {"text": "new text about dogs"}),
        ),
        call=("search", ("test",), {"query": "new text about dogs"}),
        expect=("first_of", "doc1", 3),
    ),
    # --- list_namespaces: BASE BaseStore.list_namespaces (the max_depth=3 example);
    # STORE_TESTS test_list_namespaces_basic / _with_wildcards / _pagination / _max_depth /
    # _no_conditions / _empty_store.
    Case(
        "list-prefix",
        setup=SPREAD,
        call=("list", {"prefix": ("a", "b")}),
        expect=(
            "nsset",
            {("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")},
        ),
    ),
    Case(
        "list-suffix",
        setup=SPREAD,
        call=("list", {"suffix": ("f",)}),
        expect=("nsset", {("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")}),
    ),
    Case(
        "list-prefix-and-suffix",
        setup=SPREAD,
        call=("list", {"prefix": ("a",), "suffix": ("f",)}),
        expect=("nsset", {("a", "b", "f"), ("a", "c", "f")}),
    ),
    Case(
        "list-max-depth-example",
        setup=SPREAD,
        call=("list", {"prefix": ("a", "b"), "max_depth": 3}),
        expect=("namespaces", [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]),
    ),
    Case(
        "list-limit",
        setup=SPREAD,
        call=("list", {"prefix": ("a", "b"), "limit": 2}),
        expect=("namespaces", [("a", "b", "c"), ("a", "b", "d", "e")]),
    ),
    Case(
        "list-offset",
        setup=SPREAD,
        call=("list", {"prefix": ("a", "b"), "offset": 2}),
        expect=("namespaces", [("a", "b", "d", "i"), ("a", "b", "f")]),
    ),
    Case(
        "list-wildcard-prefix",
        setup=SPREAD,
        call=("list", {"prefix": ("a", "*", "f")}),
        expect=("nsset", {("a", "b", "f"), ("a", "c", "f")}),
    ),
    Case(
        "list-wildcard-suffix",
        setup=SPREAD,
        call=("list", {"suffix": ("*", "f")}),
        expect=("nsset", {("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")}),
    ),
    Case(
        "list-nonexistent-prefix",
        setup=SPREAD,
        call=("list", {"prefix": ("nonexistent",)}),
        expect=("namespaces", []),
    ),
    Case(
        "list-exact-namespace",
        setup=SPREAD,
        call=("list", {"prefix": ("users", "123")}),
        expect=("namespaces", [("users", "123")]),
    ),
    Case(
        "list-max-depth-2",
        setup=SPREAD,
        call=("list", {"max_depth": 2}),
        expect=(
            "nsset",
            {
                ("a", "b"),
                ("a", "c"),
                ("b", "a"),
                ("users", "123"),
                ("users", "456"),
                ("admin", "users"),
            },
        ),
    ),
    Case("list-empty-store", call=("list", {}), expect=("namespaces", [])),
    Case(
        "list-pagination",
        setup=tuple(
            ("put", ("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"i": i}, {}) for i in range(20)
        ),
        call=("list", {"prefix": ("namespace",), "limit": 5, "offset": 5}),
        expect=("namespaces", [("namespace", f"sub_{i:02d}") for i in range(5, 10)]),
    ),
    # --- TTL: BASE PutOp.ttl ("expire this many minutes after it was last accessed. The
    # expiration timer refreshes on both read operations (get/search) and write
    # operations"), GetOp.refresh_ttl, TTLConfig; TTL_TESTS test_ttl_refresh,
    # test_ttl_override_default. InMemoryStore has supports_ttl = False.
    Case(
        "ttl-expires",
        setup=(("put", ("t",), "k", {"v": 1}, {"ttl": 1}), ("tick", 2)),
        call=("get", ("t",), "k"),
        expect=("get", None),
        control=NO_CONTROL,
    ),
    Case(
        "ttl-read-refreshes",
        setup=(
            ("put", ("t",), "k", {"v": 1}, {"ttl": 1}),
            ("tick", 0.75),
            ("get", ("t",), "k", {}),
            ("tick", 0.75),
        ),
        call=("get", ("t",), "k"),
        expect=("get", {"v": 1}),
        control=NO_CONTROL,
    ),
    Case(
        "ttl-search-refreshes",
        setup=(
            ("put", ("t",), "k", {"v": 1}, {"ttl": 1}),
            ("tick", 0.75),
            ("search", ("t",), {}),
            ("tick", 0.75),
        ),
        call=("get", ("t",), "k"),
        expect=("get", {"v": 1}),
        control=NO_CONTROL,
    ),
    Case(
        "ttl-no-refresh-when-asked",
        setup=(
            ("put", ("t",), "k", {"v": 1}, {"ttl": 1}),
            ("tick", 0.75),
            ("get", ("t",), "k", {"refresh_ttl": False}),
            ("tick", 0.75),
        ),
        call=("search", ("t",), {"refresh_ttl": False}),
        expect=("keys", []),
        control=NO_CONTROL,
    ),
    Case(
        "ttl-none-never-expires",
        setup=(("put", ("t",), "k", {"v": 1}, {"ttl": None}), ("tick", 60 * 24 * 365)),
        call=("get", ("t",), "k"),
        expect=("get", {"v": 1}),
        control=NO_CONTROL,
    ),
    Case(
        "ttl-put-restarts-timer",
        setup=(
            ("put", ("t",), "k", {"v": 1}, {"ttl": 1}),
            ("tick", 0.75),
            ("put", ("t",), "k", {"v": 2}, {"ttl": 1}),
            ("tick", 0.75),
        ),
        call=("get", ("t",), "k"),
        expect=("get", {"v": 2}),
        control=NO_CONTROL,
    ),
    # BASE TTLConfig.omit_expired (default False: "expired items" are returned until "a TTL
    # sweep deletes them"); TTL_TESTS test_omit_expired_disabled_preserves_expired_rows.
    Case(
        "ttl-expired-before-sweep",
        setup=(("put", ("t",), "k", {"v": 1}, {"ttl": 1}), ("tick", 2)),
        call=("get", ("t",), "k", {"refresh_ttl": False}),
        expect=("get", {"v": 1}),
        ours=("get", None),
        why="an expired item is never returned (omit_expired is always on)",
        control=NO_CONTROL,
    ),
    # --- values: BASE BaseStore.put "value: Mapping containing the item's data. Must
    # contain string keys and JSON-serializable values".
    Case(
        "value-non-string-key",
        call=("put", ("t",), "k", {1: "x"}),
        expect=("raises", ValueError),
        control=DIFFERS,
        control_why="InMemoryStore stores any dict without checking it",
    ),
    Case(
        "value-not-json",
        call=("put", ("t",), "k", {"s": {1, 2}}),
        expect=("raises", ValueError),
        control=DIFFERS,
        control_why="InMemoryStore fails with json.dumps's TypeError while embedding (and "
        "stores the value when it has no index)",
    ),
]


# --- running a case ----------------------------------------------------------------------


def _hashing_embed(texts: list[str]) -> list[list[float]]:
    return HASHING.embed_sync(texts).tolist()


@dataclass
class Subject:
    kind: str
    store: BaseStore
    clock: Clock | None


@pytest.fixture
async def subject(request, tmp_path):
    kind = request.param
    if kind == "inmemory":
        yield Subject(kind, InMemoryStore(index={"dims": 384, "embed": _hashing_embed}), None)
        return
    clock = Clock()
    kv = MapKv() if kind == "mapkv" else await SqliteKv.open(tmp_path / "lg.db")
    yield Subject(kind, PymemoryStore(kv, clock=clock), clock)
    await kv.close()


async def _step(s: Subject, step: tuple) -> Any:
    store = s.store
    op, *args = step
    if op == "put":
        ns, key, value, *rest = args
        return await store.aput(ns, key, value, **(rest[0] if rest else {}))
    if op == "get":
        ns, key, *rest = args
        return await store.aget(ns, key, **(rest[0] if rest else {}))
    if op == "search":
        ns, *rest = args
        return await store.asearch(ns, **(rest[0] if rest else {}))
    if op == "list":
        return await store.alist_namespaces(**args[0])
    if op == "delete":
        return await store.adelete(*args)
    if op == "batch":
        return await store.abatch(args[0])
    if op == "tick":
        if s.clock is not None:
            s.clock.advance(round(args[0] * 60_000))
        else:
            time.sleep(0.002)  # InMemoryStore reads the real clock
        return None
    if op == "created_kept":
        ns, key, v1, v2 = args
        await store.aput(ns, key, v1)
        first = await store.aget(ns, key)
        await _step(s, ("tick", 1))
        await store.aput(ns, key, v2)
        second = await store.aget(ns, key)
        return {
            "value": second.value,
            "created_kept": second.created_at == first.created_at,
            "updated_later": second.updated_at > first.updated_at,
        }
    raise AssertionError(f"unknown step {op}")


def _observe(kind: str, result: Any, expect: tuple) -> Any:
    if kind == "get":
        return None if result is None else result.value
    if kind == "keys":
        return [r.key for r in result]
    if kind == "keyset":
        return {r.key for r in result}
    if kind == "count":
        return len(result)
    if kind == "scored":
        return [(r.key, r.score is not None) for r in result]
    if kind == "first_of":
        return (result[0].key if result else None, len(result))
    if kind == "namespaces":
        return [tuple(ns) for ns in result]
    if kind == "nsset":
        return {tuple(ns) for ns in result}
    if kind == "times":
        return result
    if kind == "batch":
        out = []
        for r in result:
            if r is None:
                out.append(None)
            elif isinstance(r, list):
                out.append([x.key for x in r])
            else:
                out.append(r.key)
        return out
    raise AssertionError(f"unknown expectation {kind}")


async def _outcome(s: Subject, case: Case, expect: tuple) -> Any:
    for step in case.setup:
        await _step(s, step)
    try:
        result = await _step(s, case.call)
    except Exception as exc:
        return ("raises", type(exc))
    if expect[0] == "raises":
        return ("returned", result)
    if expect[0] == "then_search":
        return ("then_search", expect[1], [r.key for r in await s.store.asearch(expect[1])])
    return (expect[0], _observe(expect[0], result, expect), *expect[2:])[: len(expect)]


def _matches(outcome: Any, expect: tuple) -> bool:
    if expect[0] == "raises":
        return outcome[0] == "raises" and issubclass(outcome[1], expect[1])
    if expect[0] == "first_of":
        return outcome[1] == (expect[1], expect[2])
    return outcome == expect


def _params() -> list:
    out = []
    for case in CASES:
        for kind in ("mapkv", "sqlite", "inmemory"):
            if kind == "inmemory" and case.control == NO_CONTROL:
                continue
            out.append(pytest.param(kind, case, id=f"{case.id}[{kind}]"))
    return out


@pytest.mark.parametrize(("subject", "case"), _params(), indirect=["subject"])
async def test_published_store_behaviour(subject, case: Case):
    if subject.kind == "inmemory":
        outcome = await _outcome(subject, case, case.expect)
        if case.control == DIFFERS:
            assert not _matches(outcome, case.expect), (
                f"InMemoryStore now does what LangGraph publishes ({case.control_why!r} no longer "
                "holds): mark the case SAME"
            )
        else:
            assert _matches(outcome, case.expect), outcome
        return
    expect = case.ours or case.expect
    outcome = await _outcome(subject, case, expect)
    assert _matches(outcome, expect), (outcome, case.why)


def test_every_deliberate_difference_is_named_and_in_the_readme():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("### LangGraph store", 1)[1].split("\n## ", 1)[0]
    for case in CASES:
        assert (case.ours is None) == (not case.why), case.id
        assert case.control != DIFFERS or case.control_why, case.id
    assert "omit_expired" in section  # the one deliberate difference (ttl-expired-before-sweep)


def test_cases_cover_every_op_kind():
    calls = {case.call[0] for case in CASES}
    assert {"get", "put", "search", "list", "batch"} <= calls
    assert len(CASES) >= 50


# --- bad input: typed errors, store unchanged ----------------------------------------------


@pytest.fixture
async def store():
    kv = MapKv()
    yield PymemoryStore(kv, clock=Clock())
    await kv.close()


@pytest.mark.parametrize(
    ("op", "error"),
    [
        (PutOp(("t",), "k", {"x": float("nan")}), ValidationError),
        (PutOp(("t",), "k", ["not", "a", "dict"]), ValidationError),  # type: ignore[arg-type]
        (PutOp(("t",), "k", {"x": 1}, ttl=-1), ValidationError),
        (PutOp(("t",), "k", {"x": 1}, ttl=1e300), ValidationError),
        (PutOp(("t",), "k", {"x": 1}, index="text"), ValidationError),  # type: ignore[arg-type]
        (PutOp(("t",), "a\x00b", {"x": 1}), ValidationError),
        (PutOp(("t",), "k" * 2000, {"x": 1}), ValidationError),
        (PutOp(("t",), 7, {"x": 1}), ValidationError),  # type: ignore[arg-type]
        (PutOp(("t\ud800",), "k", {"x": 1}), InvalidNamespaceError),
        (PutOp(("a.b",), "k", {"x": 1}), InvalidNamespaceError),
        (SearchOp(("t",), limit=-1), ValidationError),
        (SearchOp(("t",), offset=True), ValidationError),  # type: ignore[arg-type]
        (SearchOp(("t",), filter={"x": {"$gt": 1, "y": 2}}), ValidationError),
        (SearchOp(("t",), query=5), ValidationError),  # type: ignore[arg-type]
        (ListNamespacesOp(max_depth=0), ValidationError),
        ("not an op", ValidationError),
    ],
)
async def test_bad_input_raises_and_changes_nothing(store, op, error):
    await store.aput(("t",), "keep", {"v": 1})
    before = dict(store.kv._data)
    good = PutOp(("t",), "new", {"v": 2})
    with pytest.raises(error):
        await store.abatch([good, op])  # the good op in the same batch is not applied either
    assert store.kv._data == before
    assert issubclass(error, ValueError)  # both are ValueErrors, as LangGraph's stores raise


async def test_value_depth_limit(store):
    def nest(depth: int) -> Any:
        value: Any = "x"
        for _ in range(depth):
            value = {"a": value}
        return value

    await store.aput(("t",), "deep", nest(64))
    assert (await store.aget(("t",), "deep")).value == nest(64)
    with pytest.raises(ValidationError, match="nests deeper"):
        await store.aput(("t",), "deeper", nest(65))


def test_imports_without_sqlite3():
    """Pyodide may lack sqlite3: the module must not need it (SqliteKv is imported lazily)."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['sqlite3'] = None; sys.modules['_sqlite3'] = None\n"
        "from pymemory.integrations.langgraph import PymemoryStore\n"
        "from pymemory.storage import MapKv\n"
        "s = PymemoryStore(MapKv()); s.put(('a',), 'k', {'v': 1})\n"
        "print(s.get(('a',), 'k').value)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "{'v': 1}"


async def test_store_rejects_bad_configuration():
    with pytest.raises(ValidationError):
        PymemoryStore({})  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        PymemoryStore(MapKv(), ttl={"omit_expired": False})
    with pytest.raises(ValidationError):
        PymemoryStore(MapKv(), ttl={"default_ttl": 0})
    with pytest.raises(ValidationError):
        PymemoryStore(MapKv(), ttl={"sweep": 1})  # type: ignore[typeddict-unknown-key]
    with pytest.raises(ValidationError):
        PymemoryStore(MapKv(), fields="text")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        PymemoryStore(MapKv(), embedder=object())  # type: ignore[arg-type]


# --- what LangGraph leaves to the store: our choices, checked ------------------------------


async def test_default_ttl_refresh_and_sweep():
    clock = Clock()
    kv = MapKv()
    store = PymemoryStore(kv, ttl={"default_ttl": 1, "refresh_on_read": False}, clock=clock)
    await store.aput(("t",), "short", {"v": 1})  # default_ttl applies
    await store.aput(("t",), "long", {"v": 2}, ttl=None)  # no expiry
    clock.advance(30_000)
    assert (await store.aget(("t",), "short")).value == {"v": 1}  # no refresh: config says so
    clock.advance(40_000)
    assert await store.aget(("t",), "short") is None
    assert await store.alist_namespaces() == [("t",)]  # "long" still lives there
    await store.aput(("x",), "gone", {"v": 3}, ttl=0.5)
    clock.advance(60_000)
    assert await store.alist_namespaces() == [("t",)]  # an expired-only namespace is not listed
    assert await store.asweep_ttl() == 1  # "short" was deleted by the read that saw it expired
    assert [k for k in kv._data if k.startswith("lg:i:")] == ["lg:i:t..long"]


async def test_search_scores_and_sort_keys():
    store = PymemoryStore(MapKv(), clock=Clock())
    await store.aput(("u",), "a", {"text": "the cat sat on the mat"})
    await store.aput(("u",), "b", {"text": "a cat and a hat"})
    await store.aput(("u",), "c", {"text": "dogs bark"})
    found = await store.asearch(("u",), query="cat hat")
    assert [r.key for r in found] == ["b", "a", "c"]
    assert found[0].score > found[1].score > 0 == found[2].score
    assert all(0 <= r.score <= 1 for r in found)
    assert found[0].value == {"text": "a cat and a hat"}
    assert found[0].created_at.tzinfo is not None


async def test_value_keeps_key_order_and_fields_index():
    store = PymemoryStore(MapKv(), fields=["title"], clock=Clock())
    await store.aput(("d",), "1", {"z": "last", "title": "garden tools", "body": "hammer"})
    await store.aput(("d",), "2", {"title": "kitchen", "body": "garden hose"})
    assert list((await store.aget(("d",), "1")).value) == ["z", "title", "body"]
    found = await store.asearch(("d",), query="garden")
    assert [(r.key, r.score > 0) for r in found] == [("1", True), ("2", False)]  # title only
    await store.aput(("d",), "3", {"title": "x", "body": "garden"}, index=["body"])
    found = await store.asearch(("d",), query="garden", limit=2)
    assert {r.key for r in found} == {"1", "3"}


def test_sync_methods_work_outside_and_refuse_inside_a_loop():
    store = PymemoryStore(MapKv(), clock=Clock())
    store.put(("s",), "k", {"v": 1})
    assert store.get(("s",), "k").value == {"v": 1}
    assert [i.key for i in store.search(("s",))] == ["k"]
    assert store.list_namespaces() == [("s",)]
    assert store.sweep_ttl() == 0

    async def inside() -> None:
        with pytest.raises(asyncio.InvalidStateError):
            store.get(("s",), "k")
        await store.aget(("s",), "k")  # the store now knows this loop
        # From a worker thread, the sync API runs its coroutine on this loop.
        item = await asyncio.to_thread(store.get, ("s",), "k")
        assert item.value == {"v": 1}

    asyncio.run(inside())


async def test_keys_do_not_clash_and_a_memory_opens_the_same_kv():
    from pymemory import Memory

    kv = MapKv()
    store = PymemoryStore(kv, clock=Clock())
    await store.aput(("users", "1"), "k.with..dots", {"v": 1})
    await store.aput(("users",), "1", {"v": 2})
    assert (await store.aget(("users", "1"), "k.with..dots")).value == {"v": 1}
    assert [i.key for i in await store.asearch(("users", "1"))] == ["k.with..dots"]
    assert {i.key for i in await store.asearch(("users",))} == {"k.with..dots", "1"}
    assert all(k.startswith(("lg:", "meta:")) for k in kv._data)
    memory = await Memory.open(kv)  # one KV: the store and a Memory side by side
    assert (await store.aget(("users",), "1")).value == {"v": 2}
    await memory.close()


# --- (b) two instances over one SQLite file ---------------------------------------------


async def test_two_instances_over_one_sqlite_file_see_each_other(tmp_path):
    path = tmp_path / "shared.db"
    kv_a, kv_b = await SqliteKv.open(path), await SqliteKv.open(path)
    clock = Clock()
    a, b = PymemoryStore(kv_a, clock=clock), PymemoryStore(kv_b, clock=clock)
    try:
        await a.aput(("u", "1"), "pref", {"theme": "dark"})
        item = await b.aget(("u", "1"), "pref")
        assert item.value == {"theme": "dark"}
        clock.advance(1000)
        await b.aput(("u", "1"), "pref", {"theme": "light"})  # an update from the other side
        again = await a.aget(("u", "1"), "pref")
        assert again.value == {"theme": "light"}
        assert again.created_at == item.created_at and again.updated_at > item.updated_at
        await b.adelete(("u", "1"), "pref")
        assert await a.aget(("u", "1"), "pref") is None
        assert await a.alist_namespaces() == []

        # Many writes at once from both: nothing lost, every key created exactly once.
        await asyncio.gather(
            *(a.aput(("n",), f"a{i}", {"i": i}) for i in range(20)),
            *(b.aput(("n",), f"b{i}", {"i": i}) for i in range(20)),
            *(b.aput(("n",), "both", {"from": "b", "i": i}) for i in range(5)),
            *(a.aput(("n",), "both", {"from": "a", "i": i}) for i in range(5)),
        )
        seen_a = await a.asearch(("n",), limit=100)
        seen_b = await b.asearch(("n",), limit=100)
        assert len(seen_a) == 41 and [i.key for i in seen_a] == [i.key for i in seen_b]
        seqs = [json.loads(await kv_a.get("lg:i:n.." + i.key))["seq"] for i in seen_a]
        assert sorted(seqs) == list(range(seqs[0], seqs[0] + 41))
    finally:
        await kv_a.close()
        await kv_b.close()


# --- (c) semantic search with the real MiniLM -------------------------------------------


async def test_minilm_finds_a_paraphrase():
    from pymemory.models import load_minilm
    from pymemory.models.ort import OrtRuntime

    embedder = await load_minilm(OrtRuntime(intra_op_threads=1))
    memories = [
        ("m1", {"memory": "The user prefers dark mode in every editor."}),
        ("m2", {"memory": "The user lives in Lisbon and works remotely."}),
        ("m3", {"memory": "The user's dog is called Biscuit."}),
        ("m4", {"memory": "Quarterly reports are due on the first Monday."}),
    ]
    semantic = PymemoryStore(MapKv(), embedder=embedder, clock=Clock())
    lexical = PymemoryStore(MapKv(), clock=Clock())
    for key, value in memories:
        await semantic.aput(("u", "memories"), key, value)
        await lexical.aput(("u", "memories"), key, value)
    query = "What is the name of my pet?"  # shares no word with the answer
    found = await semantic.asearch(("u", "memories"), query=query, limit=2)
    assert found[0].key == "m3" and found[0].score > found[1].score
    assert [r.score for r in await lexical.asearch(("u", "memories"), query=query)] == [0.0] * 4
    assert (await semantic.asearch(("u",), query="Which city is home?", limit=1))[0].key == "m2"


# --- (d) a LangGraph agent that remembers across threads ----------------------------------


@dataclass(frozen=True)
class Spec:
    name: str
    description: str
    parameters: dict


SAVE = Spec(
    "save_memory",
    "Save a fact about the user for later conversations.",
    {"type": "object", "properties": {"memory": {"type": "string"}}, "required": ["memory"]},
)


def _to_pymemory(message: Any) -> Message:
    if isinstance(message, ToolMessage):
        return Message.tool_result(message.tool_call_id, str(message.content))
    if isinstance(message, AIMessage):
        calls = [ToolCall(c["id"], c["name"], c["args"]) for c in message.tool_calls]
        return Message.assistant(str(message.content), calls)
    return Message.user(str(message.content))


def build_agent(model: OpenAIChatModel) -> StateGraph:
    async def call_model(state: MessagesState, config: RunnableConfig, *, store: BaseStore):
        namespace = (config["configurable"]["user_id"], "memories")
        last = state["messages"][-1]
        query = str(last.content) if last.type == "human" else None
        found = await store.asearch(namespace, query=query, limit=3)
        system = "You are a helpful assistant. What you know about the user:\n" + "\n".join(
            f"- {item.value['memory']}" for item in found
        )
        reply = await model(
            ChatRequest([_to_pymemory(m) for m in state["messages"]], tools=[SAVE], system=system)
        )
        calls = [{"id": c.id, "name": c.name, "args": c.arguments} for c in reply.tool_calls]
        return {"messages": [AIMessage(content=reply.text, tool_calls=calls)]}

    async def save_memories(state: MessagesState, config: RunnableConfig, *, store: BaseStore):
        namespace = (config["configurable"]["user_id"], "memories")
        out = []
        for call in state["messages"][-1].tool_calls:
            await store.aput(namespace, str(uuid.uuid4()), {"memory": call["args"]["memory"]})
            out.append(ToolMessage(content="saved", tool_call_id=call["id"]))
        return {"messages": out}

    def route(state: MessagesState) -> str:
        return "save_memories" if state["messages"][-1].tool_calls else END

    graph = StateGraph(MessagesState)
    graph.add_node("call_model", call_model)
    graph.add_node("save_memories", save_memories)
    graph.add_edge(START, "call_model")
    graph.add_conditional_edges("call_model", route, ["save_memories", END])
    graph.add_edge("save_memories", "call_model")
    return graph


def test_a_synchronous_graph_uses_the_sync_api(tmp_path):
    """graph.invoke runs sync nodes without an event loop: store.put/search work there."""

    def remember(state: MessagesState, *, store: BaseStore):
        store.put(("u",), "fact", {"memory": state["messages"][-1].content})
        found = store.search(("u",), query="tea")
        return {"messages": [AIMessage(content=found[0].value["memory"])]}

    kv = MapKv()
    graph = StateGraph(MessagesState)
    graph.add_node("remember", remember)
    graph.add_edge(START, "remember")
    app = graph.compile(store=PymemoryStore(kv))
    out = app.invoke({"messages": [{"role": "user", "content": "I drink green tea."}]})
    assert out["messages"][-1].content == "I drink green tea."


async def test_langgraph_agent_recalls_a_fact_in_another_thread(llm_server, tmp_path):
    kv = await SqliteKv.open(tmp_path / "agent.db")
    transport = HttpxTransport()
    try:
        model = OpenAIChatModel(
            llm_server.url + "/v1", "sk-test", "gpt-4.1-mini", transport=transport
        )
        app = build_agent(model).compile(checkpointer=InMemorySaver(), store=PymemoryStore(kv))
        # Thread 1: the model decides to save a fact, then answers.
        llm_server.reply_openai(
            tool_calls=[("call_1", "save_memory", {"memory": "The user's dog is called Biscuit."})]
        )
        llm_server.reply_openai("Noted: Biscuit.")
        thread1 = {"configurable": {"thread_id": "1", "user_id": "ada"}}
        out = await app.ainvoke(
            {"messages": [{"role": "user", "content": "My dog is called Biscuit."}]}, thread1
        )
        assert out["messages"][-1].content == "Noted: Biscuit."
        # Thread 2: a new conversation; the store brings the fact back into the prompt.
        llm_server.reply_openai("Your dog is Biscuit.")
        thread2 = {"configurable": {"thread_id": "2", "user_id": "ada"}}
        out = await app.ainvoke(
            {"messages": [{"role": "user", "content": "What is my dog called?"}]}, thread2
        )
        assert out["messages"][-1].content == "Your dog is Biscuit."

        assert len(llm_server.requests) == 3
        first, _, recall = (r.body for r in llm_server.requests)
        assert "Biscuit" not in first["messages"][0]["content"]  # nothing stored yet
        system, *turns = recall["messages"]
        assert (
            system["role"] == "system"
            and "- The user's dog is called Biscuit." in system["content"]
        )
        # The checkpointer keeps threads apart: thread 2's request holds only its own turn.
        assert turns == [{"role": "user", "content": "What is my dog called?"}]
        assert recall["tools"][0]["function"]["name"] == "save_memory"
        # Another user's namespace does not see it.
        assert await PymemoryStore(kv).asearch(("bob", "memories")) == []
    finally:
        await transport.close()
        await kv.close()
