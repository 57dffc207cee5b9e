// Token counts with tiktoken's o200k_base in the browser, equal to PyPI tiktoken's
// `len(encode_ordinary(text))`.
//
// The ranks come from npm js-tiktoken@1.0.21's dist/ranks/o200k_base.js (configurable:
// init(distUrl)), `export default {pat_str, special_tokens, bpe_ranks}`, where bpe_ranks is
// lines of "<prefix> <first rank> <base64 token> <base64 token> ...". They are parsed here
// into typed arrays (a hash table over the tokens' bytes) rather than with js-tiktoken's
// class, whose intermediate object and two 200,000-entry Maps took 0.7-7 s of the worker's
// thread at boot; this parse takes 0.1-0.4 s. Counting is done here too, because
//  - js-tiktoken's split pattern uses JavaScript's \s, which differs from tiktoken's (Rust)
//    \s on U+0085 and U+FEFF, so the pattern below spells White_Space out;
//  - its merge loop rescans the whole piece after every merge, which takes seconds on one
//    long piece (10,000 "a"s, a run of spaces, base64); the heap below is O(n log n).
//
// init() is asynchronous and count() synchronous: the worker awaits init() before it
// serves a call that may count (token-ranks.mjs, dispatch.mjs), so every count is exact.

// tiktoken's o200k_base pattern. \s is Unicode White_Space; (?i:'s|...) is spelled out,
// with U+017F (long s), which case-folds to "s" in Rust's regex.
const WS = "\\t\\n\\v\\f\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const CONTRACTION = "(?:'[sS\\u017f]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
const UPPER = "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]";
const LOWER = "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]";
const O200K_PATTERN = [
  `[^\\r\\n\\p{L}\\p{N}]?${UPPER}*${LOWER}+${CONTRACTION}?`,
  `[^\\r\\n\\p{L}\\p{N}]?${UPPER}+${LOWER}*${CONTRACTION}?`,
  "\\p{N}{1,3}",
  ` ?[^${WS}\\p{L}\\p{N}]+[\\r\\n/]*`,
  `[${WS}]*[\\r\\n]+`,
  `[${WS}]+(?![^${WS}])`,
  `[${WS}]+`,
].join("|");

const CACHE_LIMIT = 50_000;

export const name = "o200k_base";

const VENDOR = new URL("../vendor/js-tiktoken/", import.meta.url);
const RANKS_FILE = "ranks/o200k_base.js";
const MODULE_PREFIX = "export default ";

let state = null; // { table, regex, encoder, cache: Map<piece, ids> }
let loading = null;

/** Fetch and parse the ranks; safe to call more than once (a failed load is retried by the
 * next call). `ranks`: a function giving a promise of the bytes of an `o200k_base.tiktoken`
 * file (tiktoken's own format: "<base64 token> <rank>" lines; the npm package ships it as
 * data beside the wheels, which no bundler or dev server rewrites), or of null: then
 * js-tiktoken's ranks module is fetched from its dist/ folder `vendorUrl`. `parseAfter`
 * (a promise): fetch now, parse (0.1-0.4 s of this thread) once it settles. */
export function init(vendorUrl = VENDOR, { parseAfter = null, ranks = null } = {}) {
  loading ??= load(new URL(vendorUrl, import.meta.url), parseAfter, ranks).catch((err) => {
    loading = null;
    throw err;
  });
  return loading;
}

function setTable(table) {
  state = { table, regex: new RegExp(O200K_PATTERN, "gu"), encoder: new TextEncoder(), cache: new Map() };
}

async function load(base, parseAfter, ranks) {
  const bytes = ranks ? await ranks() : null;
  if (bytes) {
    await parseAfter?.catch(() => {});
    return setTable(parseTiktokenFile(bytes));
  }
  const url = new URL(RANKS_FILE, base);
  let response;
  try {
    response = await fetch(url);
  } catch (err) {
    throw new Error(`tiktoken: cannot fetch ${url}: ${err?.message ?? err}`);
  }
  if (!response.ok) throw new Error(`tiktoken: ${url}: HTTP ${response.status}`);
  const source = (await response.text()).trim();
  await parseAfter?.catch(() => {});
  const rewritten = "was it rewritten by a dev server or bundler? Serve the package's wheels/o200k_base.tiktoken instead";
  if (!source.startsWith(MODULE_PREFIX)) throw new Error(`tiktoken: ${url} is not js-tiktoken's ranks module (${rewritten})`);
  // The module's one export is a JSON object literal: JSON.parse reads it without
  // compiling 2.3 MB of JavaScript.
  let bpeRanks;
  try {
    ({ bpe_ranks: bpeRanks } = JSON.parse(source.slice(MODULE_PREFIX.length).replace(/;$/, "")));
  } catch (err) {
    throw new Error(`tiktoken: ${url} is not js-tiktoken's ranks module as published: ${err.message} (${rewritten})`);
  }
  if (typeof bpeRanks !== "string") throw new Error(`tiktoken: ${url} has no bpe_ranks`);
  setTable(parseRanks(bpeRanks));
}

/** The table of an `o200k_base.tiktoken` file's bytes ("<base64 token> <rank>\n" lines),
 * laid out as parseRanks lays js-tiktoken's. */
export function parseTiktokenFile(file) {
  const n = file.length;
  let lines = 0;
  for (let i = 0; i < n; i++) if (file[i] === 10) lines++;
  if (n && file[n - 1] !== 10) lines++;
  const bytes = new Uint8Array(Math.ceil((n * 3) / 4));
  const starts = new Int32Array(lines + 1);
  const ranks = new Int32Array(lines);
  let size = 1;
  while (size < lines * 2) size *= 2;
  const slots = new Int32Array(size).fill(-1);
  const mask = size - 1;
  let count = 0;
  let at = 0;
  let i = 0;
  while (i < n) {
    const start = at;
    let acc = 0;
    let bits = 0;
    let c;
    while (i < n && (c = file[i]) !== 32) {
      i++;
      if (c === 61) continue; // "=" padding
      const v = c < 128 ? BASE64[c] : -1;
      if (v < 0) throw new Error(`tiktoken: bad base64 in the ranks file at byte ${i}`);
      acc = ((acc << 6) | v) & 0xffffff;
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        bytes[at++] = (acc >> bits) & 0xff;
      }
    }
    i++; // the space
    let rank = 0;
    let digits = 0;
    while (i < n && (c = file[i]) >= 48 && c <= 57) {
      rank = rank * 10 + (c - 48);
      digits++;
      i++;
    }
    if (at === start || !digits) throw new Error(`tiktoken: a bad line in the ranks file at byte ${i}`);
    if (file[i] === 13) i++;
    i++; // the newline
    let s = hashBytes(bytes, start, at) & mask;
    while (slots[s] !== -1) s = (s + 1) & mask;
    slots[s] = count;
    starts[count] = start;
    ranks[count++] = rank;
  }
  starts[count] = at;
  return { bytes, starts, ranks, slots, mask, count };
}

// --- the ranks: token bytes -> rank, in typed arrays -------------------------------------

const BASE64 = new Int8Array(128).fill(-1);
for (const [i, c] of [..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"].entries()) {
  BASE64[c.charCodeAt(0)] = i;
}

// FNV-1a over bytes[start, end).
function hashBytes(bytes, start, end) {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return h >>> 0;
}

/** The table of `bpe_ranks`: tokens' bytes back to back (`bytes`, token i at
 * starts[i]..starts[i + 1]), their ranks, and an open-addressing hash table of token
 * indices (`slots`, -1 empty, linear probing). */
function parseRanks(text) {
  const n = text.length;
  let tokens = 0;
  for (let i = 0; i < n; i++) if (text.charCodeAt(i) === 32) tokens++; // an upper bound
  const bytes = new Uint8Array(Math.ceil((n * 3) / 4));
  const starts = new Int32Array(tokens + 1);
  const ranks = new Int32Array(tokens);
  let size = 1;
  while (size < tokens * 2) size *= 2;
  const slots = new Int32Array(size).fill(-1);
  const mask = size - 1;
  let count = 0;
  let at = 0; // end of the bytes so far
  let i = 0;
  while (i < n) {
    while (i < n && text.charCodeAt(i) !== 32) i++; // skip the line's prefix
    i++;
    let rank = 0;
    let c;
    while (i < n && (c = text.charCodeAt(i)) >= 48 && c <= 57) {
      rank = rank * 10 + (c - 48);
      i++;
    }
    if (i === n || text.charCodeAt(i) === 10) throw new Error(`tiktoken: a ranks line without tokens near ${i}`);
    while (i < n && text.charCodeAt(i) === 32) {
      i++;
      const start = at;
      let acc = 0;
      let bits = 0;
      while (i < n && (c = text.charCodeAt(i)) !== 32 && c !== 10) {
        i++;
        if (c === 61) continue; // "=" padding
        const v = c < 128 ? BASE64[c] : -1;
        if (v < 0) throw new Error(`tiktoken: bad base64 in the ranks near ${i}`);
        acc = ((acc << 6) | v) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
          bits -= 8;
          bytes[at++] = (acc >> bits) & 0xff;
        }
      }
      if (at === start) throw new Error(`tiktoken: an empty token in the ranks near ${i}`);
      let s = hashBytes(bytes, start, at) & mask;
      while (slots[s] !== -1) s = (s + 1) & mask;
      slots[s] = count;
      starts[count] = start;
      ranks[count++] = rank++;
    }
    i++; // the newline
  }
  starts[count] = at;
  return { bytes, starts, ranks, slots, mask, count };
}

// The rank of piece[start, end), or -1.
function rankOf(table, piece, start, end) {
  const { bytes, starts, slots, mask } = table;
  const len = end - start;
  for (let s = hashBytes(piece, start, end) & mask; ; s = (s + 1) & mask) {
    const t = slots[s];
    if (t === -1) return -1;
    const at = starts[t];
    if (starts[t + 1] - at !== len) continue;
    let k = 0;
    while (k < len && bytes[at + k] === piece[start + k]) k++;
    if (k === len) return table.ranks[t];
  }
}

/** How many tokens the ranks hold (199,998 for o200k_base), 0 before init(). */
export function size() {
  return state === null ? 0 : state.table.count;
}

export function ready() {
  return state !== null;
}

/** How many o200k_base tokens `text` is, special-token text counted as plain text. */
export function count(text) {
  return pieces(text).reduce((n, piece) => n + piece.length, 0);
}

/** The o200k_base ids of `text` (tiktoken's `encode_ordinary`). */
export function encode(text) {
  return pieces(text).flat();
}

function pieces(text) {
  if (state === null) throw new Error("tiktoken: call init() first");
  if (typeof text !== "string") throw new TypeError("tiktoken: text must be a string");
  const { cache, regex } = state;
  const out = [];
  for (const match of text.matchAll(regex)) {
    const piece = match[0];
    let ids = cache.get(piece);
    if (ids === undefined) {
      ids = bytePairEncode(state.encoder.encode(piece), state.table);
      if (cache.size >= CACHE_LIMIT) cache.clear();
      cache.set(piece, ids);
    }
    out.push(ids);
  }
  return out;
}

// Merge a piece's bytes by rank: the lowest rank first, the leftmost on ties (as tiktoken).
function bytePairEncode(bytes, table) {
  const rank = (a, b) => rankOf(table, bytes, a, b);
  const whole = rank(0, bytes.length);
  if (whole !== -1) return [whole];
  const n = bytes.length;
  const next = Int32Array.from({ length: n }, (_, i) => i + 1); // start of the next part
  const prev = Int32Array.from({ length: n }, (_, i) => i - 1);
  const alive = new Uint8Array(n).fill(1);
  const heap = new PairHeap();
  for (let i = 0; i + 1 < n; i++) {
    const r = rank(i, i + 2);
    if (r !== -1) heap.push(r, i, i + 2);
  }
  while (heap.size > 0) {
    const [, i, end] = heap.pop();
    if (!alive[i] || next[i] >= n || next[next[i]] !== end) continue; // stale
    alive[next[i]] = 0;
    next[i] = end;
    if (end < n) {
      prev[end] = i;
      const r = rank(i, next[end]);
      if (r !== -1) heap.push(r, i, next[end]);
    }
    const p = prev[i];
    if (p >= 0) {
      const r = rank(p, end);
      if (r !== -1) heap.push(r, p, end);
    }
  }
  const ids = [];
  for (let i = 0; i < n; i = next[i]) ids.push(rank(i, next[i]));
  return ids;
}

// A binary min-heap of [rank, start, end], ordered by rank, then start.
class PairHeap {
  constructor() {
    this.items = [];
  }
  get size() {
    return this.items.length;
  }
  static less(a, b) {
    return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
  }
  push(rank, start, end) {
    const items = this.items;
    items.push([rank, start, end]);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!PairHeap.less(items[i], items[parent])) break;
      [items[i], items[parent]] = [items[parent], items[i]];
      i = parent;
    }
  }
  pop() {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && PairHeap.less(items[l], items[m])) m = l;
        if (r < items.length && PairHeap.less(items[r], items[m])) m = r;
        if (m === i) break;
        [items[i], items[m]] = [items[m], items[i]];
        i = m;
      }
    }
    return top;
  }
}
