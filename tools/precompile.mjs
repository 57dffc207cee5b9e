// Byte-compile Python sources with Pyodide's own CPython (run under Node by
// tools/assets.py::precompile_wheels):
//
//   node tools/precompile.mjs <pyodide dir> <src dir> <out dir>
//
// Every <src dir>/<wheel>/<path>.py is compiled, as if installed at
// <site-packages>/<path>.py, into <out dir>/<wheel>/<dir>/__pycache__/<name>.<cache tag>.pyc
// with PycInvalidationMode.UNCHECKED_HASH: such a pyc is used whatever the mtime of the
// source (unpacking a wheel sets mtimes arbitrarily). Any failure exits non-zero.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [indexDir, srcDir, outDir] = process.argv.slice(2);
if (!outDir) {
  console.error("usage: node tools/precompile.mjs <pyodide dir> <src dir> <out dir>");
  process.exit(2);
}

function walk(dir, rel = "") {
  const found = [];
  for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const sub = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.isDirectory()) found.push(...walk(dir, sub));
    else found.push(sub);
  }
  return found.sort();
}

const indexURL = path.resolve(indexDir) + path.sep;
const { loadPyodide } = await import(pathToFileURL(path.join(indexURL, "pyodide.mjs")).href);
const pyodide = await loadPyodide({ indexURL, stdout: () => {}, stderr: (s) => console.error(s) });
const FS = pyodide.FS;

const sources = walk(srcDir).filter((rel) => rel.endsWith(".py"));
for (const rel of sources) {
  const target = `/precompile/src/${rel}`;
  FS.mkdirTree(path.posix.dirname(target));
  FS.writeFile(target, fs.readFileSync(path.join(srcDir, rel)));
}

pyodide.globals.set("SOURCES", pyodide.toPy(sources));
let report;
try {
  report = pyodide.runPython(`
import importlib.util, json, py_compile, sys, sysconfig

site = "/" + sysconfig.get_path("purelib").lstrip("/")  # "//lib/...": prefix is "/"
pycs = []
for rel in SOURCES:
    wheel, inner = rel.split("/", 1)
    cfile = importlib.util.cache_from_source(f"/precompile/out/{rel}")
    py_compile.compile(
        f"/precompile/src/{rel}", cfile=cfile, dfile=f"{site}/{inner}", doraise=True,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    pycs.append(cfile.removeprefix("/precompile/out/"))
json.dumps({"version": sys.version, "cache_tag": sys.implementation.cache_tag,
            "magic": importlib.util.MAGIC_NUMBER.hex(), "pycs": pycs})
`);
} catch (err) {
  console.error(err.message); // the Python traceback, e.g. a SyntaxError in a module
  process.exit(1);
}
const result = JSON.parse(report);
for (const rel of result.pycs) {
  const dest = path.join(outDir, rel);
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  fs.writeFileSync(dest, FS.readFile(`/precompile/out/${rel}`));
}
delete result.pycs;
console.log(JSON.stringify({ ...result, compiled: sources.length }));
