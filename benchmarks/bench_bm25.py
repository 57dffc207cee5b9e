"""BM25 throughput: pymemory.retrieval.bm25.Bm25Index against bm25s and rank_bm25.

Usage::

    python benchmarks/bench_bm25.py [--sizes 10000 100000] [--queries 1000] [--json out.json]

The corpus is synthetic and deterministic (``--seed``): agent-memory-like sentences of
10-40 words drawn from a Zipf distribution over an English vocabulary (real function
words at the top, so the analyzer's stopword removal has work to do, then everyday and
technical words, then made-up words: about 6000 in all), and about 20% Chinese sentences
drawn the same way from a vocabulary of two-character words. Queries are 2-6 words drawn
in the same way (again ~20% Chinese); a query that analyses to nothing is drawn again.

Everything is tokenised once with :func:`pymemory.retrieval.analyzer.analyze`; the three engines
receive the same token lists:

* ``pymemory``: ``Bm25Index`` filled with one ``add`` per document, queried with
  ``top_k(terms, 10)``;
* ``bm25s``: ``bm25s.BM25(method="lucene")`` (the same scoring as ours), indexed from the
  token lists, queried one query at a time through ``retrieve([terms], k=10)`` and,
  as a second row, through the lower level ``get_scores`` + ``bm25s.selection.topk``;
* ``rank_bm25``: ``BM25Okapi`` (different idf; same work), ``get_scores`` then
  ``np.argpartition``. It loops over every document in Python for each query term, so
  on corpora above ``--rank-bm25-full-limit`` documents it runs only
  ``--rank-bm25-queries`` queries.

Queries run one at a time, as an agent issues them. For pymemory also measured: add
latency per document (appending a new slot; re-adding into a freed slot), remove
latency per document, and query throughput right after an update (every query follows a
replace, so no cached per-term weights survive: the worst case for its cache).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

try:
    from pymemory.retrieval.analyzer import analyze
    from pymemory.retrieval.bm25 import Bm25Index
except ModuleNotFoundError:  # run from a checkout without installing: use the checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from pymemory.retrieval.analyzer import analyze
    from pymemory.retrieval.bm25 import Bm25Index

K = 10


def split_words(text: str) -> list[str]:
    return text.split()


# Real English function words, roughly in corpus frequency order: the Zipf head.
FUNCTION_WORDS = split_words(
    "the of and to a in is that for it with as was on be at by this have from or an are "
    "but not they which you we he she his her their has had were been will would can "
    "could there what when who about into than then them its our my your me i us if so "
    "do does did just also very"
)

CONTENT_WORDS = split_words(
    "user prefers project meeting python script memory file data notes email calendar "
    "task deadline report team manager client server database query index search vector "
    "model agent tool function error bug fix release version deploy build test config "
    "setting preference language english chinese japanese coffee tea lunch dinner travel "
    "flight hotel booking ticket price budget invoice payment account password login "
    "browser extension chrome firefox linux windows macos android iphone laptop monitor "
    "keyboard mouse printer network wifi router backup cloud storage folder document "
    "spreadsheet slide presentation summary draft review feedback comment issue ticket "
    "sprint roadmap goal plan schedule reminder alarm morning evening weekend monday "
    "tuesday wednesday thursday friday saturday sunday january february march april may "
    "june july august september october november december birthday anniversary family "
    "wife husband daughter son mother father friend colleague neighbor doctor dentist "
    "appointment medicine allergy gym running cycling swimming yoga music podcast book "
    "movie series game recipe kitchen garden dog cat car bike train bus airport city "
    "home office remote hybrid address phone number contact name nickname timezone "
    "currency dollar euro yuan paper article blog website link url api key token limit "
    "quota usage cost latency throughput memory cpu gpu disk ssd repository branch commit "
    "merge pull request pipeline docker kubernetes container image cluster node pod "
    "service endpoint request response json yaml csv markdown html css javascript "
    "typescript rust golang java kotlin swift sql postgres sqlite redis kafka spark "
    "pandas numpy notebook jupyter vscode vim emacs terminal shell bash zsh git github "
    "gitlab jira slack zoom teams discord telegram whatsapp wechat likes dislikes "
    "favourite favorite always never usually sometimes often rarely quickly slowly "
    "important urgent optional blocked done pending started finished cancelled moved "
    "renamed deleted created updated shared private public secret encrypted local "
    "offline online sync conflict merge duplicate archive export import upload download"
)

CJK_FUNCTION_WORDS = list("的了是在和我他她这那有也都就不")
CJK_CHARS = (
    "会议纪要项目用户喜欢咖啡茶午餐晚餐旅行航班酒店预订价格预算发票付款账户密码登录浏览器扩展"
    "网络备份文件夹文档表格演示总结草稿评论问题计划日程提醒早上晚上周末星期一二三四五六日"
    "月年家庭妻子丈夫女儿儿子母亲父亲朋友同事邻居医生预约药物过敏健身跑步游泳瑜伽音乐书电影"
    "游戏食谱厨房花园狗猫汽车自行车火车公交机场城市办公室远程地址电话号码联系名字时区货币美元"
    "欧元人民币论文文章博客网站链接接口密钥令牌限制配额成本延迟内存硬盘仓库分支提交合并请求流水"
    "线容器镜像集群节点服务端点响应数据模型代理工具函数错误修复发布版本部署构建测试配置设置偏好"
    "语言中文英文日文重要紧急可选完成进行开始结束取消移动删除创建更新共享私有公开加密本地离线在"
    "线同步冲突重复归档导出导入上传下载"
)


def pseudo_words(n: int, rng: np.random.Generator) -> list[str]:
    onsets = split_words("b c d f g h j k l m n p r s t v w z br cl dr fl gr pl st tr ch sh th")
    vowels = split_words("a e i o u ai ea io ou")
    codas = ["", "", "n", "r", "l", "m", "x", "nd", "rt"]
    words: list[str] = []
    seen = set(FUNCTION_WORDS) | set(CONTENT_WORDS)
    while len(words) < n:
        syllables = int(rng.integers(2, 4))
        word = (
            "".join(
                onsets[rng.integers(len(onsets))] + vowels[rng.integers(len(vowels))]
                for _ in range(syllables)
            )
            + codas[rng.integers(len(codas))]
        )
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def cjk_words(n: int, rng: np.random.Generator) -> list[str]:
    chars = sorted(set(CJK_CHARS))
    words = list(CJK_FUNCTION_WORDS)
    seen = set(words)
    while len(words) < n:
        word = chars[rng.integers(len(chars))] + chars[rng.integers(len(chars))]
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class ZipfSampler:
    def __init__(self, vocab: list[str], exponent: float, rng: np.random.Generator) -> None:
        self.vocab = vocab
        weights = 1.0 / np.arange(1, len(vocab) + 1) ** exponent
        self.cdf = np.cumsum(weights) / weights.sum()
        self.rng = rng

    def words(self, n: int) -> list[str]:
        idx = np.searchsorted(self.cdf, self.rng.random(n), side="right")
        idx = np.minimum(idx, len(self.vocab) - 1)
        return [self.vocab[i] for i in idx]


class TextGen:
    def __init__(self, seed: int, vocab_size: int = 6000, cjk_vocab_size: int = 3000) -> None:
        self.rng = np.random.default_rng(seed)
        words = list(dict.fromkeys(FUNCTION_WORDS + CONTENT_WORDS))
        words += pseudo_words(vocab_size - len(words), self.rng)
        self.english = ZipfSampler(words, 1.0, self.rng)
        self.chinese = ZipfSampler(cjk_words(cjk_vocab_size, self.rng), 1.0, self.rng)

    def sentence(self, lo: int, hi: int) -> str:
        n = int(self.rng.integers(lo, hi + 1))
        if self.rng.random() < 0.2:
            words = self.chinese.words(n)
            cut = int(self.rng.integers(1, n)) if n > 2 else n
            return "".join(words[:cut]) + "，" + "".join(words[cut:]) + "。"
        words = self.english.words(n)
        if self.rng.random() < 0.3:  # the odd number, version or date
            words.insert(
                int(self.rng.integers(len(words))),
                str(self.rng.choice(["3.5", "2024", "v1.2", "10", "42", "python3"])),
            )
        return words[0].capitalize() + " " + " ".join(words[1:]) + "."


def make_corpus(n_docs: int, n_queries: int, seed: int) -> tuple[list[str], list[str]]:
    gen = TextGen(seed)
    docs = [gen.sentence(10, 40) for _ in range(n_docs)]
    queries: list[str] = []
    while len(queries) < n_queries:
        q = gen.sentence(2, 6)
        if analyze(q):
            queries.append(q)
    return docs, queries


# --------------------------------------------------------------------------- engines


def timed(fn, *args):
    gc.collect()
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def query_rate(run_one, queries: list[list[str]]) -> tuple[float, list]:
    """Queries per second of ``run_one`` over ``queries`` (one call each)."""
    gc.collect()
    results = []
    t0 = time.perf_counter()
    for q in queries:
        results.append(run_one(q))
    elapsed = time.perf_counter() - t0
    return len(queries) / elapsed, results


def bench_ours(docs: list[list[str]], queries: list[list[str]], updates: int, seed: int):
    def build():
        index = Bm25Index(k1=1.2, b=0.75)
        for slot, terms in enumerate(docs):
            index.add(slot, terms)
        return index

    build_s, index = timed(build)
    warm = queries[-5:]
    for q in warm:
        index.top_k(q, K)
    qps, results = query_rate(lambda q: [s for s, _ in index.top_k(q, K)], queries)

    rng = np.random.default_rng(seed + 1)
    victims = rng.choice(len(docs), size=min(updates, len(docs)), replace=False).tolist()
    gc.collect()
    t0 = time.perf_counter()
    for slot in victims:
        index.remove(slot)
    remove_us = (time.perf_counter() - t0) / len(victims) * 1e6
    t0 = time.perf_counter()
    for slot in victims:
        index.add(slot, docs[slot])
    readd_us = (time.perf_counter() - t0) / len(victims) * 1e6

    # Queries that each follow an update: no cached weights survive.
    n_cold = min(len(queries), updates)
    total = 0.0
    for q, slot in zip(queries[:n_cold], victims * (n_cold // len(victims) + 1), strict=False):
        index.add(slot, docs[slot])  # replace (remove + add): invalidates the cache
        t0 = time.perf_counter()
        index.top_k(q, K)
        total += time.perf_counter() - t0
    cold_qps = n_cold / total
    return {
        "build_s": build_s,
        "qps": qps,
        "n_queries": len(queries),
        "add_us": build_s / len(docs) * 1e6,
        "readd_us": readd_us,
        "remove_us": remove_us,
        "qps_after_update": cold_qps,
    }, (index, results)


def bench_bm25s(docs: list[list[str]], queries: list[list[str]]):
    import bm25s
    import bm25s.selection

    def build():
        retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
        retriever.index(docs, show_progress=False)
        return retriever

    build_s, retriever = timed(build)
    for q in queries[-5:]:
        retriever.retrieve([q], k=K, show_progress=False)

    def via_retrieve(q):
        res = retriever.retrieve([q], k=K, show_progress=False)
        return res.documents[0][res.scores[0] > 0].tolist()  # it pads with score-0 docs

    def via_scores(q):
        scores = retriever.get_scores(q)
        return bm25s.selection.topk(scores, K, backend="numpy", sorted=True)[1].tolist()

    qps, results = query_rate(via_retrieve, queries)
    qps_low, _ = query_rate(via_scores, queries)
    return {"build_s": build_s, "qps": qps, "qps_get_scores": qps_low}, results


def bench_rank_bm25(docs: list[list[str]], queries: list[list[str]]):
    from rank_bm25 import BM25Okapi

    build_s, model = timed(BM25Okapi, docs)

    def run_one(q):
        scores = model.get_scores(q)
        top = np.argpartition(-scores, K)[:K]
        return top[np.argsort(-scores[top], kind="stable")].tolist()

    qps, _ = query_rate(run_one, queries)
    return {"build_s": build_s, "qps": qps, "n_queries": len(queries)}


def top10_agreement(
    index: Bm25Index, queries: list[list[str]], ours: list[list[int]], theirs: list[list[int]]
) -> tuple[float, float]:
    """(mean overlap of the top-10 sets, share of queries whose top-10 agree up to ties).

    Equal BM25 scores are common (same term counts, same length) and each engine breaks
    ties its own way (bm25s also rounds to float32), so sets can differ at the cut. A
    query agrees if every document in the other engine's top-10 that is missing from
    ours scores, by our exact scores, within 1e-5 (relative) of our 10th score.
    """
    overlaps = []
    agree = 0
    for q, a, b in zip(queries, ours, theirs, strict=False):
        overlaps.append(len(set(a) & set(b)) / max(len(a), 1))
        missing = set(b) - set(a)
        if not missing:
            agree += 1
            continue
        slots, scores = index.scores(q)
        by_slot = dict(zip(slots.tolist(), scores.tolist(), strict=True))
        kth = by_slot[a[-1]] if a else 0.0
        agree += bool(a) and all(abs(by_slot.get(s, 0.0) - kth) <= 1e-5 * kth for s in missing)
    n = max(len(overlaps), 1)
    return float(np.mean(overlaps)), agree / n


# --------------------------------------------------------------------------- report


def machine_info() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "unknown"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f"{int(line.split()[1]) / 1024**2:.1f} GiB"
                break
    except OSError:
        pass
    versions = {"python": platform.python_version(), "numpy": np.__version__}
    for name in ("bm25s", "rank_bm25"):
        try:
            from importlib.metadata import version

            versions[name] = version(name.replace("_", "-"))
        except Exception:
            versions[name] = "not installed"
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram": ram,
        "date": dt.date.today().isoformat(),
        "versions": versions,
    }


def markdown_table(rows: list[dict]) -> str:
    head = (
        "| docs | engine | build (s) | queries/s (top-10) | queries timed | "
        "add µs/doc | re-add µs/doc | remove µs/doc |"
    )
    lines = [head, "|" + "---|" * 8]
    for r in rows:

        def us(key, r=r):
            return f"{r[key]:.1f}" if key in r else "-"

        lines.append(
            f"| {r['docs']:,} | {r['engine']} | {r['build_s']:.2f} | {r['qps']:,.0f} | "
            f"{r['n_queries']:,} | {us('add_us')} | {us('readd_us')} | {us('remove_us')} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--updates", type=int, default=1000, help="docs removed/re-added")
    parser.add_argument("--rank-bm25-full-limit", type=int, default=20_000)
    parser.add_argument("--rank-bm25-queries", type=int, default=50)
    parser.add_argument("--engines", nargs="+", default=["pymemory", "bm25s", "rank_bm25"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    info = machine_info()
    print(
        f"# {info['date']}  nproc={info['nproc']}  cpu={info['cpu']}  ram={info['ram']}  "
        + "  ".join(f"{k}={v}" for k, v in info["versions"].items()),
        flush=True,
    )
    rows: list[dict] = []
    for size in args.sizes:
        t0 = time.perf_counter()
        texts, query_texts = make_corpus(size, args.queries, args.seed)
        docs = [analyze(t) for t in texts]
        queries = [analyze(q) for q in query_texts]
        n_terms = sum(map(len, docs))
        print(
            f"# {size:,} docs, {n_terms / size:.1f} terms/doc, {args.queries} queries "
            f"({np.mean([len(q) for q in queries]):.1f} terms/query); generated and "
            f"analysed in {time.perf_counter() - t0:.1f} s",
            flush=True,
        )
        ours = None
        if "pymemory" in args.engines:
            stats, ours = bench_ours(docs, queries, args.updates, args.seed)
            rows.append({"docs": size, "engine": "pymemory Bm25Index.top_k", **stats})
            rows.append(
                {
                    "docs": size,
                    "engine": "pymemory, each query right after an update",
                    "build_s": stats["build_s"],
                    "qps": stats["qps_after_update"],
                    "n_queries": min(len(queries), args.updates),
                }
            )
        if "bm25s" in args.engines:
            stats, results = bench_bm25s(docs, queries)
            if ours is not None:
                index, ours_results = ours
                overlap, agree = top10_agreement(index, queries, ours_results, results)
                stats["top10_overlap"] = overlap
                stats["top10_agree_up_to_ties"] = agree
                print(
                    f"#   bm25s vs pymemory: mean top-10 overlap {overlap:.3f}; top-10 equal "
                    f"up to tied scores for {agree:.1%} of queries",
                    flush=True,
                )
            rows.append(
                {"docs": size, "engine": "bm25s retrieve", "n_queries": len(queries), **stats}
            )
            rows.append(
                {
                    "docs": size,
                    "engine": "bm25s get_scores + topk",
                    "n_queries": len(queries),
                    "build_s": stats["build_s"],
                    "qps": stats["qps_get_scores"],
                }
            )
        if "rank_bm25" in args.engines:
            n = len(queries) if size <= args.rank_bm25_full_limit else args.rank_bm25_queries
            stats = bench_rank_bm25(docs, queries[:n])
            rows.append({"docs": size, "engine": "rank_bm25 BM25Okapi", **stats})
        print(markdown_table([r for r in rows if r["docs"] == size]), flush=True)

    print()
    print(markdown_table(rows))
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
