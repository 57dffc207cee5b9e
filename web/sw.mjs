// An optional service worker for offline use: it serves the app's and pymemory's files
// from a cache when the network is down (network first, so online visits always get the
// current files). The large assets (Pyodide, the wheels, the models) need none of this:
// the pymemory worker keeps them in Cache Storage itself and reads them from there.
//
// Register it from your page, served from your app's root so that its scope covers it:
//   navigator.serviceWorker.register("/pymemory-sw.mjs", { type: "module" })
// where /pymemory-sw.mjs is a copy of this file (or a module that imports it).

const CACHE = "pymemory-offline-v1";

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET" || new URL(request.url).origin !== self.location.origin) return;
  event.respondWith(
    (async () => {
      const cache = await caches.open(CACHE);
      try {
        const response = await fetch(request);
        // "no-store" requests are the worker's own cached downloads: not stored twice.
        if (response.ok && request.cache !== "no-store") await cache.put(request, response.clone());
        return response;
      } catch (err) {
        const hit = await cache.match(request, { ignoreSearch: false });
        if (hit) return hit;
        throw err;
      }
    })(),
  );
});
