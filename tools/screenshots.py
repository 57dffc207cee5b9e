"""Take the README screenshots: docs/img/demo.png (the demo page after a few memories and a
query) and docs/img/debug.png (/debug/memory showing included, cut and filtered
candidates). Starts the dev server on a free port and drives Debian's Chromium with
Playwright; a fresh browser profile, so the pages start from an empty IndexedDB.

    .venv/bin/python tools/screenshots.py [--out docs/img] [--viewport-only]

Chinese text and the feedback emoji need fonts in the system (Debian: fonts-wqy-zenhei or
fonts-noto-cjk, and fonts-noto-color-emoji); without them they render as boxes and this
script warns.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make `tools` importable
    sys.path.insert(0, str(ROOT))

from playwright.sync_api import Page, sync_playwright  # noqa: E402

from tools import server  # noqa: E402

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1200, "height": 900}
BOOT_TIMEOUT_MS = 120_000
MIN = 60_000
HOUR = 60 * MIN
DAY = 24 * HOUR

# Added through the form, as a user would.
TYPED = [
    {
        "type": "user_preference",
        "scope": "user",
        "tags": "format, style",
        "text": "I prefer answers formatted as tables, and keep them short: five rows at most.",
    },
    {
        "type": "message",
        "scope": "conversation",
        "tags": "meeting，权限",
        "text": "今天下午3点和产品团队开了需求评审会，讨论了新后台系统的权限模块，"
        "你能帮我记下来吗？",
    },
]

# Added through the client with backdated timestamps (age in ms), so decay, TTL and the
# time window have something to show.
BACKDATED = [
    {
        "type": "message",
        "scope": "conversation",
        "tags": ["meeting", "权限"],
        "age": 50 * MIN,
        "text": "会上确定了3个角色：超级管理员（全权限）、部门管理员（管理本部门）、"
        "普通成员（只读）。还说了下周二上线。",
    },
    {
        "type": "tool_result",
        "scope": "session",
        "tags": ["calendar", "meeting"],
        "age": 1 * HOUR,
        "text": '{"tool": "calendar.search", "query": "permissions review meeting", "results": '
        '[{"title": "Permissions review meeting", "start": "2026-12-01T15:00", "room": "3F-A"}]}',
    },
    {
        "type": "tool_result",
        "scope": "session",
        "tags": ["weather"],
        "age": 2 * HOUR,
        "ttlMs": 30 * MIN,
        "text": "Weather in Beijing: 23°C, cloudy. Good for the team lunch after the meeting.",
    },
    {
        "type": "user_feedback",
        "scope": "user",
        "tags": ["format", "meeting"],
        "age": 3 * DAY,
        "text": "That summary was far too long. Bullet points work better for meeting notes, "
        "thanks!",
    },
    {
        "type": "system_event",
        "scope": "global",
        "tags": ["sync"],
        "age": 10 * DAY,
        "text": "Synced 42 calendar events from the work account; 3 meeting invites are still "
        "unanswered.",
    },
    {
        "type": "message",
        "scope": "conversation",
        "tags": ["expenses"],
        "age": 20 * DAY,
        "text": "Last month we went through the reimbursement process for travel expenses and "
        "the meeting budget.",
    },
]

ADD_BACKDATED = """async (entries) => {
  const now = Date.now();
  const { client } = window.pymemoryDemo;
  await client.addMany(entries.map(({ age, ...e }) => ({ ...e, timestamp: now - age })));
}"""


def has_font(pattern: str) -> bool | None:
    """Whether fontconfig knows a font matching ``pattern`` (None: no fc-list to ask)."""
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return None
    out = subprocess.run([fc_list, pattern, "family"], capture_output=True, text=True)
    return bool(out.stdout.strip())


def watch(page: Page, problems: list[str]) -> None:
    page.on("pageerror", lambda err: problems.append(f"page error: {err}"))
    page.on(
        "console",
        lambda msg: (
            problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None
        ),
    )


def wait_ready(page: Page) -> None:
    page.wait_for_selector('[data-testid="status"][data-ready="true"]', timeout=BOOT_TIMEOUT_MS)


def wait_models(page: Page) -> None:
    for model in ("embedder", "summarizer"):
        page.wait_for_selector(
            f'[data-testid="model-{model}"][data-state="ready"]', timeout=BOOT_TIMEOUT_MS
        )


def demo(page: Page, base: str, out: Path, full_page: bool) -> None:
    page.goto(f"{base}/")
    wait_ready(page)
    wait_models(page)  # so the summarizer refines what is added below
    for i, m in enumerate(TYPED, start=1):
        page.select_option("#add-type", m["type"])
        page.select_option("#add-scope", m["scope"])
        page.fill("#add-text", m["text"])
        page.fill("#add-tags", m["tags"])
        page.click("#add-submit")
        page.wait_for_function(
            "n => document.querySelectorAll('[data-testid=memory-item]').length >= n", arg=i
        )
    page.evaluate(ADD_BACKDATED, BACKDATED)
    total = len(TYPED) + len(BACKDATED) - 1  # the weather report has already expired
    page.wait_for_function(
        "n => document.querySelectorAll('[data-testid=memory-item]').length === n", arg=total
    )
    # Wait for the models to embed and refine what was just added.
    page.evaluate(
        """async () => {
          const c = window.pymemoryDemo.client;
          const { connection } = await import("/web/agent-memory.mjs");
          await connection().call(c.dbName, "modelsIdle", {});
        }"""
    )
    page.fill("#query", "How should I format the meeting notes?")
    page.fill("#query-max-items", "4")
    page.click("#query-submit")
    page.wait_for_selector('[data-testid="result-item"]')
    # Like the bullet-points feedback: it moves up once the query re-runs.
    liked = page.locator('[data-testid="result-item"]', has_text="Bullet points")
    liked.locator('[data-testid="feedback-liked"]').click()
    page.wait_for_timeout(500)  # the query re-runs after the like
    page.locator("#query").blur()
    page.screenshot(path=str(out / "demo.png"), full_page=full_page)
    # Feedback is persisted in batches every few seconds: write it before leaving the page.
    page.evaluate("() => window.pymemoryDemo.client.flush()")


def debug(page: Page, base: str, out: Path, full_page: bool) -> None:
    page.goto(f"{base}/debug/memory")
    wait_ready(page)
    page.fill("#debug-query", "meeting notes format 权限")
    page.fill("#debug-max-items", "3")
    page.fill("#debug-hours", "72")  # rewrites the strategy JSON with a time_window
    page.click("#debug-run")
    page.wait_for_selector('[data-testid="debug-row"]')
    statuses = page.eval_on_selector_all(
        '[data-testid="debug-row"]', "rows => rows.map(r => r.dataset.status)"
    )
    wanted = {"included", "max_items", "time_window"}
    if not wanted <= set(statuses):
        raise SystemExit(f"debug page: expected statuses {sorted(wanted)}, got {statuses}")
    page.locator("#debug-run").blur()
    page.screenshot(path=str(out / "debug.png"), full_page=full_page)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    parser.add_argument(
        "--viewport-only", action="store_true", help="1200x900 shots instead of full pages"
    )
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium")
    if chromium is None:
        print("chromium not found (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    for pattern, what, package in (
        (":lang=zh", "CJK", "fonts-wqy-zenhei"),
        (":charset=1f44d", "emoji", "fonts-noto-color-emoji"),
    ):
        if has_font(pattern) is False:
            print(
                f"warning: no {what} font, so it renders as boxes (Debian: {package})",
                file=sys.stderr,
            )
    args.out.mkdir(parents=True, exist_ok=True)
    httpd = server.start(0)
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    problems: list[str] = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
                page = context.new_page()
                watch(page, problems)
                demo(page, base, args.out, not args.viewport_only)
                debug(page, base, args.out, not args.viewport_only)
            finally:
                browser.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    for name in ("demo.png", "debug.png"):
        print(args.out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
