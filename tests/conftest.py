import asyncio

import pytest
from helpers import Clock
from sync_hub import hub, hub_root  # noqa: F401  (the sync hub's fixtures)

from pymemory import Memory
from pymemory.models import find_model_dir, load_minilm, load_multilingual_e5
from pymemory.storage import MapKv


@pytest.fixture
def clock():
    return Clock()


def _local_model(name: str, loader):
    model_dir = find_model_dir(name)
    if model_dir is None:
        pytest.fail(f"{name} is not built: run python3 build.py setup", pytrace=False)
    return asyncio.run(loader(model_dir=model_dir))


@pytest.fixture(scope="session")
def minilm():
    """The real MiniLM embedder (``.cache/models/minilm``), loaded once for the session."""
    return _local_model("minilm", load_minilm)


@pytest.fixture(scope="session")
def e5():
    """The real multilingual-e5-small (``.cache/models/multilingual-e5-small``), loaded once."""
    return _local_model("multilingual-e5-small", load_multilingual_e5)


@pytest.fixture
async def memory(clock):
    mem = await Memory.open(MapKv(), clock=clock)
    yield mem
    await mem.close()


def pytest_collection_modifyitems(items):
    # The browser tests drive Playwright's sync API, which keeps an event loop running in
    # this thread until the session ends; run them after every asyncio test.
    items.sort(key=lambda item: "browser" in item.path.parts)


def pytest_terminal_summary(terminalreporter):
    """Print how many generated calls the fuzz suite (tests/facade/test_fuzz.py) made."""
    import sys

    fuzz = sys.modules.get("test_fuzz")
    if fuzz is not None and sum(fuzz.CASES.values()):
        counts = ", ".join(f"{k}: {v:,}" for k, v in sorted(fuzz.CASES.items()))
        total = sum(fuzz.CASES.values())
        terminalreporter.write_line(f"fuzz suite: {total:,} generated calls ({counts})")
