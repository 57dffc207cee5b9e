// Test-page glue: re-export the React UMD build (loaded by a classic script) as the ES
// module "react" that web/react.mjs imports. Apps with a bundler never need this.
const React = globalThis.React;
export default React;
export const { useCallback, useEffect, useMemo, useRef, useState, useSyncExternalStore } = React;
