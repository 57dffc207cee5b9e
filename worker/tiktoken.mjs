// Token counts with tiktoken's o200k_base in the browser, equal to PyPI tiktoken's
// `len(encode_ordinary(text))`.
//
// From npm js-tiktoken@1.0.21's dist/ folder (configurable: init(distUrl)):
//   chunk-VL2OQCWN.js    the Tiktoken class that dist/lite.js re-exports
//   ranks/o200k_base.js  export default {pat_str, special_tokens, bpe_ranks}
//
// js-tiktoken's Tiktoken class parses the ranks. Counting itself is done here, because
//  - its split pattern uses JavaScript's \s, which differs from tiktoken's (Rust) \s on U+0085
//    and U+FEFF, so the pattern below spells White_Space out;
//  - its merge loop rescans the whole piece after every merge, which takes seconds on one
//    long piece (10,000 "a"s, a run of spaces, base64); the heap below is O(n log n).
//
// The class module imports the bare specifier "base64-js", which a worker cannot resolve
// without a bundler: init() loads it through a Blob URL with that import replaced by a
// two-line atob() equivalent (the vendored file itself stays byte-identical to the tarball).

const VENDOR = new URL("../vendor/js-tiktoken/", import.meta.url);
const CLASS_FILE = "chunk-VL2OQCWN.js";
const RANKS_FILE = "ranks/o200k_base.js";
const BASE64_IMPORT = /^import base64 from ['"]base64-js['"];$/m;
const BASE64_SHIM =
  "const base64 = { toByteArray: (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0)) };";

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

let state = null; // { ranks: Map<string, number>, regex: RegExp, encoder: TextEncoder, cache: Map }
let loading = null;

/** Load the class and ranks (about 0.5 s) from js-tiktoken's dist/ folder; safe to call more than once. */
export function init(vendorUrl = VENDOR) {
  loading ??= load(new URL(vendorUrl, import.meta.url)).catch((err) => {
    loading = null;
    throw err;
  });
  return loading;
}

async function load(base) {
  const response = await fetch(new URL(CLASS_FILE, base));
  if (!response.ok) throw new Error(`tiktoken: ${CLASS_FILE}: HTTP ${response.status}`);
  const source = await response.text();
  if (!BASE64_IMPORT.test(source)) throw new Error(`tiktoken: unexpected ${CLASS_FILE} layout`);
  const blob = new Blob([source.replace(BASE64_IMPORT, BASE64_SHIM)], { type: "text/javascript" });
  const blobUrl = URL.createObjectURL(blob);
  let Tiktoken;
  try {
    ({ Tiktoken } = await import(blobUrl));
  } finally {
    URL.revokeObjectURL(blobUrl);
  }
  const ranks = (await import(new URL(RANKS_FILE, base).href)).default;
  const tiktoken = new Tiktoken(ranks);
  state = {
    ranks: tiktoken.rankMap, // "b0,b1,..." -> rank
    regex: new RegExp(O200K_PATTERN, "gu"),
    encoder: new TextEncoder(),
    cache: new Map(),
  };
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
      ids = bytePairEncode(state.encoder.encode(piece), state.ranks);
      if (cache.size >= CACHE_LIMIT) cache.clear();
      cache.set(piece, ids);
    }
    out.push(ids);
  }
  return out;
}

// Merge a piece's bytes by rank: the lowest rank first, the leftmost on ties (as tiktoken).
function bytePairEncode(bytes, ranks) {
  const rank = (a, b) => ranks.get(bytes.subarray(a, b).join(","));
  const whole = rank(0, bytes.length);
  if (whole !== undefined) return [whole];
  const n = bytes.length;
  const next = Int32Array.from({ length: n }, (_, i) => i + 1); // start of the next part
  const prev = Int32Array.from({ length: n }, (_, i) => i - 1);
  const alive = new Uint8Array(n).fill(1);
  const heap = new PairHeap();
  for (let i = 0; i + 1 < n; i++) {
    const r = rank(i, i + 2);
    if (r !== undefined) heap.push(r, i, i + 2);
  }
  while (heap.size > 0) {
    const [, i, end] = heap.pop();
    if (!alive[i] || next[i] >= n || next[next[i]] !== end) continue; // stale
    alive[next[i]] = 0;
    next[i] = end;
    if (end < n) {
      prev[end] = i;
      const r = rank(i, next[end]);
      if (r !== undefined) heap.push(r, i, next[end]);
    }
    const p = prev[i];
    if (p >= 0) {
      const r = rank(p, end);
      if (r !== undefined) heap.push(r, p, end);
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
