"""Retrieval evaluation: shipped suites, a harness, and the retrievers it compares.

    from pymemory.evals import run_suite
    report = await run_suite("multi-turn-memory", "hybrid")

or from the command line: ``pymemory eval multi-turn-memory --retriever all``.
"""

from .harness import (
    KS,
    RETRIEVERS,
    LoadedSuite,
    Metrics,
    QuestionResult,
    Report,
    evaluate,
    load,
    report_rows,
    run_suite,
)
from .retrievers import DenseRetriever, MemoryRetriever, Retriever
from .suites import SUITES, Question, Suite, Turn, load_suite, parse_suite

__all__ = [
    "KS",
    "RETRIEVERS",
    "SUITES",
    "DenseRetriever",
    "LoadedSuite",
    "MemoryRetriever",
    "Metrics",
    "Question",
    "QuestionResult",
    "Report",
    "Retriever",
    "Suite",
    "Turn",
    "evaluate",
    "load",
    "load_suite",
    "parse_suite",
    "report_rows",
    "run_suite",
]
