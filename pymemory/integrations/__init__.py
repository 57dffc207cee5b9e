"""Adapters that let other agent frameworks keep their memory in pymemory.

Each adapter is one module with its framework as an optional extra, imported only when
asked for, so ``import pymemory`` never needs a framework installed:

* :mod:`pymemory.integrations.langgraph`: ``PymemoryStore``, a LangGraph ``BaseStore`` on
  any KvBackend (``pip install 'pymemory-agent[langgraph]'``).
* :mod:`pymemory.integrations.server`: ``MemoryPool``, many users' memories in one server
  process (opened on demand, least recently used closed; docs/server-store.md).

Integrations use the layers (storage, models, retrieval, the facade); nothing inside
pymemory imports them.
"""
