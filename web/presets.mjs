// Retrieval strategies for the client: the builders (`strategies`, the same values as
// Python's pymemory.retrieval.strategies, which parses them) and seed 002's presets, the
// names a client or a hook takes as `strategy`. tests/rpc/test_protocol.py checks every
// builder's output against Python's own.

import { MemoryError } from "./errors.mjs";

const list = (values) => (Array.isArray(values[0]) ? values[0] : values);
const given = (obj) => Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined));

export const strategies = Object.freeze({
  timeWindow: ({ hours = null, sinceMs = null, untilMs = null } = {}) => ({
    kind: "time_window",
    hours,
    since_ms: sinceMs,
    until_ms: untilMs,
  }),
  byTag: (tags, { match = "any" } = {}) => ({
    kind: "by_tag",
    tags: Array.isArray(tags) ? tags : [tags],
    match,
  }),
  byType: (...types) => ({ kind: "by_type", types: list(types) }),
  byScope: (...scopes) => ({ kind: "by_scope", scopes: list(scopes) }),
  // Options left out take the core's defaults (pymemory.retrieval.strategies), kept in one place.
  // timeDecay() keeps the per-type defaults; halfLifeHours and/or floor set one decay for
  // every type; byType overrides single types: { tool_result: { halfLifeHours: 6 } }.
  timeDecay: ({ halfLifeHours, floor, byType, queryWindow } = {}) =>
    given({
      kind: "time_decay",
      half_life_hours: halfLifeHours,
      floor,
      by_type:
        byType === undefined
          ? undefined
          : Object.fromEntries(
              Object.entries(byType).map(([type, rule]) => [
                type,
                given({ half_life_hours: rule?.halfLifeHours, floor: rule?.floor }),
              ]),
            ),
      query_window: queryWindow,
    }),
  feedbackWeight: ({ liked, disliked, important } = {}) =>
    given({ kind: "feedback_weight", liked, disliked, important }),
  fusion: ({ method, k, lexical, dense, power, depth, context } = {}) =>
    given({ kind: "fusion", method, k, lexical, dense, power, depth, context }),
  relevanceFloor: ({ minDense, minLexical } = {}) =>
    given({ kind: "relevance_floor", min_dense: minDense, min_lexical: minLexical }),
  compose: (...parts) => ({ kind: "compose", strategies: list(parts) }),
});

// Seed 002's presets: "recent-5" (the five newest), "all" (default ranking, nothing
// dropped), "by-tag" (needs `tags`), "custom" (needs `custom`: a strategy object).
export const PRESETS = Object.freeze(["recent-5", "all", "by-tag", "custom"]);

/** What a client does for `strategy`: { strategy, listing }: the strategy its retrieve
 * ranks with (null: the core's default) and the list() filter its hook shows (null: rank
 * with `strategy` instead). Throws invalid_strategy. */
export function resolveStrategy(strategy, { tags, custom } = {}) {
  if (strategy == null || strategy === "all") return { strategy: null, listing: {} };
  if (strategy === "recent-5") return { strategy: null, listing: { limit: 5 } };
  if (strategy === "by-tag") {
    if (!tags || !tags.length) throw new MemoryError("invalid_strategy", '"by-tag" needs tags');
    return { strategy: strategies.byTag(tags), listing: { tags } };
  }
  if (strategy === "custom") {
    if (!custom || typeof custom !== "object") {
      throw new MemoryError("invalid_strategy", '"custom" needs a `custom` strategy object');
    }
    return { strategy: custom, listing: null };
  }
  if (typeof strategy === "object") return { strategy, listing: null };
  throw new MemoryError(
    "invalid_strategy",
    `unknown strategy ${JSON.stringify(strategy)}; use ${PRESETS.join(", ")} or a strategy object`,
  );
}
