"""The operator API and the memory page search alike: one ranking for the same question."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import httpx2
import pytest
from prometheus_client import CollectorRegistry
from starlette.types import ASGIApp

from tests.web.conftest import OPERATOR_TOKEN
from vivy.clock import Clock
from vivy.commands.demo import DEMO_EXPORT
from vivy.importer import load_exports
from vivy.llm.offline import OfflineLLM
from vivy.retrieval import OperatorStore, Retriever
from vivy.storage.engines import open_store
from vivy.web.asgi import Surface, operator_app
from vivy.web.memory import SEARCH_HITS, StoreMemory
from vivy.web.tokens import Tokens

pytestmark = pytest.mark.anyio

#: The wall time of the searches (a week or so after the demo's conversations).
NOW = 2_000_000_000.0


async def get(app: ASGIApp, path: str, params: dict[str, Any]) -> tuple[int, bytes]:
    """GET ``path?params`` from the ASGI ``app`` with the operator's token, in this event loop
    (httpx's ASGI transport); the answer's status and body."""
    transport = httpx2.ASGITransport(app=app, client=("127.0.0.1", 50000))
    async with httpx2.AsyncClient(transport=transport, base_url="http://vivy.test") as client:
        answer = await client.get(
            path, params=params, headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"}
        )
    return answer.status_code, answer.content


@pytest.mark.parametrize(
    "question",
    ["grab tacos", "who is moving to a new place?", "what did Sam cook", "the and of"],
)
async def test_the_api_and_the_page_rank_a_question_alike(
    question: str, imported_demo: Path, tmp_path: Path
) -> None:
    """For the same question on the imported demo, the API's search answers the notes the
    memory page's search finds, in its order with its scores (a question of stop words
    included: both list the notes by meaning alone)."""
    guild = load_exports([DEMO_EXPORT]).messages[0].guild_id
    database = tmp_path / "demo.db"
    shutil.copyfile(imported_demo, database)
    store = open_store(database, inline=True)
    llm = OfflineLLM()
    try:
        retriever = Retriever(store.search, llm, Clock.starting_at(NOW))
        memory = StoreMemory(store, retriever, now=lambda: NOW)
        surface = Surface(
            CollectorRegistry(),
            Tokens.from_settings(OPERATOR_TOKEN, None),
            OperatorStore(store.search, retriever),
            memory,
        )
        app = operator_app(surface)
        status, body = await get(
            app, "/api/memory/search", {"guild_id": guild, "q": question, "limit": SEARCH_HITS}
        )
        assert status == 200, body
        api = [
            (hit["note_id"], hit["score"], hit["keyword_score"])
            for hit in json.loads(body)["results"]
        ]
        found = await memory.search(guild, question)
        page = [
            (
                str(hit.note.id),
                round(hit.score, 6),
                None if hit.keyword_score is None else round(hit.keyword_score, 6),
            )
            for hit in found.hits
        ]
        assert api == page
        assert api, "the demo remembers something for every question"
        status, html = await get(app, f"/page/g/{guild}/search", {"q": question})
        assert status == 200, html
        shown = re.findall(rf'href="#/g/{guild}/note/(\d+)"', html.decode())
        assert shown == [note_id for note_id, _, _ in api]
    finally:
        await llm.aclose()
        store.close()
