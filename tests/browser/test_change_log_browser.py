"""The change log in IndexedDB: two pages of one app (each page's own worker and Memory on
one IndexedDB database) see each other's writes and forgets at their next call, with no
reload. The pages opt out of the shared leader worker (tabs: "own") so that two workers
really write to one database: what pages with their own worker rely on."""

from browserkit import js, watch_errors

OPEN = "const m = pm.createAgentMemory({ dbName: 'shared-tabs', tabs: 'own' }); await m.ready;"


def open_pages(context, base_url, n: int):
    pages = []
    for _ in range(n):
        page = context.new_page()
        page.errors = watch_errors(page)
        page.goto(f"{base_url}/web/pages/test/harness.html")
        page.wait_for_function("document.body.dataset.loaded === '1'")
        pages.append(page)
    return pages


def test_two_pages_see_each_others_adds_and_forgets(context, base_url):
    a, b = open_pages(context, base_url, 2)
    assert js(a, OPEN + "return (await m.list()).length;") == 0
    assert js(b, OPEN + "return (await m.list()).length;") == 0
    # Both pages write at once: every write is its own IndexedDB transaction.
    for page, tag in ((a, "from-a"), (b, "from-b")):
        page.evaluate(
            "(tag) => { const pm = window.pymemory; window.pending = (async () => {"
            " const m = pm.createAgentMemory({ dbName: 'shared-tabs', tabs: 'own' }); await m.ready;"
            " await Promise.all(Array.from({ length: 50 }, (_, i) =>"
            "   m.addMemory({ text: `${tag} note ${i}`, tags: [tag], scope: 'conversation' })));"
            " })(); }",
            tag,
        )
    for page in (a, b):
        page.evaluate("() => window.pending")
    for page in (a, b):
        listed = js(page, OPEN + "return (await m.list({ scope: null })).map((i) => i.tags[0]);")
        assert sorted(set(listed)) == ["from-a", "from-b"] and len(listed) == 100
    secret = js(
        a,
        OPEN
        + "return await m.addMemory({ text: 'The launch code word is pineapple', scope: 'user' });",
    )
    found = js(
        b, OPEN + "return (await m.retrieve('launch code word')).memories.map((x) => x.item.id);"
    )
    assert found[0] == secret["id"]
    assert js(b, OPEN + "return await m.clear({ all: true });") == 101
    text = js(a, OPEN + "return (await m.retrieve('launch code word pineapple')).text;")
    assert "pineapple" not in text
    assert js(a, OPEN + "return (await m.list({ scope: null })).length;") == 0
    assert js(a, OPEN + "return await m.exportJsonl();").count("\n") == 1  # the header only
    for page in (a, b):
        assert page.errors == []
