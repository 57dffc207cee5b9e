// node --test: the o200k_base ranks' parse and the counts (tiktoken.mjs). A toy rank table
// always; the real js-tiktoken ranks when `build.py setup` has fetched them (.cache/vendor).
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const VENDOR = new URL("../../.cache/vendor/js-tiktoken/", import.meta.url);
const served = new Map(); // URL -> module text
globalThis.fetch = async (url) => {
  const text = served.get(String(url)) ?? (String(url).startsWith("file:") && existsSync(fileURLToPath(url)) ? readFileSync(fileURLToPath(url), "utf8") : null);
  return text === null ? new Response("missing", { status: 404 }) : new Response(text);
};
const b64 = (s) => Buffer.from(s).toString("base64");
const ranksModule = (lines) =>
  `export default ${JSON.stringify({ pat_str: "x", special_tokens: {}, bpe_ranks: lines.join("\n") })};`;

test("a rank table parses into the tokens' ranks, and BPE merges by rank", async () => {
  const tk = await import("./tiktoken.mjs?toy");
  // "x 0 a b ab": a -> 0, b -> 1, ab -> 2; then " " -> 3, "ba" -> 4.
  served.set("https://t.test/toy/ranks/o200k_base.js", ranksModule([`x 0 ${b64("a")} ${b64("b")} ${b64("ab")}`, `y 3 ${b64(" ")} ${b64("ba")}`]));
  assert.equal(tk.ready(), false);
  await tk.init("https://t.test/toy/");
  assert.equal(tk.ready(), true);
  assert.equal(tk.size(), 5);
  assert.deepEqual(tk.encode("ab"), [2]);
  assert.deepEqual(tk.encode("abab"), [2, 2]);
  assert.deepEqual(tk.encode("bab"), [1, 2]); // the lowest rank merges first: "ab" (2), not "ba" (4)
  assert.equal(tk.count("ab ab"), 3);
  assert.equal(tk.name, "o200k_base");
});

test("a missing or malformed rank file rejects init, and a later init tries again", async () => {
  const tk = await import("./tiktoken.mjs?broken");
  await assert.rejects(tk.init("https://t.test/none/"), /HTTP 404/);
  served.set("https://t.test/bad/ranks/o200k_base.js", "module.exports = {}");
  await assert.rejects(tk.init("https://t.test/bad/"), /unexpected ranks\/o200k_base.js layout/);
  served.set("https://t.test/empty/ranks/o200k_base.js", `export default ${JSON.stringify({ pat_str: "x" })};`);
  await assert.rejects(tk.init("https://t.test/empty/"), /has no bpe_ranks/);
  served.set("https://t.test/short/ranks/o200k_base.js", ranksModule(["x 0"]));
  await assert.rejects(tk.init("https://t.test/short/"), /a ranks line without tokens/);
});

test("the parse waits for `parseAfter`", async () => {
  const tk = await import("./tiktoken.mjs?later");
  served.set("https://t.test/later/ranks/o200k_base.js", ranksModule([`x 0 ${b64("a")}`]));
  let go;
  const loading = tk.init("https://t.test/later/", { parseAfter: new Promise((resolve) => (go = resolve)) });
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(tk.ready(), false);
  go();
  await loading;
  assert.equal(tk.ready(), true);
});

test("the real o200k_base ranks give tiktoken's ids", { skip: !existsSync(new URL("ranks/o200k_base.js", VENDOR)) && "no .cache/vendor/js-tiktoken (build.py setup)" }, async () => {
  const tk = await import("./tiktoken.mjs?real");
  await tk.init(VENDOR);
  assert.deepEqual(tk.encode("Hello, world!"), [13225, 11, 2375, 0]); // tiktoken's encode_ordinary
  assert.equal(tk.count("a".repeat(10_000)) > 0, true);
  assert.equal(tk.count(""), 0);
});
