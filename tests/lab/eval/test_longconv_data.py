"""Integrity of the generated long-conversation eval set and its test-suite subset."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from vivy_lab.synthetic.longconv.report import report

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "build_longconv_eval.py"
FULL = ROOT / "lab" / "vivy_lab" / "data" / "longconv_eval.json"
SMALL = ROOT / "tests" / "lab" / "eval" / "longconv_small.json"
KINDS = {"single-hop", "multi-hop", "temporal", "open-domain", "paraphrase"}


def load(path: Path) -> dict[str, Any]:
    """The parsed eval file."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def generate(out: Path, *options: str) -> tuple[Path, Path]:
    """Run the generator into ``out``; returns the paths of the full set and the subset."""
    full, small = out / "full.json", out / "small.json"
    cmd = [sys.executable, str(SCRIPT), "--out", str(full), "--small-out", str(small), *options]
    subprocess.run(cmd, check=True, capture_output=True)
    return full, small


@pytest.fixture(scope="module")
def other_seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A set generated with another seed and more guilds than names run to, so that the
    generator's guarantees are checked beyond the committed files."""
    full, _ = generate(tmp_path_factory.mktemp("longconv"), "--seed", "11", "--guilds", "14")
    return full


@pytest.fixture(params=["full", "small", "other-seed"])
def eval_data(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The committed full set, the committed subset, or a freshly generated set."""
    if request.param == "other-seed":
        return load(request.getfixturevalue("other_seed"))
    return load(FULL if request.param == "full" else SMALL)


def test_answers_are_messages_of_the_same_guild(eval_data: dict[str, Any]) -> None:
    """Every answer id names a message of the question's own guild, and ids are not repeated."""
    for guild in eval_data["guilds"]:
        ids = {m["id"] for s in guild["sessions"] for m in s["messages"]}
        for q in guild["questions"]:
            assert q["answer_message_ids"], q["id"]
            assert set(q["answer_message_ids"]) <= ids, q["id"]
            assert len(set(q["answer_message_ids"])) == len(q["answer_message_ids"]), q["id"]


def test_ids_are_unique_snowflake_strings(eval_data: dict[str, Any]) -> None:
    """Guild, channel, user, message, session and question ids are unique across the file."""
    data = eval_data
    ids: list[str] = []
    for guild in data["guilds"]:
        ids += [guild["guild_id"], guild["channel"]["id"]]
        ids += [m["user_id"] for m in guild["members"]]
        ids += [m["id"] for s in guild["sessions"] for m in s["messages"]]
    assert all(i.isdigit() and len(i) == 18 for i in ids)
    keys = [s["key"] for g in data["guilds"] for s in g["sessions"]]
    keys += [q["id"] for g in data["guilds"] for q in g["questions"]]
    assert len(set(ids)) == len(ids)
    assert len(set(keys)) == len(keys)


def test_every_kind_is_present_in_every_guild(eval_data: dict[str, Any]) -> None:
    """Each guild asks questions of all five kinds and of no other."""
    for guild in eval_data["guilds"]:
        assert {q["kind"] for q in guild["questions"]} == KINDS


def test_sessions_and_questions_are_consistent_in_time(eval_data: dict[str, Any]) -> None:
    """Sessions follow each other, their bounds are their first and last messages, authors and
    askers are members, and questions are asked after the last session."""
    for guild in eval_data["guilds"]:
        members = {m["user_id"] for m in guild["members"]}
        previous_end = ""
        for session in guild["sessions"]:
            times = [m["time"] for m in session["messages"]]
            assert times == sorted(times)
            assert (session["start"], session["end"]) == (times[0], times[-1])
            assert previous_end < session["start"]
            assert {m["author"] for m in session["messages"]} <= members
            assert session["note"]["title"] and session["note"]["summary"]
            previous_end = session["end"]
        for q in guild["questions"]:
            assert q["asked_by"] in members
            assert q["asked_at"] > previous_end


def test_multi_hop_answers_span_sessions(eval_data: dict[str, Any]) -> None:
    """A multi-hop question needs messages from two or more sessions."""
    for guild in eval_data["guilds"]:
        session_of = {m["id"]: s["key"] for s in guild["sessions"] for m in s["messages"]}
        for q in guild["questions"]:
            if q["kind"] == "multi-hop":
                assert len({session_of[i] for i in q["answer_message_ids"]}) >= 2, q["id"]


def test_full_set_has_the_planned_size_and_spread() -> None:
    """About 5,000 messages in ~8 guilds and 500-700 questions, kinds spread as planned."""
    data = load(FULL)
    guilds = data["guilds"]
    messages = sum(len(s["messages"]) for g in guilds for s in g["sessions"])
    kinds = Counter(q["kind"] for g in guilds for q in g["questions"])
    total = sum(kinds.values())
    assert len(guilds) == 8
    assert 4000 <= messages <= 6000
    assert 500 <= total <= 700
    assert all(15 <= len(g["sessions"]) <= 25 for g in guilds)
    assert all(12 <= len(s["messages"]) <= 50 for g in guilds for s in g["sessions"])
    assert 0.25 <= kinds["single-hop"] / total <= 0.40
    assert 0.12 <= kinds["open-domain"] / total <= 0.25
    assert 0.12 <= kinds["paraphrase"] / total <= 0.25
    assert len(load(SMALL)["guilds"]) == 2


def figures(data: dict[str, Any]) -> dict[str, float]:
    """The generator's own report of ``data`` (overlaps, shares), as numbers by name."""
    lines = report(data)
    return {name: float(value) for name, value in (line.split(": ") for line in lines)}


@pytest.mark.parametrize("which", ["full", "other-seed"])
def test_questions_share_words_with_what_was_said_more_than_with_notes(
    which: str, request: pytest.FixtureRequest
) -> None:
    """Questions are worded like members ask: closer to the answer messages than to the notes
    (30-50 % of their words for single-hop, multi-hop and temporal), open-domain ones barely
    overlapping, and the note gives a single-hop answer's detail away 25-45 % of the time."""
    data = load(FULL if which == "full" else request.getfixturevalue("other_seed"))
    f = figures(data)
    for kind in ("single-hop", "multi-hop", "temporal"):
        assert 0.30 <= f[f"overlap_{kind}_answer_messages"] <= 0.50, kind
        assert f[f"overlap_{kind}_note"] <= f[f"overlap_{kind}_answer_messages"] + 0.02, kind
    assert f["overlap_single-hop_note"] < f["overlap_single-hop_answer_messages"] - 0.08
    assert f["overlap_open-domain_answer_messages"] < 0.15
    assert 0.25 <= f["single_hop_some_detail_word_in_summary"] <= 0.45


def porter_stems(db: Any, text: str) -> set[str]:
    """The stems SQLite's FTS5 porter tokenizer (the keyword index's) makes of ``text``."""
    db.execute("DELETE FROM t")
    db.execute("INSERT INTO t (x) VALUES (?)", (text,))
    return {str(row[0]) for row in db.execute("SELECT term FROM v")}


def test_paraphrases_share_no_content_word_with_their_answers(eval_data: dict[str, Any]) -> None:
    """No content word of a paraphrase question (the retriever's own query terms) shares its
    stem, by the keyword index's porter tokenizer, with a content word of the messages that
    answer it; and the generator's own stricter check (neighbouring messages too, fewer
    words counted as function words) reports no shared stem."""
    import sqlean

    from vivy.text.terms import query_terms

    db = sqlean.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')"
    )
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
    asked = 0
    for guild in eval_data["guilds"]:
        where = {m["id"]: m["text"] for s in guild["sessions"] for m in s["messages"]}
        for q in guild["questions"]:
            if q["kind"] != "paraphrase":
                continue
            asked += 1
            terms = porter_stems(db, " ".join(query_terms(q["question"])))
            said = porter_stems(
                db, " ".join(query_terms(" ".join(where[i] for i in q["answer_message_ids"])))
            )
            assert terms and not terms & said, (q["id"], terms & said)
    assert asked >= 6 * len(eval_data["guilds"])
    db.close()
    assert figures(eval_data)["paraphrase_shared_answer_stems"] == 0


def test_regenerating_reproduces_the_committed_files(tmp_path: Path) -> None:
    """The generator with its default seed writes both committed files byte for byte."""
    full, small = generate(tmp_path)
    assert full.read_bytes() == FULL.read_bytes()
    assert small.read_bytes() == SMALL.read_bytes()
