// The IndexedDB side of pymemory's KvBackend (Python: idb_kv.py beside it, IndexedDbKv).
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

// Pyodide settles an awaited promise only if it rejects with an error it recognises, and
// Chromium's QuotaExceededError class (a DOMException subclass, Chromium 138+) is not one:
// the Python call awaiting a write over the quota never settled (issue 17). So every error
// leaves this module as a plain Error that keeps the original name and message.
function plain(err) {
  if (Object.prototype.toString.call(err) === "[object Error]") return err;
  const out = new Error(String(err?.message ?? err ?? "unknown error"));
  out.name = typeof err?.name === "string" && err.name ? err.name : "Error";
  return out;
}

const settles = (fn) => async (...args) => {
  try {
    return await fn(...args);
  } catch (err) {
    throw plain(err);
  }
};

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

// The origin's storage use and quota as the browser estimates them, and whether its storage
// is persistent (null where the runtime has no StorageManager). Workers have estimate() and
// persisted(); persist() is for pages only. Chromium (138+) reports an artificial quota:
// usage + min(10 GiB, the disk rounded up to a GiB), not the quota it enforces (60% of
// the disk), so there the room is only a ceiling, never the real limit.
export const estimate = settles(async () => {
  const storage = globalThis.navigator?.storage;
  if (typeof storage?.estimate !== "function") return null;
  const { usage, quota } = await storage.estimate();
  const persisted = typeof storage.persisted === "function" ? await storage.persisted() : null;
  return { usage: usage ?? 0, quota: quota ?? 0, persisted };
});

// Room for deletes (issue 17). Over Chromium's quota every transaction that puts anything
// is refused, a delete too: pymemory's delete logs the change (a few hundred bytes). A pure
// delete is accepted, and a value over 64 KiB lives in a file of its own that its delete
// frees at once (a smaller one stays in LevelDB until a compaction). So each store keeps
// one such value, ROOM_BYTES of random bytes (they do not compress), in a database of its
// own: a freeing write refused for the quota releases it and runs again (IndexedDbKv in
// pyodide.py), and it is put back once there is room.
export const ROOM_BYTES = 1024 * 1024;
const ROOM_STORE = "room";
const roomName = (name) => `${name}::pymemory-room`;

function openRoom(name) {
  const req = indexedDB.open(roomName(name), 1);
  req.onupgradeneeded = () => req.result.createObjectStore(ROOM_STORE);
  return request(req);
}

// Make sure the room value is there (true) or could not be written (false: no room).
async function keepRoom(name) {
  const db = await openRoom(name);
  try {
    if (await request(db.transaction(ROOM_STORE, "readonly").objectStore(ROOM_STORE).count())) return true;
    const value = new Uint8Array(ROOM_BYTES);
    for (let at = 0; at < value.length; at += 65536) crypto.getRandomValues(value.subarray(at, at + 65536));
    const tx = db.transaction(ROOM_STORE, "readwrite", { durability: "strict" });
    tx.objectStore(ROOM_STORE).put(value, "room");
    await done(tx);
    return true;
  } catch {
    return false;
  } finally {
    db.close();
  }
}

// Delete the room value: the bytes it frees (0 if there was none).
async function releaseRoom(name) {
  const db = await openRoom(name);
  try {
    const tx = db.transaction(ROOM_STORE, "readwrite", { durability: "strict" });
    const store = tx.objectStore(ROOM_STORE);
    const had = await request(store.count());
    store.delete("room");
    await done(tx);
    return had ? ROOM_BYTES : 0;
  } finally {
    db.close();
  }
}

// A write that failed with an I/O error (a full disk: "IO error: ...: FILE_ERROR_NO_SPACE")
// may have torn LevelDB's log, and Chromium keeps appending to that log: the first open
// that finds records after the torn one reports a checksum mismatch and Chromium deletes
// the origin's IndexedDB data (measured: every time a restart followed more writes). More
// incompressible bytes than LevelDB's write buffer (4 MiB in Chromium 156) make it start a
// new log and compact the torn one away, so the next write after such a failure first
// puts ROLL_BYTES of random values (each under the 64 KiB over which a value gets a file
// of its own) in the room database, and deletes them.
export const ROLL_BYTES = 8 * 1024 * 1024;
const ROLL_CHUNK = 32 * 1024;

async function rollLog(name) {
  const db = await openRoom(name);
  try {
    for (let at = 0; at < ROLL_BYTES; at += 16 * ROLL_CHUNK) {
      const tx = db.transaction(ROOM_STORE, "readwrite", { durability: "strict" });
      const store = tx.objectStore(ROOM_STORE);
      for (let i = 0; i < 16; i++) {
        const value = new Uint8Array(ROLL_CHUNK);
        crypto.getRandomValues(value);
        store.put(value, `roll:${at + i * ROLL_CHUNK}`);
      }
      await done(tx);
    }
    const tx = db.transaction(ROOM_STORE, "readwrite", { durability: "strict" });
    tx.objectStore(ROOM_STORE).delete(IDBKeyRange.bound("roll:", "roll;", false, true));
    await done(tx);
  } finally {
    db.close();
  }
}

const ioFailure = (err) => /\bIO error\b/.test(String(err?.message ?? ""));

// Chromium discards an origin's whole IndexedDB data when it finds its LevelDB corrupt
// (a log a full disk tore, then appended to: README "When storage runs out"), and the
// next open that creates a database says so in its upgradeneeded event (dataLoss "total",
// a Chromium extension). "" when nothing was lost.
const lossOf = (event) =>
  event.dataLoss && event.dataLoss !== "none"
    ? `the browser reported data loss (${event.dataLoss}: ${event.dataLossMessage || "no reason given"})`
    : "";

// Open `name`; `create`: make it if it does not exist. Without `create` an absent database
// rejects with NotFoundError (the upgrade that would create it is aborted). A database the
// browser discarded rejects with DataLossError (once: the empty one is created), so that
// an app never mistakes the empty store for its memories.
function openDb(name, create) {
  const req = indexedDB.open(name, 1);
  let missing = false;
  let loss = "";
  req.onupgradeneeded = (event) => {
    loss = lossOf(event);
    if (create) {
      req.result.createObjectStore(STORE);
    } else {
      missing = true;
      req.transaction.abort();
    }
  };
  return request(req).then(
    (db) => {
      if (!loss) return db;
      db.close();
      const lost = new Error(
        `${loss}: every record of the IndexedDB database ${JSON.stringify(name)} is gone and it` +
          " starts again empty (restore it from an export)",
      );
      lost.name = "DataLossError";
      throw lost;
    },
    (err) => {
      if (!missing) throw err;
      const gone = new Error(
        `the IndexedDB database ${JSON.stringify(name)} no longer exists${loss ? `: ${loss}` : ""}`,
      );
      gone.name = "NotFoundError";
      throw gone;
    },
  );
}

export const open = settles(async (name, durability = "strict") => {
  let db = null;
  // The browser closed the connection (Chromium does after a write fails with an I/O error
  // such as a full disk: every later call on it fails): the next call reopens it.
  let lost = false;
  const attach = (handle) => {
    db?.close(); // the connection this one replaces (a no-op if the browser closed it)
    db = handle;
    lost = false;
    // Another tab upgrading or deleting the database: let it, this handle is finished.
    handle.onversionchange = () => handle.close();
    handle.onclose = () => {
      if (db === handle) lost = true;
    };
  };
  attach(await openDb(name, true));
  const txOptions = { durability };
  // A transaction on the live connection; one the browser closed (the close event may
  // come after the failed call) is reopened first. Never creates the database again.
  const transaction = async (mode, options) => {
    if (lost) attach(await openDb(name, false));
    try {
      return db.transaction(STORE, mode, options);
    } catch (err) {
      if (err?.name !== "InvalidStateError") throw err;
      attach(await openDb(name, false));
      return db.transaction(STORE, mode, options);
    }
  };

  // Set by a write that failed with an I/O error: roll the log before the next write.
  let torn = false;
  const write = async (fn) => {
    if (torn) {
      try {
        await rollLog(name);
      } catch (err) {
        const failed = plain(err);
        failed.message =
          "the disk filled during an earlier write, and before writing again pymemory moves" +
          ` IndexedDB to a new log, which needs about ${2 * ROLL_BYTES} bytes free: ${failed.message}`;
        throw failed;
      }
      torn = false;
    }
    try {
      return await fn();
    } catch (err) {
      if (ioFailure(err)) torn = true;
      throw err;
    }
  };

  const handle = {
    async getMany(keys) {
      const tx = await transaction("readonly");
      const store = tx.objectStore(STORE);
      const values = await Promise.all(keys.map((k) => request(store.get(keyBytes(k)))));
      return {
        blob: concat(values.filter((v) => v !== undefined)),
        lengths: values.map((v) => (v === undefined ? -1 : v.byteLength)),
      };
    },

    putMany: (keys, blob, lengths, deletes) => write(async () => {
      const tx = await transaction("readwrite", txOptions);
      const store = tx.objectStore(STORE);
      for (const k of deletes) store.delete(keyBytes(k));
      let pos = 0;
      keys.forEach((k, i) => {
        // slice(): structured clone of a view would copy the whole underlying buffer
        store.put(blob.slice(pos, pos + lengths[i]), keyBytes(k));
        pos += lengths[i];
      });
      await done(tx);
    }),

    deleteMany: (keys) => write(async () => {
      const tx = await transaction("readwrite", txOptions);
      const store = tx.objectStore(STORE);
      for (const k of keys) store.delete(keyBytes(k));
      await done(tx);
    }),

    // Read-modify-write in ONE readwrite transaction: read `keys` and the keys under each
    // of `prefixes`, hand them to `fn` (Python, called synchronously while the transaction
    // is still active), then apply the writes it returns. `fn` returns null to abort.
    transact: (keys, prefixes, fn) => write(async () => {
      const tx = await transaction("readwrite", txOptions);
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
    }),

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
      const tx = await transaction("readonly");
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

    // After a failed write: does the database still open and answer a read? Resolves
    // with its number of records, or -1 if it cannot be opened now (Chromium cannot open
    // it while the disk is full); rejects (NotFoundError) if the browser deleted it.
    async verify() {
      const count = async () => request((await transaction("readonly")).objectStore(STORE).count());
      try {
        return await count();
      } catch (err) {
        if (err?.name === "NotFoundError") throw err;
      }
      try {
        attach(await openDb(name, false)); // closed under us: a fresh connection, once
        return await count();
      } catch (err) {
        if (err?.name === "NotFoundError") throw err;
        lost = true; // try again on the next call
        return -1;
      }
    },

    keepRoom: () => keepRoom(name),
    releaseRoom: () => releaseRoom(name),

    async close() {
      db.close();
    },

    async destroy() {
      db.close();
      await request(indexedDB.deleteDatabase(name));
      await request(indexedDB.deleteDatabase(roomName(name)));
    },
  };
  return Object.fromEntries(Object.entries(handle).map(([k, fn]) => [k, settles(fn)]));
});
