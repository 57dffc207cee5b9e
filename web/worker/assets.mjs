// Large files the worker needs (Pyodide's core, the wheels, the models), read through
// Cache Storage: the first visit downloads them with byte progress, later visits read
// them from the cache without touching the network (so a reload boots offline too).
// A file whose bytes do not match what is expected (sha256, size) is refused loudly; a
// cached copy that no longer matches is dropped and downloaded again.

export async function sha256hex(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function openCache(name) {
  try {
    return await caches.open(name);
  } catch {
    return null; // no Cache Storage (e.g. an opaque origin): always download
  }
}

function matches(want, size, hash) {
  return !want || (want.sha256 === hash && (want.size == null || want.size === size));
}

// Download `url`, calling onProgress(loaded, total) as bytes arrive (total: Content-Length
// or null). `fetchFn` is the network fetch (the worker replaces globalThis.fetch).
async function download(url, fetchFn, onProgress) {
  let response;
  try {
    response = await fetchFn(url, { cache: "no-store" });
  } catch (err) {
    throw new Error(`cannot fetch ${url}: ${err?.message ?? err}`);
  }
  if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status}`);
  const total = Number(response.headers.get("content-length")) || null;
  const type = response.headers.get("content-type") ?? "application/octet-stream";
  if (!response.body) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    onProgress?.(bytes.byteLength, total ?? bytes.byteLength);
    return { bytes, type };
  }
  const reader = response.body.getReader();
  const chunks = [];
  let loaded = 0;
  onProgress?.(0, total);
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (err) {
      throw new Error(`the download of ${url} broke off after ${loaded} of ${total ?? "?"} bytes: ${err?.message ?? err}`);
    }
    const { done, value } = chunk;
    if (done) break;
    chunks.push(value);
    loaded += value.byteLength;
    onProgress?.(loaded, total);
  }
  if (total != null && loaded !== total && !response.headers.get("content-encoding")) {
    throw new Error(`the download of ${url} broke off after ${loaded} of ${total} bytes`);
  }
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return { bytes, type };
}

/**
 * The bytes of `url`: { bytes, type, source: "cache" | "network", size, sha256, verified,
 * replaced, ms }. Options: cacheName (null: no cache), expect ({ sha256, size } or null),
 * onProgress(loaded, total), fetchFn, storeLater (true: return a download's bytes before
 * they are cached, with `stored`: a promise of the cacheError, undefined once cached).
 */
export async function readCached(url, options = {}) {
  const { cacheName = null, expect = null, onProgress, fetchFn = fetch, storeLater = false } = options;
  const t0 = performance.now();
  const cache = cacheName ? await openCache(cacheName) : null;
  const record = { url, source: "network", size: 0, sha256: null, verified: !!expect };
  const hit = cache ? await cache.match(url) : undefined;
  if (hit) {
    const bytes = new Uint8Array(await hit.arrayBuffer());
    const hash = await sha256hex(bytes);
    const stored = hit.headers.get("x-pymemory-sha256");
    if (hash === stored && matches(expect, bytes.byteLength, hash)) {
      onProgress?.(bytes.byteLength, bytes.byteLength);
      const type = hit.headers.get("content-type") ?? "application/octet-stream";
      Object.assign(record, { source: "cache", size: bytes.byteLength, sha256: hash });
      const done = { bytes, type, ...record, ms: performance.now() - t0 };
      return storeLater ? { ...done, stored: Promise.resolve() } : done;
    }
    record.replaced = hash === stored ? "stale" : "corrupt";
    await cache.delete(url);
  }
  const { bytes, type } = await download(url, fetchFn, onProgress);
  const hash = await sha256hex(bytes);
  if (!matches(expect, bytes.byteLength, hash)) {
    throw new Error(
      `${url}: ${bytes.byteLength} bytes with sha256 ${hash} do not match the expected ` +
        `${expect.size ?? "?"} bytes with sha256 ${expect.sha256}`,
    );
  }
  let stored = Promise.resolve();
  if (cache) {
    const headers = {
      "content-type": type,
      "content-length": String(bytes.byteLength),
      "x-pymemory-sha256": hash,
    };
    stored = cache.put(url, new Response(bytes, { headers })).then(
      () => undefined,
      (err) => (record.cacheError = String(err?.message ?? err)), // quota: still usable this time
    );
    if (!storeLater) await stored;
  }
  Object.assign(record, { size: bytes.byteLength, sha256: hash });
  const done = { bytes, type, ...record, ms: performance.now() - t0 };
  return storeLater ? { ...done, stored } : done;
}

/**
 * A file only the cache holds (no network copy; e.g. a Pyodide memory snapshot):
 * { bytes, headers } when `url` is cached in `cacheName` and its bytes match the sha256
 * stored with them; { bytes: null, reason } otherwise ("absent", "no cache", or "corrupt":
 * a copy that no longer matches is deleted).
 */
export async function readCacheOnly(url, cacheName) {
  const cache = await openCache(cacheName);
  if (!cache) return { bytes: null, reason: "no cache" };
  const hit = await cache.match(url);
  if (!hit) return { bytes: null, reason: "absent" };
  const bytes = new Uint8Array(await hit.arrayBuffer());
  if ((await sha256hex(bytes)) !== hit.headers.get("x-pymemory-sha256")) {
    await cache.delete(url);
    return { bytes: null, reason: "corrupt" };
  }
  return { bytes, headers: hit.headers };
}

/** Store `bytes` as `url` in `cacheName` with their sha256 and `headers` (x-... names). */
export async function storeInCache(url, bytes, cacheName, headers = {}) {
  const cache = await caches.open(cacheName);
  const all = {
    ...headers,
    "content-type": "application/octet-stream",
    "content-length": String(bytes.byteLength),
    "x-pymemory-sha256": await sha256hex(bytes),
  };
  await cache.put(url, new Response(bytes, { headers: all }));
}

/** The sha256 stored with the cached copy of `url` (no body read), or null. */
export async function cachedSha256(url, cacheName) {
  const cache = await openCache(cacheName);
  const hit = cache ? await cache.match(url) : undefined;
  return hit?.headers.get("x-pymemory-sha256") ?? null;
}

/** Delete `url` from `cacheName` (false when there was nothing to delete). */
export async function dropCached(url, cacheName) {
  const cache = await openCache(cacheName);
  return cache ? cache.delete(url) : false;
}
