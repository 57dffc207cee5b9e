"""Retrieval evaluation: shipped suites, a harness, and the retrievers it compares.

    from pymemory.evals import run_suite
    report = await run_suite("multi-turn-memory", "hybrid")

or from the command line: ``pymemory eval multi-turn-memory --retriever all``.
"""

from .harness import KS, RETRIEVERS, Metrics, QuestionResult, Report, report_rows, run_suite
from .retrievers import Bm25Retriever, DenseRetriever, HybridRetriever, Retriever
from .suites import SUITES, Question, Suite, Turn, load_suite, parse_suite

__all__ = [
    "KS",
    "RETRIEVERS",
    "SUITES",
    "Bm25Retriever",
    "DenseRetriever",
    "HybridRetriever",
    "Metrics",
    "Question",
    "QuestionResult",
    "Report",
    "Retriever",
    "Suite",
    "Turn",
    "load_suite",
    "parse_suite",
    "report_rows",
    "run_suite",
]
