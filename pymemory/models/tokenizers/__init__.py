"""Pure-Python tokenizers (stdlib only) that give the same ids as the Rust ``tokenizers``
package for the tokenizer.json files this project ships (WordPiece for the embedder,
byte-level BPE for the summarizer), and a rank-based BPE for tiktoken's o200k_base.

Character classes come from the running Python's ``unicodedata`` (Unicode 14 in CPython
3.11, 15 in Pyodide 0.27); a character assigned after that version may split differently
from the Rust libraries, whose tables are newer.
"""

from .json_tokenizer import (
    AddedToken,
    Encoding,
    Padding,
    Tokenizer,
    Truncation,
    UnsupportedTokenizerError,
    load_tokenizer,
)
from .tiktoken_bpe import O200K_PAT_STR, O200K_SPECIAL_TOKENS, RankBPE, load_tiktoken_ranks

__all__ = [
    "O200K_PAT_STR",
    "O200K_SPECIAL_TOKENS",
    "AddedToken",
    "Encoding",
    "Padding",
    "RankBPE",
    "Tokenizer",
    "Truncation",
    "UnsupportedTokenizerError",
    "load_tiktoken_ranks",
    "load_tokenizer",
]
