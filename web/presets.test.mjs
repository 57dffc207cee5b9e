// node --test: the strategy presets and builders (presets.mjs). Their values against
// Python's builders are checked in tests/rpc/test_protocol.py.
import assert from "node:assert/strict";
import { test } from "node:test";

import { PRESETS, resolveStrategy, strategies } from "./presets.mjs";

test("the presets: what retrieve ranks with and what a hook lists", () => {
  assert.deepEqual(resolveStrategy(undefined), { strategy: null, listing: {} });
  assert.deepEqual(resolveStrategy("all"), { strategy: null, listing: {} });
  assert.deepEqual(resolveStrategy("recent-5"), { strategy: null, listing: { limit: 5 } });
  assert.deepEqual(resolveStrategy("by-tag", { tags: ["a"] }), {
    strategy: { kind: "by_tag", tags: ["a"], match: "any" },
    listing: { tags: ["a"] },
  });
  const custom = strategies.byType("message");
  assert.deepEqual(resolveStrategy("custom", { custom }), { strategy: custom, listing: null });
  assert.deepEqual(resolveStrategy(custom), { strategy: custom, listing: null });
  assert.deepEqual(PRESETS, ["recent-5", "all", "by-tag", "custom"]);
});

test("a preset without what it needs, or an unknown one, is invalid_strategy", () => {
  const fails = (fn, pattern) => assert.throws(fn, (e) => e.code === "invalid_strategy" && pattern.test(e.message));
  fails(() => resolveStrategy("by-tag"), /"by-tag" needs tags/);
  fails(() => resolveStrategy("by-tag", { tags: [] }), /"by-tag" needs tags/);
  fails(() => resolveStrategy("custom"), /needs a `custom` strategy object/);
  fails(() => resolveStrategy("newest"), /unknown strategy "newest"; use recent-5, all, by-tag, custom/);
  fails(() => resolveStrategy(5), /unknown strategy 5/);
});

test("builders leave what is not given to the core's defaults", () => {
  assert.deepEqual(strategies.fusion(), { kind: "fusion" });
  assert.deepEqual(strategies.timeDecay(), { kind: "time_decay" });
  assert.deepEqual(strategies.timeDecay({ byType: { tool_result: { halfLifeHours: 6 } } }), {
    kind: "time_decay",
    by_type: { tool_result: { half_life_hours: 6 } },
  });
  assert.deepEqual(strategies.relevanceFloor({ minDense: 0.2 }), { kind: "relevance_floor", min_dense: 0.2 });
  assert.deepEqual(strategies.timeWindow({ hours: 2 }), { kind: "time_window", hours: 2, since_ms: null, until_ms: null });
});

test("list builders take values or one array; compose nests", () => {
  assert.deepEqual(strategies.byType("a", "b"), strategies.byType(["a", "b"]));
  assert.deepEqual(strategies.byScope(["user"]).scopes, ["user"]);
  assert.deepEqual(strategies.byTag("x"), { kind: "by_tag", tags: ["x"], match: "any" });
  const both = strategies.compose(strategies.byTag("x"), strategies.fusion({ k: 10 }));
  assert.deepEqual(both, strategies.compose([strategies.byTag("x"), strategies.fusion({ k: 10 })]));
  assert.equal(both.strategies.length, 2);
});
