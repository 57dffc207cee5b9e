// The IndexedDB side of pymemory's KvBackend (Python: pymemory/browser/pyodide.py IndexedDbKv).
// Shipped inside the wheel as package data; pymemory imports it itself (through a Blob URL)
// in whatever Pyodide runs it: the pymemory worker, or a page's or notebook's own Pyodide.
// Self-contained on purpose: a Blob-URL module cannot import relative paths.
// One database per store, one object store "kv". Keys are stored as UTF-8 bytes: IndexedDB
// orders binary keys bytewise, which is Unicode code point order, the order the KV
// protocol promises (plain string keys would sort by UTF-16 code units).
// Batches arrive as one Uint8Array of concatenated values plus their lengths.

const STORE = "kv";
const encoder = new TextEncoder();
const decoder = new TextDecoder();

const keyBytes = (key) => encoder.encode(key);

// The smallest byte string greater than every string that starts with `prefix`.
function upperBound(prefix) {
  const bytes = Array.from(prefix);
  while (bytes.length && bytes[bytes.length - 1] === 0xff) bytes.pop();
  if (!bytes.length) return null;
  bytes[bytes.length - 1] += 1;
  return new Uint8Array(bytes);
}

function compareBytes(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function done(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error ?? new Error("transaction failed"));
    tx.onabort = () => reject(tx.error ?? new Error("transaction aborted"));
  });
}

function concat(chunks) {
  let total = 0;
  for (const c of chunks) total += c.byteLength;
  const blob = new Uint8Array(total);
  let pos = 0;
  for (const c of chunks) {
    blob.set(c, pos);
    pos += c.byteLength;
  }
  return blob;
}

// The origin's storage use and quota as the browser estimates them (null where the
// runtime has no StorageManager). Workers have it; persist() is for pages only.
export async function estimate() {
  const storage = globalThis.navigator?.storage;
  if (typeof storage?.estimate !== "function") return null;
  const { usage, quota } = await storage.estimate();
  return { usage: usage ?? 0, quota: quota ?? 0 };
}

export async function open(name, durability = "strict") {
  const req = indexedDB.open(name, 1);
  req.onupgradeneeded = () => req.result.createObjectStore(STORE);
  const db = await request(req);
  // Another tab upgrading or deleting the database: let it, this handle is finished.
  db.onversionchange = () => db.close();
  const txOptions = { durability };

  return {
    async getMany(keys) {
      const tx = db.transaction(STORE, "readonly");
      const store = tx.objectStore(STORE);
      const values = await Promise.all(keys.map((k) => request(store.get(keyBytes(k)))));
      return {
        blob: concat(values.filter((v) => v !== undefined)),
        lengths: values.map((v) => (v === undefined ? -1 : v.byteLength)),
      };
    },

    async putMany(keys, blob, lengths, deletes) {
      const tx = db.transaction(STORE, "readwrite", txOptions);
      const store = tx.objectStore(STORE);
      for (const k of deletes) store.delete(keyBytes(k));
      let pos = 0;
      keys.forEach((k, i) => {
        // slice(): structured clone of a view would copy the whole underlying buffer
        store.put(blob.slice(pos, pos + lengths[i]), keyBytes(k));
        pos += lengths[i];
      });
      await done(tx);
    },

    async deleteMany(keys) {
      const tx = db.transaction(STORE, "readwrite", txOptions);
      const store = tx.objectStore(STORE);
      for (const k of keys) store.delete(keyBytes(k));
      await done(tx);
    },

    // Read-modify-write in ONE readwrite transaction: read `keys` and the keys under each
    // of `prefixes`, hand them to `fn` (Python, called synchronously while the transaction
    // is still active), then apply the writes it returns. `fn` returns null to abort.
    async transact(keys, prefixes, fn) {
      const tx = db.transaction(STORE, "readwrite", txOptions);
      const finished = done(tx);
      finished.catch(() => {}); // awaited below, or deliberately dropped on abort
      const store = tx.objectStore(STORE);
      const [values, listed] = await Promise.all([
        Promise.all(keys.map((k) => request(store.get(keyBytes(k))))),
        Promise.all(
          prefixes.map((p) => {
            const low = keyBytes(p);
            const high = upperBound(low);
            const range = high === null ? IDBKeyRange.lowerBound(low) : IDBKeyRange.bound(low, high, false, true);
            return request(store.getAllKeys(range)).then((ks) => ks.map((k) => decoder.decode(k)));
          }),
        ),
      ]);
      let writes;
      try {
        writes = fn(
          concat(values.filter((v) => v !== undefined)),
          values.map((v) => (v === undefined ? -1 : v.byteLength)),
          listed,
        );
      } catch (err) {
        tx.abort();
        throw err;
      }
      if (writes == null) {
        tx.abort();
        return false;
      }
      const [putKeys, blob, lengths, deletes] = writes;
      for (const k of deletes) store.delete(keyBytes(k));
      let pos = 0;
      putKeys.forEach((k, i) => {
        store.put(blob.slice(pos, pos + lengths[i]), keyBytes(k));
        pos += lengths[i];
      });
      await finished;
      return true;
    },

    async scan(prefix, startAfter, limit) {
      const low = keyBytes(prefix);
      const high = upperBound(low);
      let lower = low;
      let lowerOpen = false;
      if (startAfter != null) {
        const after = keyBytes(startAfter);
        if (compareBytes(after, low) >= 0) {
          lower = after;
          lowerOpen = true;
        }
      }
      if (high !== null && compareBytes(lower, high) >= 0) {
        return { keys: [], blob: new Uint8Array(0), lengths: [] };
      }
      const range =
        high === null
          ? IDBKeyRange.lowerBound(lower, lowerOpen)
          : IDBKeyRange.bound(lower, high, lowerOpen, true);
      const count = limit != null && limit >= 0 ? limit : undefined;
      const tx = db.transaction(STORE, "readonly");
      const store = tx.objectStore(STORE);
      const [rawKeys, values] = await Promise.all([
        request(store.getAllKeys(range, count)),
        request(store.getAll(range, count)),
      ]);
      return {
        keys: rawKeys.map((k) => decoder.decode(k)),
        blob: concat(values),
        lengths: values.map((v) => v.byteLength),
      };
    },

    async close() {
      db.close();
    },

    async destroy() {
      db.close();
      await request(indexedDB.deleteDatabase(name));
    },
  };
}
