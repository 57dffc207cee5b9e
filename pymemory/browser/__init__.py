"""Interface to the browser (seed 002, layer 4).

:mod:`.api` is the JSON API the worker serves (plain Python, tested in CPython), with the
agent primitives' methods in :mod:`.agent_api`. :mod:`.pyodide` is the one module that
knows it runs in Pyodide: the IndexedDB (``idb_kv.mjs``, shipped beside it), WebCrypto
(``webcrypto.mjs``, for encrypted stores) and onnxruntime-web bridges, and ``open_memory``
for any Pyodide. It is imported by the worker
or by the user's own Pyodide code, never from here.
"""
