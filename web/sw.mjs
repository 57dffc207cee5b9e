// An optional service worker for offline use: it serves the app's and pymemory's files
// from a cache when the network is down (network first, so online visits always get the
// current files). The large assets (Pyodide, the wheels, the models) need none of this:
// the pymemory worker keeps them in Cache Storage itself and reads them from there.
//
// Serve a copy of this file (or a module that imports it) at your app's root, as
// /pymemory-sw.mjs, and register it from your page with the package's offline.mjs:
//   import { registerOffline } from "pymemory/offline";
//   registerOffline("/pymemory-sw.mjs", { assetsUrl });
// which also hands it the files the first visit loaded before it took control (the page,
// the bundle, the store worker's modules): it caches them, so the second visit works with
// the network off.

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
        const hit = await cache.match(request, { ignoreVary: true }); // dev servers vary on Origin
        if (hit) return hit;
        throw err;
      }
    })(),
  );
});

// { op: "pymemory-precache", urls } (offline.mjs): cache what the first visit loaded; the
// answer ({ ok, cached, failed }) goes to the message's port.
self.addEventListener("message", (event) => {
  if (event.data?.op !== "pymemory-precache" || !Array.isArray(event.data.urls)) return;
  const port = event.ports[0];
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      const cached = [];
      const failed = [];
      await Promise.all(
        event.data.urls
          .filter((url) => typeof url === "string" && new URL(url).origin === self.location.origin)
          .map(async (url) => {
            try {
              const response = await fetch(url);
              if (!response.ok) throw new Error(`HTTP ${response.status}`);
              await cache.put(url, response);
              cached.push(url);
            } catch (err) {
              failed.push(`${url}: ${err?.message ?? err}`);
            }
          }),
      );
      port?.postMessage({ ok: true, cached, failed });
    })().catch((err) => port?.postMessage({ ok: false, error: String(err?.message ?? err) })),
  );
});
