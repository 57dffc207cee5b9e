"""A deterministic corpus of varied strings for tokenizer parity tests.

``corpus()`` returns the same list on every run and every Python: it uses only a seeded
``random.Random`` and code points assigned by Unicode 14 (so every Unicode table in play,
Python's, Rust's and the browser's, knows them).
"""

from __future__ import annotations

import functools
import random

_ENGLISH = (
    "the memory agent keeps a short summary of every message and tool result so that the "
    "next prompt can recall what the user said about their project deadline budget and "
    "preferences without sending anything to a server because privacy matters offline "
    "retrieval ranks candidates by relevance recency and feedback then trims them to fit "
    "within the token budget of the model I'm you're we've they'll she'd it's don't can't "
    "won't isn't O'Neill rock'n'roll state-of-the-art e-mail re-index co-operate well-known "
    "naïve café résumé façade coöperate Zürich Ångström Straße Œuvre Ærø"
)
ENGLISH_WORDS = tuple(_ENGLISH.split())
CAPS = ("HELLO", "World", "IPhone", "McDonald's", "NASA", "JavaScript", "XMLHttpRequest",
        "I'M", "YOU'RE", "WE'VE", "IT'S", "DON'T", "THEY'LL", "SHE'D")  # fmt: skip
PUNCT = list(".,;:!?…—–-()[]{}<>\"'`«»“”‘’/\\|@#$%^&*_+=~")

CHINESE = (
    "我们明天下午三点在会议室讨论项目进度。", "请记住我喜欢喝不加糖的绿茶。",
    "这个模型在浏览器里离线运行，不会上传任何数据。", "北京的天气今天很好，适合散步。",
    "用户反馈说搜索结果不够准确，需要改进排序。", "中华人民共和国成立于一九四九年。",
    "機器學習與自然語言處理", "你好，世界！这是一个测试。",
)  # fmt: skip
JAPANESE = (
    "私の名前は田中です。東京に住んでいます。", "明日の会議は午後三時からです。",
    "このアプリはブラウザの中で動きます。", "カタカナとひらがなと漢字を混ぜた文章。",
    "ｶﾀｶﾅの半角文字もテストします。", "ゲームをダウンロードしてください！",
    "日本語のテキストとカタカナ ー 長音記号",
)  # fmt: skip
KOREAN = (
    "안녕하세요, 저는 개발자입니다.", "내일 오후 세 시에 회의가 있습니다.",
    "이 메모리는 오프라인으로 작동합니다.", "한국어 텍스트입니다", "사용자의 선호도를 기억해 주세요.",
)  # fmt: skip
OTHER_SCRIPTS = (
    "Привет, как дела? Это тест.", "Россия и Українa", "Ελληνικά: ΟΔΟΣ, οδός, Σίσυφος",
    "مرحبا بالعالم، هذا اختبار.", "שלום עולם, זה מבחן.", "नमस्ते दुनिया, यह एक परीक्षण है।",
    "สวัสดีครับ นี่คือการทดสอบ", "Xin chào, tôi là người Việt Nam. Tiếng Việt có dấu.",
    "Türkçe: İstanbul, ılık, IŞIK", "Ελληνικά ΣΑΣ ΟΔΟΣ", "ქართული ენა", "Հայերեն լեզու",
    "தமிழ் மொழி", "ಕನ್ನಡ ಭಾಷೆ", "ລາວ", "ພາສາລາວ", "ᎣᏏᏲ", "ⴰⵣⵓⵍ", "𐌰𐌱𐌲 gothic",
)  # fmt: skip
EMOJI = (
    "😀", "😂", "🥰", "👍", "👍🏻", "👍🏽", "👍🏿", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🏴‍☠️",
    "🇺🇸", "🇯🇵", "🇩🇪", "1️⃣", "#️⃣", "❤️", "❤", "✨", "🔥", "🧑🏾‍🚀", "👩🏼‍❤️‍💋‍👨🏻",
    "🫠", "🪴", "🤌🏼", "☕", "©️", "™", "🎉🎉🎉", "🏃‍♀️", "🧘🏽‍♂️",
)  # fmt: skip
CODE = (
    "def add(a, b):\n    return a + b\n",
    "for (let i = 0; i < n; i++) {\n\tconsole.log(`item ${i}`);\n}",
    'const x = {"key": [1, 2.5, -3e10, null, true]};',
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC LIMIT 10;",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }",
    "if __name__ == '__main__':\r\n    main()\r\n",
    "x = [i**2 for i in range(10) if i % 2 == 0]  # squares",
    "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
    "$ git commit -m 'fix: handle CRLF' && npm run build 2>&1 | tee log.txt",
    "<div class=\"card\" data-id='7'>&nbsp;&lt;b&gt;</div>",
    "    indented\n        more\n\t\ttabbed\n",
    "a=>b; a!==b; a??b; a?.b; a**=2; a>>>=1; <=> ::",
    "@decorator\nclass Foo(Bar, metaclass=Meta):\n    __slots__ = ('x',)\n",
    "matrix[i][j] += alpha * A[i][k] * B[k][j];",
    "{\"name\":\"pymemory\",\"version\":\"0.1.0\",\"tags\":[\"ai\",\"memory\"]}",
)  # fmt: skip
URLS = (
    "https://example.com/path/to/page?query=1&lang=en#section-2",
    "http://localhost:8000/api/v1/items/42?expand=true",
    "mailto:someone@example.org", "ftp://files.example.net/pub/file-1.2.3.tar.gz",
    "www.wikipedia.org/wiki/Byte_pair_encoding", "user.name+tag@sub.domain.co.uk",
    "/home/user/.config/pymemory/settings.json", "C:\\Users\\Admin\\Documents\\report.docx",
    "https://例え.jp/パス?q=日本", "git@github.com:org/repo.git",
)  # fmt: skip
NUMBERS = (
    "0", "7", "42", "123", "1234", "12345", "1234567890", "3.14159", "-0.001", "1e-10",
    "6.022e23", "1,000,000", "1.000.000,50", "$19.99", "€5", "¥1000", "50%", "2024-01-15",
    "12:30:45", "+1 (555) 123-4567", "0xDEADBEEF", "0b101010", "v1.2.3-rc.1", "1/2", "½ ¾",
    "٣٤٥", "१२३", "０１２３", "Ⅻ", "①②③", "²³", "1st 2nd 3rd 4th", "3.0.0", "10^9",
)  # fmt: skip
WHITESPACE = (
    " ", "  ", "\t", "\n", "\r\n", "\n\n\n", " \n ", "\u00a0", "\u3000", "\u2009", "\u200b",
    "\u200c", "\u200d", "\ufeff", "\u2028", "\u2029", "\u000b", "\u000c", "\u0085", "\u1680",
    "\u202f", "\u205f", " \t \t ", "\r", "\r\r\n",
)  # fmt: skip
COMBINING = (
    "e\u0301", "a\u0308", "n\u0303", "o\u0302\u0323", "Z\u0351\u036b\u0343\u036a\u0302\u036b",
    "ệ", "ễ", "ǖ", "Å", "A\u030a", "ﬁ", "ﬀ", "Ⅸ", "ẞ", "ß", "İ", "ı", "ǅ", "ﬃ", "K",
    "Ω", "µ", "ſ", "'ſ", "᾿", "ᾼ", "\u0345", "q\u0307\u0323", "स्\u200dत", "é\u0301\u0301",
)  # fmt: skip
CONTROL = tuple(chr(c) for c in (*range(0x00, 0x09), 0x0E, 0x10, 0x13, 0x14, 0x16, 0x1B, 0x1D,
                                 0x1F, 0x7F, 0x80, 0x9F, 0xAD, 0xFFFD, 0xFFFC, 0x061C, 0x2060))  # fmt: skip
SPECIAL_TEXT = (
    "[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]", "<|endoftext|>", "<|im_start|>",
    "<|im_end|>", "<repo_name>", "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
    "<|endofprompt|>", "[cls]", "<|im_start", "<<|im_end|>>", "[CLS][SEP]",
)  # fmt: skip
CONTRACTIONS = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'LL",
                "'D", "'M", "’s", "'", "''", "'x")  # fmt: skip

# Blocks fully assigned by Unicode 14 (no gaps), for random characters.
BLOCKS = (
    (0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x377), (0x386, 0x38A), (0x391, 0x3A1),
    (0x3A3, 0x3FF), (0x400, 0x52F), (0x5D0, 0x5EA), (0x620, 0x64A), (0x660, 0x669),
    (0x900, 0x97F), (0xE01, 0xE3A), (0x10A0, 0x10C5), (0x1100, 0x11FF), (0x1E00, 0x1FFF - 0x100),
    (0x2010, 0x2027), (0x2030, 0x205E), (0x20A0, 0x20C0), (0x2100, 0x218B), (0x2190, 0x23FF),
    (0x2460, 0x24FF), (0x2500, 0x27FF), (0x2E80, 0x2E99), (0x3000, 0x303F), (0x3041, 0x3096),
    (0x30A0, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xF900, 0xFA6D),
    (0xFF01, 0xFFBE), (0x1D400, 0x1D454), (0x1F300, 0x1F64F), (0x1F680, 0x1F6D7),
    (0x1F900, 0x1F9FF), (0x20000, 0x2A6DF), (0xE000, 0xE0FF), (0x0300, 0x036F),
)  # fmt: skip


def _english(rng: random.Random, n: int) -> str:
    words = [rng.choice(ENGLISH_WORDS) for _ in range(n)]
    for i in range(len(words)):
        r = rng.random()
        if r < 0.08:
            words[i] = words[i].capitalize()
        elif r < 0.11:
            words[i] = rng.choice(CAPS)
        elif r < 0.16:
            words[i] += rng.choice(PUNCT)
        elif r < 0.19:
            words[i] += rng.choice(CONTRACTIONS)
    text = " ".join(words)
    return text[:1].upper() + text[1:] + rng.choice((".", "!", "?", "", "..."))


def _random_chars(rng: random.Random, n: int) -> str:
    out = []
    for _ in range(n):
        a, b = rng.choice(BLOCKS)
        out.append(chr(rng.randint(a, b)))
    return "".join(out)


def _mix(rng: random.Random) -> str:
    pools = (ENGLISH_WORDS, CHINESE, JAPANESE, KOREAN, OTHER_SCRIPTS, EMOJI, CODE, URLS,
             NUMBERS, WHITESPACE, COMBINING, CONTROL, SPECIAL_TEXT, CONTRACTIONS, PUNCT, CAPS)  # fmt: skip
    parts = []
    for _ in range(rng.randint(2, 12)):
        pool = rng.choice(pools)
        parts.append(rng.choice(pool))
        parts.append(rng.choice(("", " ", " ", "  ", "\n", "\t", "", "-", "'")))
    return "".join(parts)


@functools.cache
def corpus_by_kind() -> dict[str, tuple[str, ...]]:
    """The corpus in named groups ("english", "cjk", "code", ... "long")."""
    rng = random.Random(20240604)
    kinds: dict[str, list[str]] = {
        "basic": ["", " ", "a", "A", "0", ".", "\n", "\x00", "Hello, world!"],
        "cjk": [*CHINESE, *JAPANESE, *KOREAN],
        "scripts": list(OTHER_SCRIPTS),
        "emoji": list(EMOJI),
        "code": list(CODE),
        "urls": list(URLS),
        "numbers": list(NUMBERS),
        "whitespace": list(WHITESPACE),
        "combining": list(COMBINING),
        "control": list(CONTROL),
        "special": list(SPECIAL_TEXT),
        "contractions": [*CONTRACTIONS, *CAPS],
        "english": [],
        "mixed": [],
        "random": [],
    }
    add = kinds.__getitem__
    for _ in range(500):
        add("english").append(_english(rng, rng.randint(1, 40)))
    for _ in range(150):
        add("cjk").append(
            "".join(rng.choice(CHINESE + JAPANESE + KOREAN) for _ in range(rng.randint(1, 4)))
        )
    for _ in range(150):
        add("emoji").append(
            " ".join(
                rng.choice(EMOJI) + rng.choice(("", "!", " ok", "x"))
                for _ in range(rng.randint(1, 6))
            )
        )
    for _ in range(150):
        add("code").append(
            rng.choice(CODE) + rng.choice(("", "\n", "\r\n", "  ")) + rng.choice(CODE)
        )
    for _ in range(100):
        ref = rng.randint(0, 10 ** rng.randint(1, 12))
        add("urls").append(f"See {rng.choice(URLS)} or {rng.choice(URLS)}, ref #{ref}.")
    for _ in range(150):
        add("numbers").append(" ".join(rng.choice(NUMBERS) for _ in range(rng.randint(1, 8))))
        add("numbers").append(
            str(rng.randint(0, 10 ** rng.randint(1, 30)))
            + rng.choice(("", "px", " kg", "th", "abc"))
        )
    for _ in range(150):
        w = rng.choice(WHITESPACE)
        add("whitespace").append(
            w.join(rng.choice(ENGLISH_WORDS) for _ in range(rng.randint(1, 6)))
            + w * rng.randint(0, 3)
        )
    for _ in range(100):
        add("combining").append(
            "".join(
                rng.choice(COMBINING) + rng.choice(("", " ", "x")) for _ in range(rng.randint(1, 6))
            )
        )
    for _ in range(100):
        add("control").append(
            rng.choice(CONTROL).join(rng.choice(ENGLISH_WORDS) for _ in range(rng.randint(2, 5)))
        )
    for _ in range(100):
        add("special").append(_english(rng, 3) + rng.choice(SPECIAL_TEXT) + _english(rng, 3))
    for _ in range(300):
        add("mixed").append(_mix(rng))
    for _ in range(300):
        add("random").append(_random_chars(rng, rng.randint(1, 60)))
    kinds["long"] = _long(rng)
    return {kind: tuple(items) for kind, items in kinds.items()}


@functools.cache
def corpus() -> tuple[str, ...]:
    """About 2,700 strings, the same on every call and every run."""
    return tuple(s for items in corpus_by_kind().values() for s in items)


def _long(rng: random.Random) -> list[str]:
    """Inputs of 10,000+ characters."""
    return [
        " ".join(_english(rng, 30) for _ in range(80)),
        "a" * 12_000,
        "ab" * 6_000,
        "Supercalifragilistic" * 600,
        "7" * 10_500,
        "1234567890" * 1_100,
        " " * 10_001,
        "\n" * 10_001,
        " \t" * 5_001,
        "".join(rng.choice(CHINESE) for _ in range(600)),
        "".join(rng.choice(EMOJI) for _ in range(3_000)),
        "https://example.com/" + "a/b-c_d.e?" * 1_100,
        "".join(rng.choice(CODE) for _ in range(300)),
        "=" * 10_500,
        "é" * 10_500,
        "e\u0301" * 5_500,
        _random_chars(rng, 11_000),
        "".join(_mix(rng) for _ in range(300)),
    ]


if __name__ == "__main__":
    c = corpus()
    print(
        len(c),
        "strings,",
        sum(map(len, c)),
        "characters,",
        sum(len(s) >= 10_000 for s in c),
        "long",
    )
