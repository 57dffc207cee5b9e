#!/usr/bin/env node
// Copy what pymemory's worker loads at run time into an app's static folder, for builds
// whose output has no node_modules/ (vite build, webpack, Next.js):
//
//   npx pymemory-assets public            # -> public/pymemory/, public/pyodide/
//   npx pymemory-assets public --models   # + public/onnxruntime-web/dist/ (local models)
//
// then createAgentMemory({ assetsUrl: "/pymemory/" }). The layout is node_modules' own
// (the package folder with its dependencies as siblings), so every default of the asset
// options holds relative to assetsUrl.

import { cpSync, existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(join(PACKAGE, "package.json"));
const PYODIDE_FILES = ["pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"];
const ORT_FILES = ["dist/ort.wasm.min.mjs", "dist/ort-wasm-simd-threaded.mjs", "dist/ort-wasm-simd-threaded.wasm"];

function fail(message) {
  console.error(`pymemory-assets: ${message}`);
  process.exit(1);
}

// The folder of the installed npm package `name` (a dependency of pymemory).
function packageDir(name) {
  let dir;
  try {
    dir = dirname(require.resolve(name));
  } catch (err) {
    fail(`cannot find the npm package ${name} (is pymemory installed with its dependencies?): ${err.message}`);
  }
  for (; dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, "utf8")).name === name) return dir;
  }
  fail(`cannot find the folder of the npm package ${name}`);
}

function copyFiles(from, names, to) {
  for (const name of names) {
    const source = join(from, name);
    if (!existsSync(source)) fail(`${source} is missing`);
    mkdirSync(dirname(join(to, name)), { recursive: true });
    cpSync(source, join(to, name));
  }
}

const args = process.argv.slice(2);
const target = args.find((a) => !a.startsWith("--"));
if (!target || args.includes("--help")) {
  console.log("usage: pymemory-assets <folder> [--models]   (then assetsUrl: \"/pymemory/\" if <folder> is served at /)");
  process.exit(target ? 0 : 2);
}
const out = resolve(target);
rmSync(join(out, "pymemory"), { recursive: true, force: true });
cpSync(PACKAGE, join(out, "pymemory"), {
  recursive: true,
  filter: (source) => !source.slice(PACKAGE.length).split(/[\\/]/).includes("node_modules"),
});
copyFiles(packageDir("pyodide"), PYODIDE_FILES, join(out, "pyodide"));
if (args.includes("--models")) copyFiles(packageDir("onnxruntime-web"), ORT_FILES, join(out, "onnxruntime-web"));
console.log(`pymemory-assets: copied the worker, the wheels and Pyodide into ${out} (assetsUrl: the URL of ${join(out, "pymemory")})`);
