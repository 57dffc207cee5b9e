"""The stage-1 rule encoder on realistic English/Chinese text: what it keeps and drops,
how it cuts sentences, and how it truncates to the bound."""

from __future__ import annotations

import re
import time

import pytest
from encoder_words import invented_words

from pymemory.encoder import (
    MAX_CONTENT_CHARS,
    MEMORY_TYPES,
    RuleEncoder,
    split_sentences,
)
from pymemory.encoder.sentences import _split_sentences

ENC = RuleEncoder()


def summarize(text: str, type: str = "message") -> str:
    return ENC.summarize(text, type=type)


# --------------------------------------------------------------------------------------
# Realistic examples: the intent survives, the pleasantry goes
# --------------------------------------------------------------------------------------

LONG_STORY = (
    "So yesterday I was going through the quarterly numbers with the team and we spent a "
    "long time talking about the marketing budget, which has grown a lot over the last two "
    "years. It was a long meeting and everybody was tired by the end of it. The coffee "
    "machine on the third floor was out of order again, so nobody was in a great mood. "
    "Can you draft an email to finance asking for the Q3 numbers?"
)
LONG_STORY_ZH = (
    "昨天开会讨论了很久，大家都很累，会议室的空调也坏了，一直到晚上八点才结束。"
    "会上大家聊了很多以前的项目，也聊了一些团队建设的事情，还有下个季度的招聘安排。"
    "老板说最近大家都辛苦了，等项目上线以后请大家一起吃饭。"
    "中间还有人提到办公室要搬家，不过具体时间还没有定下来，可能要等到年底。"
    "行政那边也说会尽快把新的门禁卡发下来，让大家留意邮件通知。"
    "楼下的咖啡店换了老板，口味比以前差了一点，排队的人也少了很多。"
    "另外，麻烦你帮我整理一份数据库迁移计划，周五之前发给我。"
)

EXAMPLES = [
    pytest.param(
        "Hi there! Thanks so much for yesterday. Could you convert the Python script to "
        "export CSV? Have a nice day",
        "message",
        ["convert the Python script to export CSV"],
        ["Hi", "nice day", "yesterday"],
        id="request-between-pleasantries",
    ),
    pytest.param(
        "Hello! Sorry to bother you. My name is Alice Chen and I'm the new PM on the billing team.",
        "message",
        ["My name is Alice Chen", "billing team"],
        ["Hello", "Sorry", "bother"],
        id="name-fact",
    ),
    pytest.param(
        "Hey, quick one: can you remind me to call the dentist tomorrow at 9am? Thanks!",
        "message",
        ["remind me to call the dentist tomorrow at 9am"],
        ["Hey", "Thanks"],
        id="reminder",
    ),
    pytest.param(
        "ok cool. We decided to go with PostgreSQL instead of MySQL for the new service.",
        "message",
        ["We decided to go with PostgreSQL instead of MySQL"],
        ["cool"],
        id="decision",
    ),
    pytest.param(
        "Good morning team! Hope you all had a great weekend. First, pull the latest main "
        "branch. Then run make test before pushing.",
        "message",
        ["First, pull the latest main branch.", "Then run make test before pushing."],
        ["morning", "weekend"],
        id="steps",
    ),
    pytest.param(
        "Honestly I prefer short answers without emojis. Thanks for asking!",
        "user_preference",
        ["I prefer short answers without emojis"],
        ["Honestly", "Thanks"],
        id="preference",
    ),
    pytest.param(
        "Thanks! That answer was wrong: the deadline is March 3, not March 5.",
        "user_feedback",
        ["That answer was wrong", "March 3", "not March 5"],
        ["Thanks"],
        id="feedback-correction",
    ),
    pytest.param(
        "Hi Sam, I just wanted to say that I hate it when the build breaks on Fridays lol",
        "user_preference",
        ["hate it when the build breaks on Fridays"],
        ["Hi", "Sam", "just"],
        id="preference-hate",
    ),
    pytest.param(
        "Please send Dr. Smith the v2.5 build from https://example.com/builds/app.zip today. "
        "Cheers!",
        "message",
        ["Please send Dr. Smith the v2.5 build from https://example.com/builds/app.zip today."],
        ["Cheers"],
        id="abbreviation-decimal-url",
    ),
    pytest.param(
        "I got this error:\nTraceback (most recent call last):\n"
        '  File "main.py", line 3, in <module>\n'
        "    count = int(value)\n"
        "ValueError: invalid literal for int() with base 10: 'abc'\n"
        "Can you fix it?",
        "message",
        ["ValueError: invalid literal for int() with base 10: 'abc'", "Can you fix it?"],
        ['File "main.py"', "count = int(value)", "Traceback"],
        id="python-traceback",
    ),
    pytest.param(
        "TypeError: Cannot read properties of undefined (reading 'map')\n"
        "    at render (App.jsx:42:17)\n"
        "    at renderWithHooks (react-dom.development.js:14985:18)\n"
        "    at mountIndeterminateComponent (react-dom.development.js:17811:13)",
        "tool_result",
        ["TypeError: Cannot read properties of undefined (reading 'map')"],
        ["renderWithHooks", "App.jsx"],
        id="js-stack-trace",
    ),
    pytest.param(
        "Here is my config:\n```yaml\n# server settings\nport: 8080\nhost: 0.0.0.0\n```\n"
        "Why does the server not start?",
        "message",
        ["Why does the server not start?", "port: 8080"],
        ["host", "```", "# server settings"],
        id="code-block",
    ),
    pytest.param(
        "Dear Maria,\n\nI hope this email finds you well.\n\nCould you send me the signed "
        "contract by Friday, June 14?\n\nBest regards,\nTom",
        "message",
        ["Could you send me the signed contract by Friday, June 14?"],
        ["Dear", "hope", "regards", "Tom"],
        id="email",
    ),
    pytest.param(
        "Notes from today:\n- we decided to ship v1.2 on Monday\n- Ana owns the release notes"
        "\n- ok",
        "message",
        ["we decided to ship v1.2 on Monday", "Ana owns the release notes"],
        ["ok"],
        id="bullets",
    ),
    pytest.param(
        LONG_STORY,
        "message",
        ["Can you draft an email to finance asking for the Q3 numbers?"],
        ["coffee machine"],
        id="long-story-request-at-end",
    ),
    pytest.param(
        "Thanks for the quick reply, but the chart is still wrong because the y-axis starts "
        "at 50. Otherwise great work!",
        "user_feedback",
        ["the chart is still wrong", "starts at 50"],
        [],
        id="feedback-evaluative",
    ),
    pytest.param(
        "你好！我觉得这个方案有点复杂，能不能简化一下？另外我需要它能在 Windows 上运行。谢谢",
        "message",
        ["简化", "Windows"],
        ["你好", "谢谢"],
        id="zh-simplify-windows",
    ),
    pytest.param(
        "您好，麻烦帮我查一下明天下午3点北京到上海的高铁票。辛苦了！",
        "message",
        ["帮我查一下明天下午3点北京到上海的高铁票"],
        ["您好", "辛苦了"],
        id="zh-train-ticket",
    ),
    pytest.param(
        "我们决定下周一开始用新的代码规范。好的。",
        "message",
        ["我们决定下周一开始用新的代码规范。"],
        ["好的"],
        id="zh-decision",
    ),
    pytest.param(
        "其实我不喜欢太长的回答，尽量简洁一点。谢谢啦",
        "user_preference",
        ["我不喜欢太长的回答", "尽量简洁一点"],
        ["其实", "谢谢"],
        id="zh-preference",
    ),
    pytest.param(
        "第一步，先安装依赖；然后运行 npm run build。最后部署到服务器上。嗯嗯",
        "message",
        ["第一步，先安装依赖；", "然后运行 npm run build。", "最后部署到服务器上。"],
        ["嗯嗯"],
        id="zh-steps",
    ),
    pytest.param(
        "谢谢你的回答！不过这个翻译不太准确，第二段漏了很多内容。",
        "user_feedback",
        ["这个翻译不太准确", "第二段漏了很多内容"],
        ["谢谢"],
        id="zh-feedback",
    ),
    pytest.param(
        "你好！我叫王小明，是新来的后端工程师。",
        "message",
        ["我叫王小明，是新来的后端工程师。"],
        ["你好"],
        id="zh-name",
    ),
    pytest.param(
        "不好意思打扰了。我对花生过敏，点餐的时候不要放花生。麻烦你了",
        "user_preference",
        ["我对花生过敏", "不要放花生"],
        ["不好意思", "打扰", "麻烦你了"],
        id="zh-allergy",
    ),
    pytest.param(
        LONG_STORY_ZH,
        "message",
        ["帮我整理一份数据库迁移计划，周五之前发给我。"],
        ["咖啡店", "请大家一起吃饭"],
        id="zh-long-request-at-end",
    ),
    pytest.param(
        "Hi! 我需要把 report.xlsx 转成 PDF，thanks",
        "message",
        ["我需要把 report.xlsx 转成 PDF"],
        ["Hi", "thanks"],
        id="mixed-language",
    ),
    pytest.param(
        "好的，那个，我们确定用 React 来写前端。",
        "message",
        ["我们确定用 React 来写前端。"],
        ["好的", "那个"],
        id="zh-filler",
    ),
    pytest.param(
        '> npm run build\nnpm ERR! Missing script: "build"\nnpm ERR! To see a list of scripts, '
        "run: npm run\n" + "npm info using npm@10.2.4 and node@v20.11.0 on linux x64\n" * 6,
        "tool_result",
        ['npm ERR! Missing script: "build"'],
        ["> npm run build"],
        id="tool-output-error",
    ),
]


@pytest.mark.parametrize(("text", "type", "kept", "dropped"), EXAMPLES)
def test_keeps_intent_and_drops_pleasantries(
    text: str, type: str, kept: list[str], dropped: list[str]
) -> None:
    out = summarize(text, type)
    assert len(out) <= MAX_CONTENT_CHARS
    for phrase in kept:
        assert phrase in out, f"{phrase!r} missing from {out!r}"
    for phrase in dropped:
        assert phrase not in out, f"{phrase!r} still in {out!r}"
    assert not invented_words(out, text)


def test_examples_cover_both_languages() -> None:
    zh = [p for p in EXAMPLES if re.search("[\u4e00-\u9fff]", p.values[0])]
    assert len(EXAMPLES) >= 25
    assert len(zh) >= 10


def test_long_story_keeps_request_and_fills_the_rest_in_order() -> None:
    out = summarize(LONG_STORY)
    assert out.endswith("Can you draft an email to finance asking for the Q3 numbers?")
    assert len(out) <= MAX_CONTENT_CHARS
    kept = _split_sentences(out)
    source = [s for s, _ in _split_sentences(LONG_STORY)]
    positions = [source.index(s) for s, _ in kept]
    assert positions == sorted(positions)


def test_deterministic_examples() -> None:
    for param in EXAMPLES:
        text, type = param.values[0], param.values[1]
        first = summarize(text, type)
        assert all(RuleEncoder().summarize(text, type=type) == first for _ in range(3))


# --------------------------------------------------------------------------------------
# What is left alone and what is compressed
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Please review PR #42 before Friday.",
        "The meeting moved to 3.30 pm in room B-12. Bring the Q2 report.",
        "System: backup completed at 03:00; 1,204 files copied, 0 errors.",
        "我们决定下周一开始用新的代码规范。第一步是统一缩进。",
        "Don't use tabs, never commit secrets, and always run the linter.",
        "The café is on Rue de Rivoli 12 – next to the métro.",
    ],
)
def test_clean_input_that_fits_comes_back_unchanged(text: str) -> None:
    assert summarize(text) == text


def test_whitespace_is_normalised() -> None:
    assert summarize("  Please   review\tPR #42\n\nbefore Friday.  ") == (
        "Please review PR #42 before Friday."
    )
    assert summarize("Buy milk\nCall mom at 5pm") == "Buy milk Call mom at 5pm"


def test_hard_wrapped_lines_form_one_sentence() -> None:
    text = (
        "Sorry for the long message.\nAfter a lot of back and forth we decided that the new\n"
        "dashboard will ship on Monday."
    )
    assert summarize(text) == (
        "After a lot of back and forth we decided that the new dashboard will ship on Monday."
    )
    # Short lines were ended on purpose: each is its own unit.
    assert summarize("hi\nbuy milk\ncall mom") == "buy milk call mom"


@pytest.mark.parametrize("type", ["tool_result", "system_event"])
def test_machine_text_keeps_pleasantry_like_words(type: str) -> None:
    assert summarize("OK: 3 tests passed", type) == "OK: 3 tests passed"
    assert summarize("Hello from worker-2. Cache is actually warm.", type) == (
        "Hello from worker-2. Cache is actually warm."
    )


def test_tool_output_is_line_oriented() -> None:
    text = (
        "> npm run build\n"
        'npm ERR! Missing script: "build"\n'
        "npm ERR! To see a list of scripts, run: npm run\n"
        + "npm info using npm@10.2.4 and node@v20.11.0 on linux x64\n"
        * 6
    )
    out = summarize(text, "tool_result")
    assert out.startswith('npm ERR! Missing script: "build"')
    assert out.count("npm info using") == 1  # repeated lines are kept once
    assert len(out) <= MAX_CONTENT_CHARS


def test_pleasantry_dropped_even_when_everything_fits() -> None:
    assert summarize("Please review PR #42 before Friday. Thanks!") == (
        "Please review PR #42 before Friday."
    )
    assert summarize("请帮我看一下这个 PR。谢谢！") == "请帮我看一下这个 PR。"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Basically, I think that we should never deploy on Fridays.",
            "we should never deploy on Fridays.",
        ),
        ("I actually just need the totals.", "I need the totals."),
        ("I think that is wrong.", "that is wrong."),
        ("其实我们只需要改一个文件。", "我们只需要改一个文件。"),
        ("Could you check this, thanks!", "Could you check this"),
    ],
)  # fmt: skip
def test_filler_dropped(text: str, expected: str) -> None:
    assert summarize(text) == expected


@pytest.mark.parametrize(
    ("text", "must_keep"),
    [
        ("It's not just the login page, the signup page is broken too.", "not just the login"),
        ("I need it in just 5 minutes.", "just 5 minutes"),
        ("It isn't actually deployed yet.", "isn't actually deployed"),
        ("那个文件不要删除。", "那个文件不要删除"),
        ("We never really used the old API.", "never really used"),
    ],
)
def test_filler_kept_where_dropping_is_unsafe(text: str, must_keep: str) -> None:
    assert must_keep in summarize(text)


@pytest.mark.parametrize(
    "text",
    ["Thanks so much!! 🙏", "Hi!", "ok", "谢谢", "你好！谢谢！", "👍"],
)
def test_only_pleasantries_falls_back_to_the_input(text: str) -> None:
    assert summarize(text) == " ".join(text.split())


def test_evaluative_ack_kept_for_feedback_but_dropped_in_chat() -> None:
    text = "Perfect! Can you do the same for the March report?"
    assert summarize(text) == "Can you do the same for the March report?"
    feedback = "Perfect! That is exactly the format I wanted."
    assert summarize(feedback, "user_feedback") == feedback


def test_signoff_name_dropped_but_names_kept_elsewhere() -> None:
    assert summarize("Please call Anna.\nThanks,\nBob") == "Please call Anna."
    assert summarize("Hi!\nTomorrow.\nPlease call Anna.") == "Tomorrow. Please call Anna."


# --------------------------------------------------------------------------------------
# Sentence splitting
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Version 3.5 is out. Update main.py now!", ["Version 3.5 is out.", "Update main.py now!"]),
        ("Ask Mr. Lee, e.g. via Slack. He knows.", ["Ask Mr. Lee, e.g. via Slack.", "He knows."]),
        ("See https://x.io/a.b?c=1. Then stop.", ["See https://x.io/a.b?c=1.", "Then stop."]),
        ("Wait... what? Really!", ["Wait...", "what?", "Really!"]),
        ("J. K. Rowling wrote it. Fine.", ["J. K. Rowling wrote it.", "Fine."]),
        ("1. Install deps", ["1. Install deps"]),
        ("好的。请帮我！明天见？", ["好的。", "请帮我！", "明天见？"]),
        ("先这样；再说……后来呢", ["先这样；", "再说……", "后来呢"]),
        ('He said "stop." Then left.', ['He said "stop."', "Then left."]),
        ("OK.我们开始", ["OK.", "我们开始"]),
    ],
)  # fmt: skip
def test_sentence_splitting(text: str, sentences: list[str]) -> None:
    assert [s for s, _ in _split_sentences(text)] == sentences


# --------------------------------------------------------------------------------------
# Length bound and truncation
# --------------------------------------------------------------------------------------


def test_long_sentence_cut_on_word_boundary() -> None:
    text = " ".join(f"word{i}" for i in range(100))
    out = summarize(text)
    assert len(out) <= MAX_CONTENT_CHARS
    assert len(out) >= MAX_CONTENT_CHARS - 10  # not much thrown away
    assert out.endswith("…")
    head = out[:-1]
    assert text.startswith(head)
    assert text[len(head)] == " "  # the cut falls between two words


def test_overlong_sentence_keeps_the_clause_with_the_request() -> None:
    text = (
        "So I was looking at the dashboard this morning and the numbers looked a bit off "
        "compared with last week, which is strange since nothing changed in the pipeline as "
        "far as I know and nobody touched the jobs, so could you re-run the nightly import "
        "for the EU region"
    )
    assert len(text) > MAX_CONTENT_CHARS
    out = summarize(text)
    assert "could you re-run the nightly import for the EU region" in out
    assert len(out) <= MAX_CONTENT_CHARS


def test_long_cjk_cut_on_character_boundary() -> None:
    text = "数据库迁移计划" * 50
    out = summarize(text)
    assert len(out) == MAX_CONTENT_CHARS
    assert out == text[: MAX_CONTENT_CHARS - 1] + "…"


def test_cut_never_splits_a_latin_word_inside_cjk_text() -> None:
    text = "迁移" * 97 + "Kubernetes集群" + "然后" * 20
    out = summarize(text)
    assert len(out) <= MAX_CONTENT_CHARS
    assert out == "迁移" * 97 + "…"


def test_single_huge_word_is_hard_cut() -> None:
    out = summarize("x" * 500)
    assert out == "x" * (MAX_CONTENT_CHARS - 1) + "…"


@pytest.mark.parametrize("max_chars", [1, 2, 5, 20, 50])
def test_custom_max_chars(max_chars: int) -> None:
    encoder = RuleEncoder(max_chars=max_chars)
    for text in (LONG_STORY, LONG_STORY_ZH, '{"status": "ok", "message": "done"}'):
        for type in MEMORY_TYPES:
            out = encoder.summarize(text, type=type)
            assert 1 <= len(out) <= max_chars


def test_cut_drops_dangling_punctuation() -> None:
    out = RuleEncoder(max_chars=20).summarize("alpha beta, gamma delta epsilon zeta")
    assert out == "alpha beta, gamma…"
    out = RuleEncoder(max_chars=12).summarize("alpha beta, gamma delta epsilon zeta")
    assert out == "alpha beta…"


def test_huge_input_is_fast() -> None:
    text = (LONG_STORY + "\n" + LONG_STORY_ZH + "\n") * 120  # ~100k characters
    start = time.perf_counter()
    out = summarize(text)
    assert time.perf_counter() - start < 5
    assert len(out) <= MAX_CONTENT_CHARS
    start = time.perf_counter()
    pathological_inputs = (
        "a-" * 50_000,
        "1" * 100_000,
        "!" * 50_000 + "a",
        "just " * 20_000,
        "其实" * 50_000,
        "哈" * 100_000,
        "ok cool " * 12_000,
        "[" * 100_000,
    )
    for pathological in pathological_inputs:
        assert 1 <= len(summarize(pathological)) <= MAX_CONTENT_CHARS
    assert time.perf_counter() - start < 5


def test_split_sentences_cuts_where_the_encoder_cuts():
    text = "Hi there.  How are\nyou? Version 2.5 ships today. 好的。谢谢！"
    assert split_sentences(text) == [
        "Hi there.", "How are you?", "Version 2.5 ships today.", "好的。", "谢谢！",
    ]  # fmt: skip
