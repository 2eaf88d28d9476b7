"""The real dev set's reader and its exports, on a small made-up sample of the same shape
(the real data stays in ../shared/ and never enters the repository)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from tests.hashing import HashingEmbedder
from vivy.importer.export import load_exports
from vivy.llm.offline import OfflineLLM
from vivy_lab.eval.longconv_dev import (
    RANDOM_QUESTIONS,
    load_dev,
    message_sessions,
    session_keys_of_notes,
    strangers,
    write_exports,
)
from vivy_lab.eval.longconv_dev_run import (
    dev_figures,
    format_dev_report,
    run_default,
    run_stand_in,
)


def _sample(sample_id: str, a: str, b: str) -> dict[str, object]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": a,
            "speaker_b": b,
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": a, "dia_id": "D1:1", "text": "I adopted a puppy called Biscuit!"},
                {
                    "speaker": b,
                    "dia_id": "D1:2",
                    "text": "Look at this",
                    "img_url": ["http://example.invalid/x.jpg"],
                    "blip_caption": "a photo of a dog on a beach",
                },
            ],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [
                {"speaker": b, "dia_id": "D2:1", "text": "We went camping by the lake."},
                {"speaker": a, "dia_id": "D2:2", "text": "Sounds lovely."},
            ],
        },
        "qa": [
            {
                "question": f"What is {a}'s puppy called?",
                "answer": "Biscuit",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": f"When did {b} go camping?",
                "answer": "June 2023",
                "evidence": ["D:2:1", "D2:01"],
                "category": 2,
            },
            {"question": "What did they buy?", "answer": "-", "evidence": ["D9:9"], "category": 1},
            {
                "question": f"What is {b}'s cat called?",
                "adversarial_answer": "none",
                "evidence": ["D1:2"],
                "category": 5,
            },
        ],
        "session_summary": {
            "session_1_summary": f"{a} adopted a puppy named Biscuit.",
            "session_2_summary": f"{b} went camping by a lake.",
        },
        "observation": {
            "session_1_observation": {a: [[f"{a} has a puppy named Biscuit.", "D1:1"]]},
        },
    }


def _write(tmp_path: Path) -> Path:
    path = tmp_path / "conversations.json"
    path.write_text(
        json.dumps([_sample("conv-a", "Ann", "Bo"), _sample("conv-b", "Cy", "Di")]),
        encoding="utf-8",
    )
    return path


def test_the_dev_set_becomes_guilds_of_sessions_with_answerable_questions(tmp_path: Path) -> None:
    dev = load_dev(_write(tmp_path))
    assert len(dev.data.guilds) == 2
    first = dev.data.guilds[0]
    assert [s.key for s in first.sessions] == ["conv-a/S1", "conv-a/S2"]
    assert sorted(name for name, _ in first.members.values()) == ["Ann", "Bo"]
    ids = [mid for s in first.sessions for mid, _, _, _ in s.messages]
    assert ids == sorted(ids) and len(set(ids)) == 4
    assert first.sessions[0].messages[1][3] == "Look at this [photo: a photo of a dog on a beach]"
    assert first.sessions[0].messages[1][2] - first.sessions[0].messages[0][2] == 60.0
    assert first.sessions[0].note["summary"] == "Ann adopted a puppy named Biscuit."
    # The unanswerable category and the question whose only evidence names no message are
    # left out of recall; malformed ids are normalised (the camping question keeps D2:1).
    kinds = [q.kind for q in first.questions]
    assert kinds == ["single-hop", "temporal"]
    sessions = message_sessions(dev.data)
    assert {sessions[m] for m in first.questions[1].answers} == {"conv-a/S2"}
    assert [q.kind for q in dev.unanswerable] == ["adversarial", "adversarial"]
    assert dev.dropped_evidence == 2
    assert dev.observations["conv-a/S1"][0][1] == "Ann has a puppy named Biscuit."
    assert all(q.asked_at > first.sessions[-1].end for q in first.questions)


def test_exports_are_valid_discord_exports_of_every_message(tmp_path: Path) -> None:
    dev = load_dev(_write(tmp_path))
    paths = write_exports(dev, tmp_path / "exports")
    batch = load_exports(paths)
    assert len(batch.messages) == 8
    assert {m.guild_id for m in batch.messages} == {g.guild_id for g in dev.data.guilds}
    sessions = message_sessions(dev.data)
    assert {m.message_id for m in batch.messages} == set(sessions)


def test_notes_map_to_the_session_most_of_their_lines_came_from(tmp_path: Path) -> None:
    dev = load_dev(_write(tmp_path))
    first, second = dev.data.guilds[0].sessions
    lines = [(7, m) for m, _, _, _ in first.messages] + [(7, second.messages[0][0])]
    lines += [(8, second.messages[1][0])]
    assert session_keys_of_notes(lines, dev.data) == {7: "conv-a/S1", 8: "conv-a/S2"}


def test_strangers_ask_each_guild_another_guilds_questions_and_random_words(
    tmp_path: Path,
) -> None:
    dev = load_dev(_write(tmp_path))
    asked = strangers(dev)
    first = asked.guilds[0]
    texts = [q.question for q in first.questions]
    assert texts[:2] == [q.question for q in dev.data.guilds[1].questions]
    assert texts[2:] == list(RANDOM_QUESTIONS)
    assert all(not q.answers for q in first.questions)


def test_both_runs_ask_every_question_and_report_against_bm25(tmp_path: Path) -> None:
    """The embedded default (through ``vivy import``'s code) and the stand-in (summaries as
    notes) each answer the small sample's questions; the report names every method and the
    gate's rates, and the import's rate."""
    dev = load_dev(_write(tmp_path))
    llm = OfflineLLM(embedder=HashingEmbedder())
    default = run_default(dev, llm, tmp_path / "run")
    stand_in = anyio.run(run_stand_in, dev, llm)
    for run in (default, stand_in):
        assert len(run.searched) == 4
        assert len(run.strangers) == 2 * (2 + len(RANDOM_QUESTIONS))
        for puppy in [one for one in run.searched if "puppy" in one.question.question]:
            conversation = puppy.question.id.split("/")[0]
            assert puppy.shipped.sessions[:1] == (f"{conversation}/S1",)
    figures = [dev_figures(run, llm.embedding_model) for run in (default, stand_in)]
    assert figures[0].messages_per_s is not None and figures[0].messages_per_s > 0
    assert figures[1].messages_per_s is None
    for one in figures:
        assert set(one.recall) == {
            "shipped",
            "cross-validated",
            "keyword_only",
            "bm25_raw",
            "bm25_session",
            "ceiling",
        }
        assert all(one.recall["ceiling"][k] == 1.0 for k in (1, 3, 5, 10))  # one session each
        assert one.recall["shipped"][1] == 1.0  # every question names its one session's words
        assert 0.0 <= one.random_empty <= 1.0 and 0.0 <= one.stranger_empty <= 1.0
    text = format_dev_report(figures)
    assert "default: 4 questions" in text and "stand-in: 4 questions" in text
    assert "import:" in text and "reply gate:" in text
