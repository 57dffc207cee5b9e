// The WebCrypto side of pymemory's encrypted stores (Python: webcrypto.py beside it,
// WebCrypto, used by pymemory/storage/encrypted EncryptedKv). Shipped inside the wheel as
// package data and imported by pymemory itself through a Blob URL, like idb_kv.mjs; so it
// is self-contained.
//
// AES-256-GCM with 12-byte nonces and 128-bit tags appended to the ciphertext: the same
// bytes as the `cryptography` package's AESGCM in CPython. Keys never leave WebCrypto:
// imported and derived keys are non-extractable CryptoKeys.

const subtle = globalThis.crypto?.subtle;
const AES_GCM = { name: "AES-GCM", length: 256 };
const USES = ["encrypt", "decrypt"];

function need() {
  if (!subtle) throw new Error("this JS runtime has no WebCrypto (crypto.subtle needs a secure context)");
  return subtle;
}

// Why `key` cannot seal pymemory values, or null when it can.
export function keyProblem(key) {
  if (typeof CryptoKey === "undefined" || !(key instanceof CryptoKey)) return "not a CryptoKey";
  const alg = key.algorithm ?? {};
  if (alg.name !== "AES-GCM" || alg.length !== 256) {
    return `an ${alg.name ?? "unknown"} key of ${alg.length ?? "?"} bits, not AES-GCM with 256 bits`;
  }
  const missing = USES.filter((use) => !key.usages.includes(use));
  return missing.length ? `its usages lack ${missing.join(" and ")}` : null;
}

// 32 raw bytes -> a non-extractable AES-GCM key.
export function importKey(raw) {
  return need().importKey("raw", raw, "AES-GCM", false, USES);
}

// PBKDF2-HMAC-SHA256(passphrase bytes, salt, iterations) -> a non-extractable AES-256-GCM key.
export async function deriveKey(passphrase, salt, iterations) {
  const base = await need().importKey("raw", passphrase, "PBKDF2", false, ["deriveKey"]);
  return need().deriveKey({ name: "PBKDF2", hash: "SHA-256", salt, iterations }, base, AES_GCM, false, USES);
}

const params = (iv, aad) => ({ name: "AES-GCM", iv, additionalData: aad, tagLength: 128 });

// Ciphertext followed by the 16-byte tag.
export async function encrypt(key, iv, data, aad) {
  return new Uint8Array(await need().encrypt(params(iv, aad), key, data));
}

// The plaintext, or null when the tag does not verify (WebCrypto's OperationError).
export async function decrypt(key, iv, data, aad) {
  try {
    return new Uint8Array(await need().decrypt(params(iv, aad), key, data));
  } catch (err) {
    if (err?.name === "OperationError") return null;
    throw err;
  }
}

// Batches: one call from Python for many values (each await of a JS promise costs Python
// far more than the cipher does). `blob` holds each item's 12-byte nonce, data and
// associated data back to back; `lengths` is [data length, aad length] per item, flat.
// The answer is one Uint8Array of the results and their lengths (-1: tag mismatch).
function each(blob, lengths, fn) {
  const jobs = [];
  let pos = 0;
  for (let i = 0; i < lengths.length; i += 2) {
    const iv = blob.subarray(pos, pos + 12);
    const data = blob.subarray(pos + 12, pos + 12 + lengths[i]);
    pos += 12 + lengths[i];
    const aad = blob.subarray(pos, pos + lengths[i + 1]);
    pos += lengths[i + 1];
    jobs.push(fn(iv, data, aad));
  }
  return Promise.all(jobs);
}

function packed(outs) {
  let total = 0;
  for (const o of outs) total += o === null ? 0 : o.byteLength;
  const blob = new Uint8Array(total);
  let pos = 0;
  for (const o of outs) {
    if (o === null) continue;
    blob.set(o, pos);
    pos += o.byteLength;
  }
  return { blob, lengths: outs.map((o) => (o === null ? -1 : o.byteLength)) };
}

export async function encryptMany(key, blob, lengths) {
  return packed(await each(blob, lengths, (iv, data, aad) => encrypt(key, iv, data, aad)));
}

export async function decryptMany(key, blob, lengths) {
  return packed(await each(blob, lengths, (iv, data, aad) => decrypt(key, iv, data, aad)));
}
