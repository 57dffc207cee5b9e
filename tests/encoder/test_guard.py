"""The faithfulness guard for model summaries: table-driven cases and property tests."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pymemory.encoder import RuleEncoder
from pymemory.encoder.guard import Guard, cjk_ratio, clean_candidate, is_chinese, specifics

GUARD = Guard()
RULES = RuleEncoder()


def check(source: str, candidate: str, type: str = "message"):
    return GUARD.check(source, candidate, stage1=RULES.summarize(source, type=type))


# (source, candidate, expected reason code)
REJECTED = [
    # invented names
    (
        "That answer was wrong, the capital of Australia is Canberra.",
        "User says the capital of Australia is Sydney.",
        "unsupported_name",
    ),
    (
        "Could you draft an email saying the review meeting moved to Thursday?",
        "User wants an email to Marco saying the review meeting moved to Thursday.",
        "unsupported_name",
    ),
    # invented numbers, times, dates
    (
        "Can you book a table for four at Osteria Nonna on Saturday?",
        "User wants a table for 6 at Osteria Nonna on Saturday.",
        "unsupported_number",
    ),
    (
        "Could you draft an email to Marco saying the meeting moved to Thursday at 10?",
        "User wants an email to Marco saying the meeting moved to Thursday at 10:10.",
        "unsupported_number",
    ),
    (
        "I need to renew my passport before the flight to Toronto.",
        "User must renew the passport before June 12 for the flight to Toronto.",
        "unsupported_number",
    ),
    (
        "The meeting with the design team got cancelled, new dates will follow.",
        "The meeting with the design team on Monday got cancelled.",
        "unsupported_name",
    ),
    (
        "Please remind me to call the dentist tomorrow at 3pm.",
        "User wants a reminder to call the dentist tomorrow at 3pm.",
        "unsupported_word",
    ),
    (
        "I usually work from 7am to 3pm, so don't schedule anything after 3.",
        "User works from 7am to 5pm and wants nothing scheduled after 3.",
        "unsupported_code",
    ),
    # codes and URLs
    (
        "Deployment of web-frontend to production completed; 6/6 pods healthy.",
        "web-frontend v2.4.1 deployed to production; 6/6 pods healthy.",
        "unsupported_code",
    ),
    (
        "See the docs for the install steps.",
        "The install steps are at https://example.com/install.",
        "unsupported_url",
    ),
    (
        "Send the report to the finance team.",
        "User wants the report sent to finance@example.com.",
        "unsupported_email",
    ),
    # polarity
    (
        "I'm vegetarian and I don't eat mushrooms either.",
        "User is vegetarian and eats mushrooms.",
        "dropped_negation",
    ),
    (
        "I prefer short answers with bullet points.",
        "User does not prefer short answers with bullet points.",
        "invented_negation",
    ),
    # Chinese additions
    (
        "我觉得这个方案有点复杂，能不能简化一下？另外我需要它能在 Windows 上运行。",
        "用户要求简化方案并支持 Windows 系统",
        "unsupported_cjk",
    ),
    (
        "我下个月要去成都出差三天，想找一家离春熙路近一点的酒店。",
        "用户下个月去成都出差五天，想找春熙路附近的酒店",
        "unsupported_cjk",
    ),
    (
        "我下个月要去成都出差三天，想找一家离春熙路近一点的酒店。",
        "用户下周去成都出差三天，想找离春熙路近的酒店",
        "unsupported_time",
    ),
    (
        "测试完成：通过 58 个，失败 2 个，耗时 9.6 秒。",
        "测试通过 58 个，失败 3 个，耗时 9.6 秒",
        "unsupported_number",
    ),
    ("我不吃辣，也不吃香菜。", "用户吃辣，也不吃香菜", "dropped_negation"),
    ("以后回答请用中文，代码注释也用中文。", "用户回答注释中文代码用", "recombined_cjk"),
    # echoes and copies
    (
        "Hi team, quick update on the mobile app. The crash on Android 14 is fixed in build "
        "812, QA confirmed it this morning. The iOS login issue is still open; Ken thinks it "
        "is related to the new keychain settings. We will ship 812 to the Play Store on "
        "Wednesday if nothing else comes up.",
        "Hi team, quick update on the mobile app. The crash on Android 14 is fixed in build "
        "812, QA confirmed it this morning.",
        "echo",
    ),
    (
        "Please set up a weekly report every Monday that lists open tickets.",
        "Please set up a weekly report every Monday that lists open tickets.",
        "echo",
    ),
    # language switches
    (
        "我不太喜欢现在的配色，太亮了，能不能换成深色主题？",
        "User dislikes the bright colors.",
        "language",
    ),
    ("I prefer short answers with bullet points.", "用户偏好简短的回答", "language"),
    # chat artefacts and talk about the text
    (
        "I prefer short answers.",
        "<|im_start|>assistant\nUser prefers short answers.",
        "chat_artefact",
    ),
    ("I prefer short answers.", "User prefers short answers.<|im_end|>", "chat_artefact"),
    ("I prefer short answers with bullet points.", "The text is about short answers.", "meta"),
    ("I prefer short answers with bullet points.", "Here is a summary: short answers.", "meta"),
    ("我偏好表格形式的输出，不要大段文字。", "以上内容的核心意图：表格形式的输出", "meta"),
    # degenerate output
    ("I prefer short answers with bullet points.", "", "empty"),
    ("I prefer short answers with bullet points.", "User prefers short ans\ufffd", "malformed"),
    (
        "The new format with tables works well, please keep doing that.",
        "User says the new format is a new format.",
        "overuse",
    ),
    (
        "My name is Priya and I work as a data engineer at Northwind.",
        "User is Priya and I work as a data engineer at Northwind.",
        "mixed_person",
    ),
    ("Perfect, this is exactly what I needed!", "User says a" + " very" * 60, "too_long"),
    # worse than stage 1
    (
        "I need to renew my passport before June 12 because the flight to Toronto is on June 20.",
        "User needs to renew their passport before June 20.",
        "lost_specifics",
    ),
    (
        "I looked at the three logo options and I like the second one best, but can the blue "
        "be a bit darker?",
        "User wants it a bit darker.",
        "low_coverage",
    ),
]

ACCEPTED = [
    (
        "I think the plan is a bit complicated, could you simplify it? Also I need it to run on "
        "Windows.",
        "User wants the plan simplified and needs it to run on Windows.",
    ),
    (
        "Can you convert the Python script from yesterday so it exports CSV instead of JSON?",
        "User wants the Python script from yesterday to export CSV instead of JSON.",
    ),
    (
        "I'm vegetarian and I don't eat mushrooms either.",
        "User is vegetarian and doesn't eat mushrooms.",
    ),
    (
        "Please set up a weekly report every Monday at 8 am that lists open tickets older than "
        "14 days.",
        "User wants a weekly report every Monday at 8 am listing open tickets older than 14 days.",
    ),
    (
        "Thanks for yesterday, that was really helpful. Today I want to continue with the "
        "chapter on hash maps and then do some exercises.",
        "User wants to continue with the chapter on hash maps and then do some exercises.",
    ),
    (
        "That answer was wrong, the capital of Australia is Canberra, not Sydney.",
        "User says the capital of Australia is Canberra, not Sydney.",
    ),
    ("Summary: I prefer trains over planes.", "Summary: User prefers trains over planes."),
    (
        "请把这段英文翻译成中文，语气正式一点，专有名词保留英文。",
        "用户要求翻译成中文，语气正式，专有名词保留英文",
    ),
    (
        "其实我不太喜欢现在的配色，太亮了，能不能换成深色主题？",
        "用户不太喜欢现在的配色，想换成深色主题",
    ),
    ("我偏好表格形式的输出，尽量不要大段文字。", "用户偏好表格形式的输出，不要大段文字"),
    ("以后回答请用中文，代码注释也用中文。", "用户要求以后用中文回答，代码注释也用中文"),
    (
        "我叫李四，在杭州做前端开发，主要用 Vue 和 TypeScript。",
        "用户叫李四，在杭州做前端开发，用 Vue 和 TypeScript",
    ),
]


@pytest.mark.parametrize(("source", "candidate", "code"), REJECTED)
def test_rejected(source, candidate, code):
    verdict = check(source, candidate)
    assert not verdict.accepted
    assert code in verdict.codes, verdict.reasons


@pytest.mark.parametrize(("source", "candidate"), ACCEPTED)
def test_faithful_compressions_are_accepted(source, candidate):
    verdict = check(source, candidate)
    assert verdict.accepted, verdict.reasons
    assert verdict.reasons == ()
    assert verdict.text == clean_candidate(candidate)


def test_labels_and_quotes_are_stripped_and_only_the_first_paragraph_kept():
    assert clean_candidate('Summary: "User prefers trains."') == "User prefers trains."
    assert clean_candidate("摘要：用户偏好高铁\n\n用户偏好高铁") == "用户偏好高铁"
    verdict = check("I prefer trains over planes.", "**Summary:** User prefers trains over planes.")
    assert verdict.accepted and verdict.text == "User prefers trains over planes."


def test_copies_of_the_prompt_are_rejected():
    guard = Guard(prompt_texts=["Summarize the user's text in one short sentence."])
    source = "I prefer trains over planes for trips under six hours."
    verdict = guard.check(source, "Summarize the user's text in one short sentence.")
    assert "prompt_copy" in verdict.codes


def test_same_as_stage1_is_no_refinement():
    source = "The meeting with Dr. Alvarez got cancelled, she will send new dates next week."
    verdict = GUARD.check(source, source, stage1=source)
    assert "same_as_stage1" in verdict.codes


def test_language_detection():
    assert is_chinese("把刚才那个 Python 脚本改成支持 CSV 导出吧。")
    assert is_chinese('{"city": "北京", "weather": "多云", "temperature": 23}')
    assert not is_chinese("Can you convert the Python script?")
    assert cjk_ratio("hello world") == 0.0
    assert cjk_ratio("你好") == 1.0


def test_specifics_skip_sentence_starts_and_json_labels():
    assert specifics("Marco moved the review to Thursday at 10.") == ["10", "thursday"]
    assert "city" not in specifics("city: Beijing; temperature_c: 23")
    assert "23" in specifics("city: Beijing; temperature_c: 23")


def test_the_reference_summaries_mostly_pass():
    """Sanity: the hand-written dev references are faithful by construction for the human
    types they describe in the source's own words, so most must pass (not all: several
    paraphrase with words the source lacks, which the guard rightly refuses)."""
    import json
    from pathlib import Path

    dev = Path(__file__).resolve().parents[2] / "pymemory" / "evals" / "summaries_dev.jsonl"
    rows = [json.loads(line) for line in dev.read_text(encoding="utf-8").splitlines()]
    accepted = sum(check(r["text"], r["reference"], r["type"]).accepted for r in rows)
    assert accepted >= 0.4 * len(rows)


# --- properties ------------------------------------------------------------------------

_VOCAB = (
    "plan report budget meeting server table window script export schedule team deadline "
    "green blue fonts header project invoice train ticket office printer coffee laptop "
    "review draft backup cluster migration weekly monthly quick large small early late "
    "north south river garden kitchen dinner lunch music guitar lesson course"
)
VOCAB = _VOCAB.split()
NUMBERS = ["3", "12", "150", "2024", "7.5", "48"]


def source_words() -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(VOCAB + NUMBERS), min_size=3, max_size=25, unique=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=source_words(), data=st.data())
def test_any_subsequence_of_source_words_that_is_not_an_echo_is_accepted(words, data):
    source = " ".join(words) + "."
    keep = data.draw(st.lists(st.booleans(), min_size=len(words), max_size=len(words)))
    chosen = [w for w, k in zip(words, keep, strict=True) if k]
    assume(chosen)
    candidate = " ".join(chosen)
    letters = lambda s: sum(c.isalnum() for c in s)  # noqa: E731
    assume(len(candidate) <= 200 and letters(candidate) < 0.8 * letters(source))
    verdict = GUARD.check(source, candidate)
    assert verdict.accepted, verdict.reasons


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=source_words(), number=st.integers(0, 10**6), data=st.data())
def test_any_candidate_with_a_number_absent_from_the_source_is_rejected(words, number, data):
    source = " ".join(words) + "."
    assume(str(number) not in source.replace(".", " ").split())
    position = data.draw(st.integers(0, len(words)))
    candidate = " ".join([*words[:position], str(number), *words[position:]][:12])
    if str(number) not in candidate.split():
        candidate = f"{candidate} {number}"
    verdict = GUARD.check(source, candidate)
    assert not verdict.accepted
    assert "unsupported_number" in verdict.codes


@settings(max_examples=60, deadline=None)
@given(words=source_words(), name=st.sampled_from(["Sydney", "Marco", "Priya", "Lisbon"]))
def test_any_candidate_with_a_name_absent_from_the_source_is_rejected(words, name):
    source = " ".join(words) + "."
    verdict = GUARD.check(source, " ".join([*words[:4], "with", name]))
    assert not verdict.accepted
    assert "unsupported_name" in verdict.codes
