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
  await assert.rejects(tk.init("https://t.test/bad/"), /bad\/ranks\/o200k_base.js is not js-tiktoken's ranks module/);
  served.set("https://t.test/empty/ranks/o200k_base.js", `export default ${JSON.stringify({ pat_str: "x" })};`);
  await assert.rejects(tk.init("https://t.test/empty/"), /has no bpe_ranks/);
  served.set("https://t.test/short/ranks/o200k_base.js", ranksModule(["x 0"]));
  await assert.rejects(tk.init("https://t.test/short/"), /a ranks line without tokens/);
});

test("a module a dev server rewrote names the file and the cause", async () => {
  const tk = await import("./tiktoken.mjs?rewritten");
  const url = "https://t.test/vite/ranks/o200k_base.js";
  served.set(url, `${ranksModule([`x 0 ${b64("a")}`])}\n//# sourceMappingURL=o200k_base.js.map`);
  await assert.rejects(tk.init("https://t.test/vite/"), (err) => err.message.includes(url) && /as published.*rewritten/.test(err.message));
});

test("an o200k_base.tiktoken file's bytes parse into the same table", async () => {
  const tk = await import("./tiktoken.mjs?file");
  const file = new TextEncoder().encode([[b64("a"), 0], [b64("b"), 1], [b64("ab"), 2], [b64(" "), 3], [b64("ba"), 4]].map((l) => l.join(" ")).join("\n") + "\n");
  await tk.init("https://t.test/unused/", { ranks: async () => file });
  assert.equal(tk.size(), 5);
  assert.deepEqual(tk.encode("bab"), [1, 2]);
  assert.equal(tk.count("ab ab"), 3);
  const bad = await import("./tiktoken.mjs?badfile");
  await assert.rejects(bad.init("https://t.test/unused/", { ranks: async () => new TextEncoder().encode("YQ== x\n") }), /a bad line in the ranks file/);
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

const TIKTOKEN_FILE = new URL("../../pymemory/models/tokenizers/o200k_base.tiktoken", import.meta.url);
test("the real o200k_base.tiktoken gives tiktoken's ids", { skip: !existsSync(TIKTOKEN_FILE) && "no o200k_base.tiktoken (build.py setup)" }, async () => {
  const tk = await import("./tiktoken.mjs?realfile");
  await tk.init("https://t.test/unused/", { ranks: async () => new Uint8Array(readFileSync(TIKTOKEN_FILE)) });
  assert.equal(tk.size(), 199_998);
  assert.deepEqual(tk.encode("Hello, world!"), [13225, 11, 2375, 0]);
  assert.equal(tk.count("会上确定了3个角色：超级管理员。deploy 🚀 at 18:30"), tk.encode("会上确定了3个角色：超级管理员。deploy 🚀 at 18:30").length);
});
