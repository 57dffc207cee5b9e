// Benchmark baseline: a worker that only loads Pyodide (and optionally numpy), nothing else.
self.onmessage = async (event) => {
  const t0 = performance.now();
  const { loadPyodide } = await import("/vendor/pyodide/pyodide.mjs");
  const pyodide = await loadPyodide({ indexURL: "/vendor/pyodide/" });
  const runtimeMs = performance.now() - t0;
  if (event.data?.numpy) await pyodide.loadPackage("numpy", { messageCallback: () => {} });
  self.postMessage({ runtimeMs, totalMs: performance.now() - t0 });
};
