"""Interface to the browser (seed 002, layer 4), in two packages.

:mod:`.rpc` is the JSON API the worker serves: plain Python, runtime-free, tested in
CPython. :mod:`.pyodide` is the one package that knows it runs in Pyodide: the browser's
implementations of the core's seams (IndexedDB KV, WebCrypto, onnxruntime-web, the token
counter), each beside its JS half, and ``open_memory`` for any Pyodide. It is imported by
the worker or by the user's own Pyodide code, never from here.
"""
