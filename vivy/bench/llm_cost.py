"""``vivy bench llm-cost``: LLM calls and tokens per 1,000 human messages.

The bundled multi-day, multi-user conversation (or the exports given) is replayed through
the whole pipeline — buffers, notes, per-note profile updates, the nightly clustering and
consolidation — with a counting LLM: the offline provider, plus a token estimate (4
characters a token) of every prompt and answer. The same replay is then costed the way seed
000 specifies per-message extraction: one extraction call per human message of 10 or more
characters, plus one consolidation call per similar existing fact (cosine distance below
0.35, at most 3) of every extracted fact, plus one embedding per fact. Target: at most 100
LLM calls per 1,000 human messages.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from vivy.config import Settings
from vivy.importer import ExportMessage, import_exports, load_exports
from vivy.llm.offline import OfflineLLM, hash_embedding, profile_operations
from vivy.llm.port import (
    ChatAnswer,
    ChatRequest,
    EmbeddingTask,
    Generation,
    GenerationRequest,
    T,
    Usage,
)
from vivy.llm.schemas import AddFact, NoteView, ProfileInput, TranscriptLine

__all__ = ["CountingLLM", "main", "per_message_cost"]

DEMO_EXPORT = Path(__file__).resolve().parents[1] / "data" / "demo_export.json"

#: Seed 000's extraction prompt, for its token estimate.
SEED_EXTRACTION_PROMPT = (
    "Extract long-term, third-person facts about the user from this message.\n"
    "Ignore temporary states like current mood or what they're doing right now.\n"
    "If no long-term facts can be extracted, return an empty array.\n"
    "The user's name is {name}.\nMessage: {text}"
)
#: Seed 000's consolidation system prompt (abridged to its length class) for its estimate.
SEED_CONSOLIDATION_PROMPT = (
    "You are a memory consolidation AI. Your job is to compare a NEW fact with an OLD fact and"
    " decide how to update the database. Rules: 1. INVALIDATE: Use this if the new fact"
    " completely replaces or contradicts the old fact. 2. MERGE: Use this if the facts are"
    " about the exact same topic/entity and can be combined into a single, richer sentence."
    " 3. KEEP: Use this if the facts are completely unrelated. If you choose MERGE, you must"
    " provide the newly combined fact. NEW: {new} OLD: {old}"
)
SIMILARITY_DISTANCE = 0.35


def tokens(text: str) -> int:
    """A rough token count: four characters a token."""
    return max(1, math.ceil(len(text) / 4))


class CountingLLM(OfflineLLM):
    """The offline provider, counting calls and estimated tokens by operation."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.tokens_in = 0
        self.tokens_out = 0
        self.embeddings = 0

    async def generate(self, request: GenerationRequest[T]) -> Generation[T]:
        """Answer offline; count the call and its estimated tokens."""
        answer = await super().generate(request)
        dumped = getattr(answer.value, "model_dump_json", lambda: "")()
        usage = Usage(tokens(request.system + request.prompt), tokens(dumped))
        self.calls[request.operation.value] += 1
        self.tokens_in += usage.input_tokens
        self.tokens_out += usage.output_tokens
        return replace(answer, usage=usage)

    async def embed(self, texts: Sequence[str], task: EmbeddingTask) -> list[list[float]]:
        """Embed offline; count one embedding request per call."""
        self.embeddings += 1
        return await super().embed(texts, task)

    async def chat(self, request: ChatRequest) -> ChatAnswer:
        """Not used by the capture pipeline."""
        return await super().chat(request)


def per_message_cost(messages: Sequence[ExportMessage]) -> dict[str, int]:
    """Seed 000's per-message extraction cost on the same human messages."""
    facts: dict[int, list[tuple[str, list[float]]]] = defaultdict(list)
    calls = tokens_in = tokens_out = embeddings = 0
    for message in messages:
        if message.author_is_bot or len(message.content) < 10:
            continue
        calls += 1
        tokens_in += tokens(
            SEED_EXTRACTION_PROMPT.format(name=message.author_name, text=message.content)
        )
        line = TranscriptLine(
            message.author_id, message.author_name, message.content, message.timestamp
        )
        note = NoteView(0, "", "", "", (message.author_name,), (line,))
        extracted = [
            op.text
            for op in profile_operations(
                ProfileInput(message.author_id, message.author_name, (), (note,))
            ).operations
            if isinstance(op, AddFact)
        ]
        tokens_out += tokens(json.dumps(extracted))
        for text in extracted:
            embeddings += 1
            vector = hash_embedding(text)
            similar = sorted(
                (1 - sum(a * b for a, b in zip(vector, old, strict=True)), old_text)
                for old_text, old in facts[message.author_id]
            )
            for _, old_text in [s for s in similar if s[0] < SIMILARITY_DISTANCE][:3]:
                calls += 1
                tokens_in += tokens(SEED_CONSOLIDATION_PROMPT.format(new=text, old=old_text))
                tokens_out += tokens('{"action": "MERGE", "merged_text": "' + text + '"}')
            facts[message.author_id].append((text, vector))
    return {"calls": calls, "tokens": tokens_in + tokens_out, "embeddings": embeddings}


def run(paths: Sequence[Path]) -> dict[str, float]:
    """Replay ``paths`` through the pipeline and cost both designs."""
    batch = load_exports(paths)
    humans = [m for m in batch.messages if not m.author_is_bot and m.content.strip()]
    llm = CountingLLM()
    with tempfile.TemporaryDirectory() as tmp:
        settings = replace(Settings(), database=Path(tmp) / "cost.db")
        import_exports(paths, settings, llm=llm)
    calls = sum(llm.calls.values())
    total_tokens = llm.tokens_in + llm.tokens_out
    seed = per_message_cost(batch.messages)
    per_k = 1000 / len(humans)
    results: dict[str, float] = {
        "human_messages": len(humans),
        "llm_calls": calls,
        "llm_calls_per_1000_messages": round(calls * per_k, 1),
        "tokens_per_1000_messages": round(total_tokens * per_k),
        "embedding_requests_per_1000_messages": round(llm.embeddings * per_k, 1),
    }
    for operation, count in sorted(llm.calls.items()):
        results[f"calls_{operation}"] = count
    results.update(
        {
            "per_message_llm_calls": seed["calls"],
            "per_message_llm_calls_per_1000_messages": round(seed["calls"] * per_k, 1),
            "per_message_tokens_per_1000_messages": round(seed["tokens"] * per_k),
            "per_message_embeddings_per_1000_messages": round(seed["embeddings"] * per_k, 1),
        }
    )
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """Print the figures, one ``name: value`` a line."""
    parser = argparse.ArgumentParser(prog="vivy bench llm-cost", description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="exports (default: the bundled one)")
    args = parser.parse_args(argv)
    for name, value in run(args.paths or [DEMO_EXPORT]).items():
        print(f"{name}: {value:g}" if isinstance(value, float) else f"{name}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
