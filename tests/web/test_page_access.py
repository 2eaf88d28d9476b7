"""The memory page's access rules: the token on every view and correction, no token in a URL
or a log, guild isolation by token, and no content of a member who opted out."""

from __future__ import annotations

import logging
import urllib.error
import urllib.request

import anyio
import pytest
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from tests.web.conftest import MANAGER_TOKEN, OPERATOR_TOKEN, STRANGER_TOKEN, DemoPage
from vivy.web.server import OperatorServer

#: Every view of a guild, by path under /page/g/<guild>/ (ids filled in by the test).
VIEWS = [
    "timeline",
    "search?q=dog",
    "members",
    "member/{user}",
    "note/{note}",
    "health",
    "corrections",
]
#: Every correction, by path under /page/g/<guild>/.
ACTIONS = ["fact/{fact}/remove", "note/{note}/remove", "member/{user}/forget"]


def _call(url: str, token: str | None, body: bytes | None = None) -> tuple[int, str]:
    """GET (or POST ``body``) ``url`` with a bearer ``token``; status and text."""
    request = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read().decode()


def _ids(page: DemoPage) -> dict[str, int]:
    """A member with facts (Sam), one of Sam's facts and its source note."""

    async def read() -> dict[str, int]:
        members = await page.store.pages.members(page.guild)
        sam = next(m for m in members if m.name == "Sam")
        facts = await page.store.pages.fact_history(page.guild, sam.user_id)
        fact = next(f for f in facts if f.source_note_id is not None)
        assert fact.source_note_id is not None
        return {"user": sam.user_id, "fact": fact.id, "note": fact.source_note_id}

    return page.server.call(read)


def _paths(page: DemoPage, ids: dict[str, int], templates: list[str]) -> list[str]:
    base = f"{page.server.url}/page/g/{page.guild}/"
    return [base + t.format(**ids) for t in templates]


def test_every_view_and_correction_needs_the_token(sqlite_page: DemoPage) -> None:
    """Without a token or with a wrong one, every view and every correction is refused with
    401, and nothing is corrected; the shell itself holds no data."""
    ids = _ids(sqlite_page)
    views = [f"{sqlite_page.server.url}/page/guilds", *_paths(sqlite_page, ids, VIEWS)]
    actions = _paths(sqlite_page, ids, ACTIONS)
    for token in (None, "wrong-token-0123456789", ""):
        for url in views:
            assert _call(url, token)[0] == 401, url
        for url in actions:
            assert _call(url, token, f"user_id={ids['user']}".encode())[0] == 401, url
    status, shell = _call(f"{sqlite_page.server.url}/", None)
    assert status == 200 and "Sam" not in shell and "token" in shell
    assert _call(views[1], MANAGER_TOKEN)[0] == 200
    assert "No corrections yet." in _call(views[-1], MANAGER_TOKEN)[1]
    profile = _call(views[4], MANAGER_TOKEN)[1]
    assert f'data-fact="{ids["fact"]}"' in profile


def test_a_token_never_reaches_a_url_or_a_log(
    sqlite_page: DemoPage, caplog: pytest.LogCaptureFixture
) -> None:
    """Requests with right and wrong tokens, and a correction, log neither token."""
    ids = _ids(sqlite_page)
    caplog.set_level(logging.DEBUG)
    with capture_logs() as logs:
        for url in _paths(sqlite_page, ids, VIEWS):
            _call(url, MANAGER_TOKEN)
            _call(url, "wrong-but-long-token-000")
        fact = _paths(sqlite_page, ids, ACTIONS)[0]
        assert _call(fact, MANAGER_TOKEN, f"user_id={ids['user']}".encode())[0] == 200
    text = repr(logs) + caplog.text
    assert any(entry.get("who") == "alice" for entry in logs)
    for secret in (MANAGER_TOKEN, "wrong-but-long-token-000", OPERATOR_TOKEN):
        assert secret not in text
    corrections = _call(_paths(sqlite_page, ids, ["corrections"])[0], OPERATOR_TOKEN)[1]
    assert "alice" in corrections and MANAGER_TOKEN not in corrections


def test_a_token_sees_only_its_guilds(sqlite_page: DemoPage) -> None:
    """A token for another guild lists no guild, and every view and correction of this one
    is 'not found' for it, with nothing changed."""
    ids = _ids(sqlite_page)
    listed = _call(f"{sqlite_page.server.url}/page/guilds", STRANGER_TOKEN)[1]
    assert str(sqlite_page.guild) not in listed
    for url in _paths(sqlite_page, ids, VIEWS):
        assert _call(url, STRANGER_TOKEN)[0] == 404, url
    for url in _paths(sqlite_page, ids, ACTIONS):
        assert _call(url, STRANGER_TOKEN, f"user_id={ids['user']}".encode())[0] == 404, url
    assert (
        "No corrections yet."
        in _call(_paths(sqlite_page, ids, ["corrections"])[0], MANAGER_TOKEN)[1]
    )


def test_a_member_who_opted_out_shows_no_content(sqlite_page: DemoPage) -> None:
    """After Sam opts out, the page shows none of Sam's facts and quotes none of Sam's lines,
    in the profile, the notes and the search."""
    ids = _ids(sqlite_page)

    async def opt_out() -> None:
        await sqlite_page.store.members.set_opted_out(
            sqlite_page.guild, ids["user"], "Sam", True, 0.0
        )

    before = _call(_paths(sqlite_page, ids, ["note/{note}"])[0], MANAGER_TOKEN)[1]
    assert "<cite>Sam," in before
    sqlite_page.server.call(opt_out)
    profile = _call(_paths(sqlite_page, ids, ["member/{user}"])[0], MANAGER_TOKEN)[1]
    assert "opted out" in profile and 'class="fact"' not in profile
    note = _call(_paths(sqlite_page, ids, ["note/{note}"])[0], MANAGER_TOKEN)[1]
    assert "<cite>Sam," not in note
    search = _call(_paths(sqlite_page, ids, ["search?q=Sam+dog+Bento"])[0], MANAGER_TOKEN)[1]
    assert "<cite>Sam," not in search and "Sam</a>:" not in search


def test_the_page_needs_a_configured_token() -> None:
    """On loopback without any token the API stays open, but the page refuses (403)."""

    async def run() -> None:
        server = OperatorServer(CollectorRegistry(), port=0)
        server.bind()
        async with anyio.create_task_group() as tg:
            await tg.start(server.serve)
            status, body = await anyio.to_thread.run_sync(_call, f"{server.url}/page/guilds", None)
            assert status == 403 and "VIVY_API_TOKEN" in body
            tg.cancel_scope.cancel()

    anyio.run(run)
