"""LangGraph's published store behaviours, restated as data (input -> expected outcome),
for tests/integrations/test_langgraph_published.py.

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

A case where LangGraph's InMemoryStore is known to disagree with the published behaviour
says so (``control=DIFFERS``); a case where pymemory deliberately differs carries ``ours=``
and ``why=`` (docs/langgraph.md names each).
"""

from __future__ import annotations

from dataclasses import dataclass

from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from pymemory.models.embedding import HashingEmbedder

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
