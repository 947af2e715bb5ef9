"""The prompt the model contextualizer sends, and what it costs. Standard library only.

Bump PROMPT_VERSION whenever the wording changes: it is part of the cache key, so contexts written
for another prompt are never mixed with these.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..output import counted

PROMPT_VERSION = 1
MAX_OUTPUT_TOKENS = 200
EXPECTED_OUTPUT_TOKENS = 110  # 2-3 sentences and a line of terms
CHARS_PER_TOKEN = 3.0  # code in the Claude 4.7+ tokenizer; a deliberately high token count

SYSTEM = (
    "You help a code search engine. You are shown a whole source file, then one chunk of it. "
    "Write the context a developer would need to find that chunk with a search query."
)

FILE_BLOCK = "<file path=\"{path}\">\n{text}\n</file>"

CHUNK_BLOCK = (
    "Here is the chunk, lines {start}-{end} of {path}:\n<chunk>\n{chunk}\n</chunk>\n"
    "In 2-3 sentences, situate this chunk within the file: what it does, what it belongs to "
    "(class, function, module purpose) and how it is used. Then one line starting with 'Terms:' "
    "listing 5-10 search terms a developer might type to find it (concepts, synonyms, identifiers). "
    "Answer with only that text."
)


def file_block(path: str, text: str) -> str:
    return FILE_BLOCK.format(path=path, text=text)


def chunk_block(path: str, start: int, end: int, chunk: str) -> str:
    return CHUNK_BLOCK.format(path=path, start=start, end=end, chunk=chunk)


def tokens(text_or_chars) -> int:
    n = text_or_chars if isinstance(text_or_chars, int) else len(text_or_chars)
    return math.ceil(n / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Prices:
    """US dollars per million tokens."""

    input: float
    output: float
    cache_write: float  # 5-minute cache write
    cache_read: float
    cache_min_tokens: int = 4096  # below this a prefix is not cached: every request pays full input


# Published list prices for prompts up to 100,000 tokens (files larger than that are not sent by
# default). Unknown models are estimated at the most expensive row, so the guard errs high.
PRICES = {
    "claude-haiku-5-5": Prices(0.10, 0.50, 0.125, 0.01),
    "claude-haiku-4-5": Prices(1.00, 5.00, 1.25, 0.10),
    "claude-sonnet-5-5": Prices(2.00, 10.00, 2.50, 0.10),
    "claude-opus-5-5": Prices(4.00, 20.00, 5.00, 0.40),
}
FALLBACK_PRICES = Prices(10.00, 50.00, 12.50, 1.00)


def prices(model: str) -> tuple[Prices, bool]:
    """(prices, known) for a model id; dated ids (`claude-haiku-4-5-20251001`) price as their alias."""
    for name, row in PRICES.items():
        if model == name or model.startswith(name + "-"):
            return row, True
    return FALLBACK_PRICES, False


@dataclass
class Estimate:
    files: int = 0
    chunks: int = 0
    input_tokens: int = 0  # uncached input
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    dollars: float = 0.0

    def add_file(self, path: str, text: str, chunks, row: Prices) -> None:
        """Add one file's requests: its prefix written to the cache by the first and read by the
        others (or paid in full by each when too short to cache), plus each chunk's own prompt."""
        if not chunks:
            return
        prefix = tokens(len(SYSTEM) + len(file_block(path, "")) + len(text))
        own = sum(tokens(chunk_block(path, c.start_line, c.end_line, c.text)) for c in chunks)
        n = len(chunks)
        self.files += 1
        self.chunks += n
        if prefix >= row.cache_min_tokens:
            write, read, full = prefix, prefix * (n - 1), own
        else:
            write, read, full = 0, 0, own + prefix * n
        self.cache_write_tokens += write
        self.cache_read_tokens += read
        self.input_tokens += full
        self.output_tokens += EXPECTED_OUTPUT_TOKENS * n
        self.dollars += (write * row.cache_write + read * row.cache_read + full * row.input
                         + EXPECTED_OUTPUT_TOKENS * n * row.output) / 1e6

    def describe(self, model: str) -> str:
        row, known = prices(model)
        total_in = self.input_tokens + self.cache_write_tokens + self.cache_read_tokens
        note = "" if known else f" (unknown model: priced at ${row.input}/${row.output} per MTok to err high)"
        return (
            f"{counted(self.files, 'file')}, {counted(self.chunks, 'chunk')} to contextualize with {model}: "
            f"~{total_in:,} input tokens "
            f"({self.cache_read_tokens:,} cache reads, {self.cache_write_tokens:,} cache writes), "
            f"~{self.output_tokens:,} output tokens, estimated {dollars(self.dollars)}{note}"
        )


def dollars(amount: float) -> str:
    return f"${amount:.2f}" if amount >= 1 else f"${amount:.4f}"
