"""Interface to the browser (seed 002, layer 4).

:mod:`.api` is the JSON API the worker serves (plain Python, tested in CPython), with the
agent primitives' methods in :mod:`.agent_api`. :mod:`.pyodide` is the one module that
knows it runs in Pyodide: the IndexedDB and onnxruntime-web bridges. It is imported only
by the worker, never from here.
"""
