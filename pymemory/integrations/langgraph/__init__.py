"""A LangGraph store on any pymemory KvBackend: :class:`PymemoryStore`.

``PymemoryStore(kv)`` is a ``langgraph.store.base.BaseStore``: compile a graph with
``store=PymemoryStore(kv)`` and its nodes get ``get``/``put``/``search``/``delete``/
``list_namespaces`` (and the ``a``-prefixed coroutines) over a MapKv, a SQLite file or the
browser's IndexedDB. What it does, in LangGraph's terms:

* **Namespaces** are tuples of labels (``("users", "42", "memories")``); a label is a
  non-empty string without ``.`` or NUL (LangGraph's rule, its ``InvalidNamespaceError``).
  ``search(prefix)`` covers the prefix and every namespace below it; ``()`` is the store.
* **Items** carry ``created_at`` (kept when a put replaces the value) and ``updated_at``.
  A ``PutOp`` whose value is None deletes.
* **Search** without a query returns the items under the prefix oldest first (LangGraph's
  docs: "the most recent memory is the last in the list"). With a query, every item is
  ranked and none is dropped for not matching: the score is pymemory's relevance, the
  query's BM25 share over the item's indexed text (:mod:`pymemory.retrieval.bm25` on
  :mod:`~pymemory.retrieval.analyzer` terms) fused with the cosine of its embeddings
  when an ``embedder`` is attached (:func:`pymemory.retrieval.fusion.score_fusion`, the
  weights ``Memory.retrieve`` uses). An item put with ``index=False`` has no indexed
  text: it comes after the ranked ones with ``score=None``, as in LangGraph.
* **filter=** matches value fields by equality (nested dicts by containment, a dotted key
  such as ``"user.name"`` walks nested objects) or with ``$eq $ne $gt $gte $lt $lte``.
  Comparisons hold between two numbers or two strings; a missing field satisfies only
  ``$ne``. ``limit``/``offset`` page after filtering.
* **TTL** in minutes (``ttl=`` on a put, ``ttl={"default_ttl": ..}`` on the store); a read
  with ``refresh_ttl`` (the default) restarts the clock of what it returns. An expired
  item is never returned, listed or counted (LangGraph's ``omit_expired``, always on),
  and it is deleted by the next write that sees it or by :meth:`PymemoryStore.sweep_ttl`.

Several writers (processes on one SQLite file, tabs on one IndexedDB) stay correct: each
batch's writes are one ``kv.transact`` that reads the records it replaces, so a put keeps
the ``created_at`` another writer set and nothing is lost between read and write. There
is no cache: every read goes to the KV, so instances see each other's writes at once.
Like LangGraph's own stores, the reads of a batch see the store as it was before the
batch's writes.

Key layout (``<ns>`` is each label followed by ``.``; labels hold no ``.``, so the first
``..`` ends the namespace)::

    lg:i:<ns>.<key>    an item: canonical JSON (value, times, creation sequence, ttl, index)
    lg:v:<ns>.<key>    its embeddings: a JSON header line, then pymemory's vector records
    lg:seq             the last creation sequence number (orders items created at once)

The synchronous methods (``get``, ``put``, ``search``...) run the coroutine on the event
loop the store was last used from with ``await`` (when it runs in another thread) or on a
private one; from inside a running loop use the ``a``-methods. In the browser (Pyodide)
use the ``a``-methods only.
"""

from __future__ import annotations

try:
    import langgraph.store.base  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"pymemory.integrations.langgraph needs langgraph ({exc}); "
        "install it with: pip install 'pymemory-agent[langgraph]'"
    ) from exc

from .checks import KEY_PREFIX
from .store import PymemoryStore

__all__ = ["KEY_PREFIX", "PymemoryStore"]
