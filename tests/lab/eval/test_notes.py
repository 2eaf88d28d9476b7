"""The offline recall@k eval: fusion must not lose to either search alone."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from vivy.llm.offline import LOCAL_EMBEDDING_MODEL
from vivy_lab.commands import eval as eval_command
from vivy_lab.eval.longconv import LongReport
from vivy_lab.eval.notes import KS, METHODS, EvalReport, format_report, recall_at, run_eval
from vivy_lab.fakes.openai import FakeOpenAI

pytestmark = pytest.mark.anyio


@pytest.fixture
def long_eval_once(monkeypatch: pytest.MonkeyPatch, full_long_report: LongReport) -> None:
    """The command's long-conversation eval answered with the session's one run of it (the
    same bundled set and offline model), so that each test here need not run it again."""

    async def once(*args: object, **kwargs: object) -> LongReport:
        return full_long_report

    monkeypatch.setattr("vivy_lab.eval.longconv.run_longconv", once)


@pytest.mark.parametrize(
    ("ranked", "relevant", "k", "expected"),
    [
        (["a", "b", "c"], ["b"], 1, 0.0),
        (["a", "b", "c"], ["b"], 3, 1.0),
        (["a", "b", "c"], ["b", "z"], 3, 0.5),
        ([], ["b"], 5, 0.0),
        (["a"], [], 5, 1.0),
    ],
)
def test_recall_at(ranked: list[str], relevant: list[str], k: int, expected: float) -> None:
    """Recall@k is the share of relevant keys among the first k."""
    assert recall_at(ranked, relevant, k) == expected


@pytest.mark.sentence_model
async def test_fusion_beats_either_search_alone() -> None:
    """On the bundled eval set, fused recall@5 is at least vector-only and keyword-only."""
    report = await run_eval()
    fused = report.recall["fused"][5]
    assert fused >= report.recall["vector"][5]
    assert fused >= report.recall["keyword"][5]
    assert (report.notes, report.questions) == (40, 33)
    assert report.kinds == {"keyword": 14, "semantic": 19}
    assert report.by_kind["keyword"]["keyword"] == 1.0


async def test_report_table() -> None:
    """The table has a header with every cut-off and one row per method."""
    report = await run_eval()
    lines = format_report(report).splitlines()
    assert lines[1].split()[:5] == ["method", *(f"R@{k}" for k in KS)]
    assert [line.split()[0] for line in lines[2 : 2 + len(METHODS)]] == list(METHODS)


@pytest.mark.sentence_model
def test_eval_command(capsys: pytest.CaptureFixture[str], long_eval_once: None) -> None:
    """``vivy eval --check`` prints the tables and exits 0 while the retriever holds up
    against every baseline and fusion against either search alone."""
    parser = argparse.ArgumentParser()
    eval_command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["eval", "--check"])
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    assert "fused+gate" in out and LOCAL_EMBEDDING_MODEL in out
    assert "quoted-line recall@k" in out and "FAIL" not in out


@pytest.mark.sentence_model
def test_goals_are_checked_only_when_asked(
    capsys: pytest.CaptureFixture[str], long_eval_once: None
) -> None:
    """``--goals`` adds the paraphrase and quoted-line targets to ``--check``: each one the
    retriever misses is a FAIL line naming it, and any of them exits 1."""
    parser = argparse.ArgumentParser()
    eval_command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["eval", "--check", "--goals"])
    code = args.handler(args)
    failures = [line for line in capsys.readouterr().out.splitlines() if line.startswith("FAIL")]
    assert code == (1 if failures else 0)
    assert all("paraphrase recall@5" in line or "quoted-line recall@5" in line for line in failures)


def test_check_fails_when_fusion_loses(
    monkeypatch: pytest.MonkeyPatch, long_eval_once: None
) -> None:
    """``--check`` exits 1 when fused recall@5 is below a single search."""
    bad = EvalReport(
        embedding_model="x",
        notes=1,
        questions=1,
        recall={m: {k: (0.1 if m.startswith("fused") else 0.9) for k in KS} for m in METHODS},
        by_kind={m: {} for m in METHODS},
        kinds={},
    )

    async def fake_run(*args: object, **kwargs: object) -> EvalReport:
        return bad

    monkeypatch.setattr("vivy_lab.eval.notes.run_eval", fake_run)
    parser = argparse.ArgumentParser()
    eval_command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["eval", "--check"])
    assert args.handler(args) == 1


def test_eval_runs_on_an_openai_compatible_endpoints_embeddings(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``vivy eval --provider openai`` embeds every note and question at the endpoint of
    ``VIVY_OPENAI_BASE_URL`` with ``VIVY_OPENAI_EMBEDDING_MODEL``, and reports that model."""
    small = Path(__file__).with_name("longconv_small.json")
    for name in ("GEMINI_API_KEY", "MEMORY_GEMINI_TOKEN", "VIVY_LLM_PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    with FakeOpenAI() as fake:
        monkeypatch.setenv("VIVY_OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("VIVY_OPENAI_EMBEDDING_MODEL", "nomic-embed-text")
        parser = argparse.ArgumentParser()
        eval_command.register(parser.add_subparsers(dest="command"))
        args = parser.parse_args(["eval", "--provider", "openai", "--long-set", str(small)])
        assert args.handler(args) == 0
        sent = fake.calls("embeddings")
    assert "nomic-embed-text" in capsys.readouterr().out
    assert len(sent) > 2 and {r.body["model"] for r in sent} == {"nomic-embed-text"}
    assert fake.calls("chat") == []
