"""pymemory.testing.PageMemory against the demo page, as an app's own e2e test would."""

import pytest
from browserkit import watch_errors

from pymemory.testing import PageMemory, PageMemoryError


def test_seed_inspect_reset_through_the_demo_page(context, base_url):
    page = context.new_page()
    errors = watch_errors(page)
    page.goto(f"{base_url}/?db=e2e-app&models=0")
    memory = PageMemory(page, db_name="e2e-app")
    assert memory.wait_ready()["items"] == 0

    seeded = memory.seed(
        [
            {"text": "The user prefers metric units", "type": "user_preference"},
            "Booked a table for two at 7pm",
        ]
    )
    assert [m["type"] for m in seeded] == ["user_preference", "message"]
    # The app's own UI sees the seeded memories at once (same worker, change events).
    page.get_by_test_id("memory-item").nth(1).wait_for()
    assert page.get_by_test_id("memory-item").count() == 2

    # Drive the app: add through its form, then inspect from the test.
    page.get_by_test_id("add-text").fill("Remind me to water the plants on Sunday")
    page.get_by_test_id("add-submit").click()
    page.wait_for_function("document.querySelectorAll('[data-testid=memory-item]').length === 3")
    contents = [m["content"] for m in memory.list()]
    assert any("water the plants" in c for c in contents)
    found = memory.retrieve("metric units")
    assert found["memories"][0]["item"]["id"] == seeded[0]["id"]

    with pytest.raises(PageMemoryError) as err:
        memory._call("get", "no-such-id")
    assert err.value.code == "not_found"

    assert memory.reset() == 3
    assert memory.stats()["items"] == 0
    page.wait_for_function("document.querySelectorAll('[data-testid=memory-item]').length === 0")
    assert errors == []
