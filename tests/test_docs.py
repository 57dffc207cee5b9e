"""README.md and docs/*.md (BENCHMARKS.md aside): every fenced code block runs in a test, or
says here why it cannot; the Python examples print what the page shows; every relative link
and anchor resolves; README stays a landing page.

A block is named by its page, the heading it sits under and its position under that heading
(``docblocks.Block.key``). ``RUN`` names the test that runs each block (and that test's file
must name the page); ``NOT_RUN`` gives the reason for the few that do not run.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from docblocks import ROOT, block, blocks, pages

from pymemory import Memory
from pymemory.cli import main as cli_main

HERE = "tests/test_docs.py"
AGENT = "docs/agent-primitives.md"
AGENT_EXAMPLES = [  # the headings of its examples that start from SESSION alone
    "## Core memory blocks",
    "## Structured memory",
    "## Memory tools",
    "## ObservationalMemory",
    "## Independent memory agent",
]
PY_RUN = f"{HERE}::test_python_example_prints_what_the_page_shows"
SERVER_RUN = (
    "tests/storage/test_server_docs.py::test_the_web_server_example_serves_two_users_as_the_page_shows"
)

# --- the registry: which test runs each block --------------------------------------------

RUN: dict[tuple[str, str, int], str] = {
    # the Python tour, from the installed wheel in a fresh venv, and its output
    ("README.md", "## Python quick tour", 0): "tests/test_package.py::test_readme_python_tour_prints_readmes_output_from_the_installed_wheel",
    ("README.md", "## Python quick tour", 1): "tests/test_package.py::test_readme_python_tour_prints_readmes_output_from_the_installed_wheel",
    # the browser tour, bundled from the npm tarball and run in Chromium; type-checked too
    ("README.md", "## Browser tour", 0): "tests/browser/test_npm_package.py::test_readme_js_example_prints_what_readme_shows",
    ("README.md", "## Browser tour", 1): "tests/browser/test_npm_package.py::test_readme_js_example_prints_what_readme_shows",
    ("docs/browser.md", "## React hook", 0): "tests/browser/test_npm_package.py::test_readme_examples_and_the_declarations_type_check",
    ("docs/bundlers.md", "## Vite", 0): "tests/browser/test_bundlers.py::test_vite_dev_server_with_the_default_asset_urls",
    ("docs/bundlers.md", "## webpack 5", 0): "tests/browser/test_bundlers.py::test_webpack_production_build",
    # Next.js and the agent frameworks' adapters: the docs' modules are the test app's
    ("docs/bundlers.md", "## Next.js", 0): "tests/browser/test_nextjs.py::test_next_build_and_start_boot_add_retrieve_reload_and_offline",
    ("docs/browser.md", "## The Vercel AI SDK and LangChain.js", 0): "tests/browser/test_nextjs.py::test_ai_sdk_agent_stores_a_fact_and_answers_from_memory_in_the_next_conversation",
    ("docs/browser.md", "## The Vercel AI SDK and LangChain.js", 1): "tests/browser/test_nextjs.py::test_langchain_store_keeps_the_store_contract_and_the_retriever_returns_documents",
    ("docs/storage.md", "## When storage runs out", 1): "tests/browser/test_npm_package.py::test_readme_examples_and_the_declarations_type_check",
    ("docs/browser.md", "## In your own Pyodide (PyScript, JupyterLite, a page's own worker)", 0): "tests/browser/test_own_pyodide.py::test_the_own_pyodide_page_runs_with_npms_pyodide_only",
    ("docs/browser.md", "## In your own Pyodide (PyScript, JupyterLite, a page's own worker)", 1): "tests/browser/test_own_pyodide.py::test_the_own_pyodide_page_runs_with_npms_pyodide_only",
    ("docs/testing.md", "# Testing your app's memory with Playwright", 1): "tests/browser/test_page_memory.py::test_readme_playwright_example_runs_through_the_plugin",
    ("docs/testing.md", "# Testing your app's memory with Playwright", 2): "tests/browser/test_page_memory.py::test_readme_playwright_example_runs_through_the_plugin",
    ("docs/retrieval.md", "## Evaluating retrieval", 0): "tests/test_package.py::test_readme_eval_matches_from_the_installed_wheel",
    ("docs/cli.md", "# Command line", 0): f"{HERE}::test_cli_transcript_prints_what_the_page_shows",
    ("docs/sync.md", "## One round", 0): "tests/sync/test_sync_docs.py::test_the_sync_example_prints_what_the_page_shows",
    ("docs/sync.md", "## In the browser", 0): "tests/browser/test_sync_browser.py::test_the_browser_sync_example_prints_what_docs_sync_md_shows",
    ("docs/sync.md", "## Conflicts and deletes", 0): "tests/sync/test_sync_docs.py::test_the_later_edit_example_prints_what_the_page_shows",
    ("docs/storage.md", "## When storage runs out", 0): f"{HERE}::test_storage_room_is_what_the_page_shows",
    # the Python examples run below (EXAMPLES), each with the block of output after it
    ("docs/python-api.md", "## Behaviour worth knowing", 0): PY_RUN,
    ("docs/storage.md", "## Encrypted stores", 0): PY_RUN,
    ("docs/storage.md", "## Encrypted stores", 1): PY_RUN,
    ("docs/models.md", "# Local models (no network)", 0): PY_RUN,
    ("docs/models.md", "# Local models (no network)", 1): PY_RUN,
    ("docs/langgraph.md", "# LangGraph store", 0): PY_RUN,
    ("docs/retrieval.md", "## What the prompt gets", 0): PY_RUN,
    ("docs/retrieval.md", "## What the prompt gets", 1): PY_RUN,
    ("docs/server-store.md", "## A web server for two users", 0): SERVER_RUN,
    ("docs/server-store.md", "## A web server for two users", 1): SERVER_RUN,
    ("docs/server-store.md", "## A web server for two users", 2): SERVER_RUN,
    ("docs/langgraph.md", "# LangGraph store", 1): PY_RUN,
    ("docs/agent-primitives.md", "## Letta's tools", 0): PY_RUN,
    ("docs/agent-primitives.md", "## Letta's tools", 1): PY_RUN,
    **{(AGENT, h, i): PY_RUN for h in [*AGENT_EXAMPLES, "## MessageAssembler"] for i in (0, 1)},
}  # fmt: skip

NOT_RUN: dict[tuple[str, str, int], str] = {
    ("README.md", "## Install", 0): "pip installs from PyPI, where pymemory-agent is not published yet; tests/test_package.py installs the wheel the same way from a local file",
    ("README.md", "## The two commands", 0): "the commands that set up and run this very suite (.ci/run runs `python3 build.py test`)",
    ("README.md", "## Layout", 0): "a directory tree, not code",
    ("docs/browser.md", "## Install", 0): "npm installs from a checkout's tarball and the registry; tests/browser/test_npm_package.py does the same with tools/pack.py and npm in a temporary app",
    ("docs/browser.md", "## React hook", 1): "an HTML skeleton (`// ... as usual`); tests/browser/test_npm_package.py serves the same import map in its no-bundler page",
    ("docs/testing.md", "# Testing your app's memory with Playwright", 0): "pip installs from PyPI, where pymemory-agent is not published yet",
}  # fmt: skip


def test_every_block_is_run_or_says_why_not():
    found = {b.key: b for page in pages() for b in blocks(page)}
    assert not RUN.keys() & NOT_RUN.keys(), "a block is either run or not"
    unregistered = [
        f"{b.page}:{b.line} {b.key}" for k, b in found.items() if k not in RUN | NOT_RUN
    ]
    assert not unregistered, "blocks no test runs (add them to RUN or NOT_RUN):\n" + "\n".join(
        unregistered
    )
    stale = [k for k in RUN | NOT_RUN if k not in found]
    assert not stale, f"registered blocks that are no longer there: {stale}"
    assert len(NOT_RUN) <= 8, "keep the blocks that do not run few: make them run"


@pytest.mark.parametrize("nodeid", sorted(set(RUN.values())))
def test_each_registered_test_exists_and_reads_its_page(nodeid):
    path, name = nodeid.split("::")
    source = (ROOT / path).read_text(encoding="utf-8")
    names = {
        node.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    assert name in names, f"{path} has no test {name}"
    for page in {key[0] for key, test in RUN.items() if test == nodeid}:
        assert page in source, f"{path} does not read {page}"


# --- the Python examples -------------------------------------------------------------------

SESSION = """\
from pymemory.agent import *
from pymemory.agent.llm import RuleObserver
from pymemory.storage import MapKv
kv = MapKv()
"""


@dataclass(frozen=True)
class Example:
    page: str
    heading: str
    index: int = 0
    setup: str = ""  # what the page says the snippet starts from
    before: str = ""  # the heading of an earlier example (on the same page) it continues
    needs_models: bool = False

    @property
    def id(self) -> str:
        return f"{Path(self.page).stem}:{self.heading.lstrip('# ')}:{self.index}"


EXAMPLES = [
    # the output is in the snippet's own comments
    Example("docs/python-api.md", "## Behaviour worth knowing",
            setup="from pymemory import Memory\nmemory = await Memory.open(None)\n"),
    Example("docs/storage.md", "## Encrypted stores"),
    Example("docs/models.md", "# Local models (no network)", needs_models=True),
    Example("docs/retrieval.md", "## What the prompt gets"),
    Example("docs/langgraph.md", "# LangGraph store", needs_models=True),
    Example("docs/agent-primitives.md", "## Letta's tools"),
    *(Example(AGENT, heading, setup=SESSION) for heading in AGENT_EXAMPLES),
    Example(AGENT, "## MessageAssembler", setup=SESSION, before="## Core memory blocks"),
]  # fmt: skip


def run_python(source: str) -> str:
    """Run ``source`` as the page means it (top-level await allowed); what it printed."""
    code = compile(source, "<doc>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        awaitable = eval(code, {"__name__": "__doc_example__"})
        if awaitable is not None:
            asyncio.run(awaitable)
    return printed.getvalue()


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_python_example_prints_what_the_page_shows(example, tmp_path, monkeypatch, request):
    if example.needs_models:
        request.getfixturevalue("minilm")  # fails, saying how, when the models are not built
    monkeypatch.chdir(tmp_path)  # the examples that write a file write it here
    code = block(example.page, example.heading, example.index)
    assert code.lang == "python"
    source, shown = example.setup, ""
    if example.before:  # run it first, and expect its output first
        source += block(example.page, example.before).body
        shown += block(example.page, example.before, 1).body
    source += code.body
    if "\n# " in code.body and code.body.rstrip().splitlines()[-1].startswith("# "):
        shown += "".join(
            line[2:] + "\n" for line in code.body.splitlines() if line.startswith("# ")
        )  # the output is written as the snippet's last comment lines
    else:
        output = block(example.page, example.heading, example.index + 1)
        assert output.lang == "", "the block after an example is its output"
        shown += output.body
    assert run_python(source) == shown


async def test_storage_room_is_what_the_page_shows(tmp_path):
    shown = ast.literal_eval(
        block("docs/storage.md", "## When storage runs out").body.replace("...", "None")
    )
    async with await Memory.open(tmp_path / "notes.db") as memory:
        room = (await memory.stats())["storage"]
    assert room.keys() == shown.keys()
    assert isinstance(room["available_bytes"], int) and room["available_bytes"] > 0
    assert room["quota_bytes"] is None and room["reserve_bytes"] == shown["reserve_bytes"]
    assert 0 < room["usage_bytes"] <= 4 * shown["usage_bytes"]  # a new file: a few pages


# --- the command-line transcript ----------------------------------------------------------

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
WHEN = re.compile(r"\d{4}-\d{2}-\d{2}( \d{2}:\d{2}:\d{2})?")


def test_cli_transcript_prints_what_the_page_shows(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYMEMORY_DB", str(tmp_path / "memory.db"))
    transcript = block("docs/cli.md", "# Command line").body
    steps = re.split(r"^\$ ", transcript, flags=re.M)[1:]
    ids: dict[str, str] = {}  # the page's ids -> this run's
    for step in steps:
        command, _, shown = step.partition("\n")
        args = shlex.split(command)
        assert args[0] == "pymemory"
        cli_main([ids.get(a, a) for a in args[1:]])
        out = capsys.readouterr()
        printed = out.out + out.err
        for page_id, run_id in zip(UUID.findall(shown), UUID.findall(printed), strict=True):
            assert ids.setdefault(page_id, run_id) == run_id
        back = {run_id: page_id for page_id, run_id in ids.items()}
        printed = UUID.sub(lambda m, back=back: back.get(m.group(0), m.group(0)), printed)
        assert WHEN.sub("WHEN", printed).rstrip() == WHEN.sub("WHEN", shown).rstrip(), command


# --- links and the landing page -----------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown file (code blocks skipped)."""
    found, fenced = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", pages())
def test_relative_links_resolve(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    text = re.sub(r"^( *)```.*?^\1```", "", text, flags=re.M | re.S)  # not inside code
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file, _, anchor = target.partition("#")
        path = (ROOT / page).parent / file if file else ROOT / page
        if not path.exists():
            broken.append(f"{target}: no file {path.relative_to(ROOT)}")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}: no heading #{anchor} in {path.relative_to(ROOT)}")
    assert not broken, "\n".join(broken)


def test_readme_is_a_landing_page_that_links_the_topic_pages():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 350
    linked = {t.split("#")[0] for t in LINK.findall(text) if t.startswith("docs/")}
    topics = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")} - {
        "docs/README.md",
        "docs/BENCHMARKS.md",
    }
    assert len(linked & topics) >= 5
    assert topics <= linked, f"topic pages README does not link: {topics - linked}"
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    assert all(Path(t).name in index for t in topics), "docs/README.md lists every page"
