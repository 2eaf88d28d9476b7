"""The import benchmark on a tiny history: the generator's shape and every printed figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vivy.importer import load_exports
from vivy_lab.bench.importer import YEAR_S, generate, main, write_exports
from vivy_lab.fakes.gemini import minimal_instance

FIGURES = {
    f"{run}_{name}"
    for run in ("offline_2y", "offline_20y", "fake_gemini")
    for name in ("messages", "notes", "wall_s", "messages_per_s", "llm_calls")
} | {
    "offline_2y_calls_in_flight_max",
    "offline_20y_calls_in_flight_max",
    "fake_gemini_calls_in_flight_max",
    "fake_gemini_calls_in_flight_mean",
    "fake_gemini_latency_s",
    "fake_gemini_http_requests",
    "rerun_killed_at_messages",
    "rerun_first_run_wall_s",
    "rerun_wall_s",
    "rerun_llm_calls",
    "rerun_cost_vs_fresh",
}


def test_history_spans_the_calendar_in_channels_and_stretches_between_conversations(
    tmp_path: Path,
) -> None:
    """1,000 messages over two years in five channels; stretched, the same lines 10× apart."""
    history = generate(1000)
    stretched = generate(1000, stretch=10.0)
    assert history.messages == stretched.messages == 1000
    assert len(history.channels) == 5
    first = min(c[0][0] for c in history.channels)
    last = max(c[-1][0] for c in history.channels)
    assert YEAR_S < last - first < 2 * YEAR_S
    for plain, wide in zip(history.channels, stretched.channels, strict=True):
        assert [(a, t) for _, a, t in plain] == [(a, t) for _, a, t in wide]
    batch = load_exports(write_exports(history, tmp_path))
    assert len(batch.messages) == 1000 and len(batch.channel_ids) == 5


def test_fake_gemini_answers_the_smallest_document_a_schema_accepts() -> None:
    """Required fields only, first enum member, empty arrays unless a minimum is set."""
    schema = {
        "type": "OBJECT",
        "properties": {
            "title": {"type": "STRING"},
            "kind": {"type": "STRING", "enum": ["a", "b"]},
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}},
            "two": {"type": "ARRAY", "items": {"type": "INTEGER"}, "minItems": 2},
            "extra": {"type": "BOOLEAN"},
        },
        "required": ["title", "kind", "tags", "two"],
    }
    assert minimal_instance(schema) == {"title": "bench", "kind": "a", "tags": [], "two": [0, 0]}


def test_bench_prints_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    """A 300-message run prints each figure once as ``name: value``, with consistent counts."""
    assert main(["--messages", "300", "--latency", "0", "--concurrency", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    figures = dict(line.split(": ", 1) for line in lines)
    assert set(figures) == FIGURES and len(lines) == len(FIGURES)
    assert figures["offline_2y_messages"] == figures["offline_20y_messages"] == "300"
    assert figures["offline_2y_notes"] == figures["offline_20y_notes"]
    assert int(figures["fake_gemini_llm_calls"]) == int(figures["fake_gemini_http_requests"])
    assert 1 <= int(figures["fake_gemini_calls_in_flight_max"]) <= 2
    assert json.loads(figures["rerun_killed_at_messages"]) == 180
