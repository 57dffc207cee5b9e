// React as an ES module for pages without a bundler: map "react" to this file in an import
// map and load React 18's UMD build (node_modules/react/umd/react.production.min.js) with
// a classic <script> first. npm has no ESM build of React 18 or 19, and React 19 ships
// CommonJS only; with a bundler, import "react" as usual and never load this file.
const React = globalThis.React;
if (!React?.useSyncExternalStore) {
  throw new Error(
    'pymemory/react-umd: load React 18\'s UMD build (react/umd/react.production.min.js) with a <script> before importing "react"',
  );
}
export default React;
export const {
  Fragment,
  createElement,
  useCallback,
  useEffect,
  useMemo,
  useRef,
  useState,
  useSyncExternalStore,
} = React;
