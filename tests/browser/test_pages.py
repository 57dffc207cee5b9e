"""The demo page and the /debug/memory page, driven like a user would."""

import pytest
from browserkit import watch_errors

from pymemory.testing import PageMemory


def test_demo_add_query_feedback_forget(context, base_url):
    page = context.new_page()
    errors = watch_errors(page)
    page.goto(f"{base_url}/?db=demo-test&models=0")  # BM25 ranking: a like multiplies by 1.5
    page.wait_for_selector("[data-testid=status][data-ready=true]")

    def add(text, type_="message", scope="conversation", tags=""):
        page.get_by_test_id("add-type").select_option(type_)
        page.get_by_test_id("add-scope").select_option(scope)
        page.get_by_test_id("add-tags").fill(tags)
        count = page.get_by_test_id("memory-item").count()
        page.get_by_test_id("add-text").fill(text)
        page.get_by_test_id("add-submit").click()
        # The worker may be busy loading the local models: wait for this add to land.
        page.wait_for_function(
            "(n) => document.querySelectorAll('[data-testid=memory-item]').length === n + 1",
            arg=count,
        )

    add("I prefer answers as tables, not bullet points.", "user_preference", "user", "format")
    add("Hi! Can you summarise the meeting notes as a table? Thanks!", tags="meeting")
    page.wait_for_function("document.querySelectorAll('[data-testid=memory-item]').length === 2")

    page.get_by_test_id("query").fill("meeting notes table")
    page.get_by_test_id("query-submit").click()
    page.get_by_test_id("result-item").first.wait_for()
    assert page.get_by_test_id("result-item").count() == 2
    used = page.get_by_test_id("tokens-used")
    assert 0 < int(used.get_attribute("data-used")) <= int(used.get_attribute("data-max"))

    # The parts shown multiply to the score shown.
    for item in page.get_by_test_id("result-item").all():
        parts = item.get_by_test_id("score-parts")
        product = 1.0
        for name in ("relevance", "decay", "feedback", "time"):
            product *= float(parts.get_attribute(f"data-{name}"))
        assert float(item.get_attribute("data-score")) == pytest.approx(product)
        assert parts.inner_text().endswith(f"= {float(item.get_attribute('data-score')):.3f}")

    # Like the second result: its score is multiplied by the liked weight (1.5).
    second = page.get_by_test_id("result-item").nth(1)
    second_id = second.get_attribute("data-id")
    before = float(second.get_attribute("data-score"))
    second.get_by_test_id("feedback-liked").click()
    selector = f"[data-testid=result-item][data-id='{second_id}']"
    page.wait_for_function(
        "([sel, before]) => Number(document.querySelector(sel).dataset.score) > before * 1.4",
        arg=[selector, before],
    )
    after = float(page.locator(selector).get_attribute("data-score"))
    assert after / before == pytest.approx(1.5, rel=1e-3)
    memory = PageMemory(page, db_name="demo-test")
    liked = [m for m in memory.list() if m["feedback"]["liked"]]
    assert len(liked) == 1  # stored: the click waited for a durable write

    page.get_by_test_id("forget-scope").select_option("conversation")
    page.get_by_test_id("forget-submit").click()
    page.wait_for_function("document.querySelectorAll('[data-testid=memory-item]').length === 1")
    assert [m["scope"] for m in memory.list()] == ["user"]
    assert errors == []


def test_debug_page_shows_every_candidate_and_why(context, base_url):
    page = context.new_page()
    errors = watch_errors(page)
    page.goto(f"{base_url}/web/pages/test/harness.html")
    page.wait_for_function("document.body.dataset.loaded === '1'")
    memory = PageMemory(page, db_name="debug-test")
    memory.seed([f"deploy note {i} about the staging server" for i in range(4)])
    memory.seed(["unrelated grocery list"], scope="user")

    page.goto(f"{base_url}/debug/memory?db=debug-test&models=0")
    page.wait_for_selector("[data-testid=status]")
    page.get_by_test_id("debug-query").fill("staging deploy")
    page.get_by_test_id("debug-max-items").fill("2")
    page.get_by_test_id("debug-run").click()
    page.get_by_test_id("debug-row").first.wait_for()
    statuses = [r.get_attribute("data-status") for r in page.get_by_test_id("debug-row").all()]
    assert statuses.count("included") == 2
    assert statuses.count("max_items") == 2
    assert statuses.count("no_match") == 1
    text = page.get_by_test_id("debug-text").inner_text()
    assert text.count("deploy note") == 2
    assert "/ 1500" in page.get_by_test_id("debug-tokens").inner_text()
    assert page.get_by_test_id("debug-mode").get_attribute("data-mode") == "bm25"
    # What the prompt got of each included memory: its passage, and why.
    assert page.get_by_test_id("debug-inject").get_attribute("data-inject") == "passages"
    passages = page.locator("[data-testid=debug-row][data-status=included] [data-testid=debug-passage]")
    assert passages.count() == 2
    assert {p.get_attribute("data-why") for p in passages.all()} == {"whole"}
    assert all("staging server" in p.inner_text() for p in passages.all())
    _scores_add_up(page)
    assert errors == []


def _scores_add_up(page) -> int:
    """Every row's shown parts: dense + lexical + context = relevance, and relevance x
    decay x feedback x time = score."""
    cells = page.get_by_test_id("debug-score").all()
    for cell in cells:
        got = {k: float(cell.get_attribute(f"data-{k}")) for k in (
            "score", "relevance", "dense-part", "lexical-part", "context-part", "decay",
            "feedback", "time")}  # fmt: skip
        parts = got["dense-part"] + got["lexical-part"] + got["context-part"]
        assert got["relevance"] == pytest.approx(parts)
        product = got["relevance"] * got["decay"] * got["feedback"] * got["time"]
        assert got["score"] == pytest.approx(product, abs=1e-12)
    return len(cells)


def test_debug_page_scores_add_up_in_hybrid_and_recency_mode(context, base_url):
    page = context.new_page()
    errors = watch_errors(page)
    page.goto(f"{base_url}/web/pages/test/harness.html")
    page.wait_for_function("document.body.dataset.loaded === '1'")
    memory = PageMemory(page, db_name="debug-hybrid")
    memory.seed(["deploy note about the staging server", "the staging deploy failed at noon",
                 "lunch with Sam on Thursday"])  # fmt: skip
    page.goto(f"{base_url}/debug/memory?db=debug-hybrid")  # with the MiniLM embedder
    page.wait_for_selector("[data-testid=status][data-ready=true]")
    page.evaluate("() => window.pymemoryDebug.client.modelsReady")
    for query, mode in (("did the staging deploy work?", "hybrid"), ("", "recency")):
        page.get_by_test_id("debug-query").fill(query)
        page.get_by_test_id("debug-run").click()
        page.wait_for_selector(f"[data-testid=debug-mode][data-mode={mode}]")
        page.get_by_test_id("debug-row").first.wait_for()
        assert _scores_add_up(page) >= 2, mode
    assert errors == []
