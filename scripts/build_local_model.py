#!/usr/bin/env python3
"""Make the offline embedding model's files that Vivy's wheel ships, from the wordllama wheel.

    python scripts/build_local_model.py [--out vivy/data/local_model]

Run it in a scratch environment that has the source package and the converter's tools
(``pip install wordllama==0.4.0.post1 sentencepiece protobuf``); Vivy itself needs none of
them but ``sentencepiece``. From the installed ``wordllama`` package it

* copies the ``l2_supercat`` weights (``weights/l2_supercat_256.safetensors``) unchanged;
* converts the Llama 2 tokenizer it ships as a Hugging Face ``tokenizer.json`` into a
  SentencePiece model: the same pieces, each normal piece scored by the rank of the first
  merge that makes it, so SentencePiece's BPE (highest-scoring pair first) merges in the
  order the ``tokenizers`` library does (lowest rank first); byte fallback, the ``▁`` prefix
  and spaces as ``▁``, no other normalisation, as the JSON says;
* copies wordllama's licence and writes a notice with the files' provenance and digests;
* checks the conversion: every text of the long-conversation eval set, lower-cased as
  Vivy embeds it, and a seeded sample of random text tokenise to the same ids with both
  tokenizers (it stops with an error otherwise).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = "l2_supercat"
WEIGHTS = "l2_supercat_256.safetensors"
TOKENIZER = "l2_supercat_tokenizer.model"
SPECIAL = ("<unk>", "<s>", "</s>")


def convert(tokenizer_json: Path, out: Path) -> None:
    """Write the SentencePiece model of the Hugging Face BPE tokenizer ``tokenizer_json``."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    spec = json.loads(tokenizer_json.read_text(encoding="utf-8"))
    model = spec["model"]
    if model["type"] != "BPE" or not model["byte_fallback"] or spec["pre_tokenizer"]:
        raise SystemExit(f"{tokenizer_json}: not the Llama 2 tokenizer this script converts")
    rank: dict[str, int] = {}
    for index, merge in enumerate(model["merges"]):
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        rank.setdefault(left + right, index)
    proto = pb.ModelProto()
    kinds = pb.ModelProto.SentencePiece
    for text, _ in sorted(model["vocab"].items(), key=lambda item: item[1]):
        piece = proto.pieces.add()
        piece.piece = text
        if text == "<unk>":
            piece.type = kinds.UNKNOWN
        elif text in SPECIAL:
            piece.type = kinds.CONTROL
        elif text.startswith("<0x") and len(text) == 6:
            piece.type = kinds.BYTE
        else:
            piece.type = kinds.NORMAL
            # Single characters no merge makes are never merged into; their score is unused.
            piece.score = -float(rank.get(text, len(rank)))
    trainer = proto.trainer_spec
    trainer.model_type = pb.TrainerSpec.BPE
    trainer.vocab_size = len(model["vocab"])
    trainer.byte_fallback = True
    trainer.unk_id, trainer.bos_id, trainer.eos_id, trainer.pad_id = 0, 1, 2, -1
    normalizer = proto.normalizer_spec
    normalizer.name = "identity"
    normalizer.add_dummy_prefix = True
    normalizer.remove_extra_whitespaces = False
    normalizer.escape_whitespaces = True
    out.write_bytes(proto.SerializeToString())


def check(tokenizer_json: Path, converted: Path) -> int:
    """Tokenise the eval set and random text with both tokenizers; the texts compared."""
    from sentencepiece import SentencePieceProcessor
    from tokenizers import Tokenizer

    from vivy.llm.offline.embeddings import token_ids

    reference = Tokenizer.from_file(str(tokenizer_json))
    ours = SentencePieceProcessor(model_file=str(converted))
    texts: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            texts.extend((value, value.lower()))
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads((ROOT / "lab/vivy_lab/data/longconv_eval.json").read_text("utf-8")))
    rng = random.Random(11)
    alphabet = [*"abc xyz  \n\t.,!?'\"éüß漢字한국어😀👍🏽\u0301\u200b\u00a0▁<>@#0123", *SPECIAL]
    alphabet += [chr(rng.randrange(32, 0x3000)) for _ in range(300)]
    for _ in range(40000):
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 80))))
    for text in texts:
        want = reference.encode(text, add_special_tokens=False).ids
        if token_ids(ours, text) != want:
            raise SystemExit(f"the converted tokenizer differs on {text!r}")
    return len(texts)


def digest(path: Path) -> str:
    """The file's SHA-256."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(out: Path) -> None:
    """Build the model's files into ``out`` and check them."""
    import wordllama

    source = Path(wordllama.__file__).parent
    tokenizer_json = source / "tokenizers" / f"{CONFIG}_tokenizer_config.json"
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "weights" / WEIGHTS, out / WEIGHTS)
    convert(tokenizer_json, out / TOKENIZER)
    licence = next((source.parent).glob("wordllama-*.dist-info/licenses/LICENSE"))
    shutil.copyfile(licence, out / "LICENSE")
    version = wordllama.__version__ if hasattr(wordllama, "__version__") else "unknown"
    (out / "NOTICE").write_text(
        "The offline embedding model: wordllama's l2_supercat, 256 dimensions.\n\n"
        f"{WEIGHTS} is copied unchanged from the wordllama {version} wheel on PyPI\n"
        "(https://github.com/dleemiller/WordLlama, MIT licence, see LICENSE).\n"
        f"{TOKENIZER} is the Llama 2 tokenizer that wheel ships\n"
        f"(tokenizers/{CONFIG}_tokenizer_config.json, SHA-256 {digest(tokenizer_json)}),\n"
        "converted to a SentencePiece model by scripts/build_local_model.py.\n"
        "The model's vocabulary is Llama 2's; its token vectors were trained by wordllama\n"
        "from the codebooks of models that use that vocabulary.\n\n"
        f"SHA-256 {digest(out / WEIGHTS)}  {WEIGHTS}\n"
        f"SHA-256 {digest(out / TOKENIZER)}  {TOKENIZER}\n",
        encoding="utf-8",
    )
    compared = check(tokenizer_json, out / TOKENIZER)
    print(f"files: {out}")
    print(f"texts_tokenised_identically: {compared}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=ROOT / "vivy" / "data" / "local_model", help="output folder"
    )
    main(parser.parse_args().out)
