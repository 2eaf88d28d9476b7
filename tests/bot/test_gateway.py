"""The hikari adapter end to end: gateway payloads in, REST requests to a fake Discord out."""

from __future__ import annotations

import pytest

from vivy.bot.reply import APOLOGY, MAX_MESSAGE_CHARS, RateLimit
from vivy.metrics import ReplyOutcome

from . import payloads
from .conftest import (
    ALEX,
    CHANNEL,
    GUILD,
    OTHER_BOT,
    SAM,
    VIVY,
    VIVY_USER,
    Engine,
    Harness,
    ScriptedLLM,
    StoppedClock,
    buffered_texts,
    running_harness,
    uid,
)

pytestmark = pytest.mark.anyio

NO_PINGS: dict[str, list[str]] = {"parse": []}  # replied_user absent: Discord defaults it to false


def replies(h: Harness, outcome: ReplyOutcome) -> float | None:
    """The value of ``vivy_replies_total{outcome}``."""
    return h.app.metrics.registry.get_sample_value("vivy_replies_total", {"outcome": outcome})


async def test_a_mention_is_answered_as_a_reply_without_pings(engine: Engine) -> None:
    """A mention gets typing, then one reply that references it and allows no mentions."""
    async with running_harness(engine) as h:
        asked = await h.say(ALEX, f"<@{VIVY}> hi there, what do you know?", mentions=(VIVY_USER,))
        [sent] = h.fake.sent(CHANNEL)
        assert sent["message_reference"] == {"message_id": str(asked), "fail_if_not_exists": False}
        assert sent["allowed_mentions"] == NO_PINGS
        assert sent["content"].startswith("(offline mode)")
        assert h.fake.typing() == [f"/channels/{CHANNEL}/typing"]
        [request] = h.llm.chats
        assert [(t.role, t.author, t.text) for t in request.turns] == [
            ("user", "Alex", "@Vivy hi there, what do you know?")
        ]
        assert replies(h, ReplyOutcome.ANSWERED) == 1
        assert await buffered_texts(h.probe) == [f"<@{VIVY}> hi there, what do you know?"]


async def test_a_reply_to_vivy_reads_the_reply_chain(engine: Engine) -> None:
    """Replying to Vivy triggers an answer whose turns are the chain, fetched over REST."""
    async with running_harness(engine) as h:
        first = payloads.message(
            payloads.next_snowflake(),
            SAM,
            "Which co-op game should we play?",
            channel_id=CHANNEL,
            guild_id=GUILD,
        )
        h.fake.messages[int(first["id"])] = first
        vivy = payloads.message(
            payloads.next_snowflake(),
            VIVY_USER,
            "Deep Rock Galactic, I'd say.",
            channel_id=CHANNEL,
            guild_id=GUILD,
            reply_to=int(first["id"]),
        )
        h.fake.messages[int(vivy["id"])] = vivy
        await h.say(ALEX, "Why that one?", reply_to=vivy)
        [request] = h.llm.chats
        assert [(t.role, t.author, t.text) for t in request.turns] == [
            ("user", "Sam", "Which co-op game should we play?"),
            ("model", "Vivy", "Deep Rock Galactic, I'd say."),
            ("user", "Alex", "Why that one?"),
        ]
        # Vivy's message came embedded in the event; only the one before it was fetched.
        assert h.fake.fetched() == [f"/channels/{CHANNEL}/messages/{first['id']}"]
        assert len(h.fake.sent(CHANNEL)) == 1


async def test_a_long_answer_is_split_into_discord_sized_replies(engine: Engine) -> None:
    """A 4,500-character answer is sent as several chunks, cut between paragraphs."""
    paragraphs = [f"Paragraph {i}: " + "word " * 140 for i in range(6)]
    answer = "\n\n".join(p.strip() for p in paragraphs)
    async with running_harness(engine, llm=ScriptedLLM(answer=answer)) as h:
        asked = await h.say(ALEX, f"<@{VIVY}> tell me everything", mentions=(VIVY_USER,))
        sent = h.fake.sent(CHANNEL)
        assert len(sent) == 3
        assert all(len(body["content"]) <= MAX_MESSAGE_CHARS for body in sent)
        assert sent[0]["message_reference"]["message_id"] == str(asked)
        assert all("message_reference" not in body for body in sent[1:])
        assert all(body["allowed_mentions"] == NO_PINGS for body in sent)
        assert "\n\n".join(body["content"] for body in sent) == answer
        assert all(body["content"].startswith("Paragraph") for body in sent)


async def test_bots_and_vivy_itself_are_never_stored(engine: Engine) -> None:
    """Only the human message reaches the buffer; a bot's and Vivy's own are dropped."""
    async with running_harness(engine) as h:
        await h.say(OTHER_BOT, "beep boop, daily reminder")
        await h.say(VIVY_USER, "I am Vivy and I should not remember myself")
        await h.say(OTHER_BOT, f"<@{VIVY}> answer me", mentions=(VIVY_USER,))
        await h.say(ALEX, "a human line")
        assert await buffered_texts(h.probe) == ["a human line"]
        assert h.fake.sent() == []
        assert h.llm.chats == []


async def test_direct_messages_are_ignored(engine: Engine) -> None:
    """A DM is neither stored nor answered."""
    async with running_harness(engine) as h:
        await h.post(payloads.dm_message(payloads.next_snowflake(), ALEX, f"<@{VIVY}> psst"))
        assert await buffered_texts(h.probe) == []
        assert h.fake.requests == []


async def test_edits_and_deletes_change_the_buffer(engine: Engine) -> None:
    """An edit replaces the buffered text and a delete removes the message."""
    async with running_harness(engine) as h:
        typo = await h.say(ALEX, "I live in Austni")
        gone = await h.say(SAM, "oops, wrong channel")
        await h.say(SAM, "anyway, hello")
        await h.edit(ALEX, typo, "I live in Austin")
        await h.delete(gone)
        assert await buffered_texts(h.probe) == ["I live in Austin", "anyway, hello"]


async def test_the_rate_limit_answers_politely_once(engine: Engine) -> None:
    """Past two answers a minute the member is told once to slow down (the wait exact: the
    wall time stands still), then ignored."""
    limit = RateLimit(capacity=2, per_s=60.0)
    async with running_harness(engine, limit=limit, clock=StoppedClock.starting_at) as h:
        for n in range(4):
            await h.say(ALEX, f"<@{VIVY}> question {n}", mentions=(VIVY_USER,))
        sent = [body["content"] for body in h.fake.sent(CHANNEL)]
        assert len(sent) == 3
        assert "faster than I can think" in sent[2]
        assert "30 seconds" in sent[2]
        assert len(h.llm.chats) == 2
        assert replies(h, ReplyOutcome.RATE_LIMITED) == 2
        await h.say(SAM, f"<@{VIVY}> my turn", mentions=(VIVY_USER,))
        assert len(h.llm.chats) == 3


async def _remember(h: Harness, fact: str) -> None:
    body = await h.command(ALEX, "remember", {"fact": fact})
    assert "remember" in body["data"]["content"]


async def test_memory_reaches_the_chat_model_when_retrieval_is_on(engine: Engine) -> None:
    """With retrieval on, the member's stated fact is in the request's memory context."""
    async with running_harness(engine) as h:
        await _remember(h, "I have a dog named Bento")
        await h.say(ALEX, f"<@{VIVY}> what is my dog called?", mentions=(VIVY_USER,))
        [request] = h.llm.chats
        assert "<background_facts>" in request.memory_context
        assert "I have a dog named Bento" in request.memory_context
        assert "Bento" in h.fake.sent(CHANNEL)[0]["content"]


async def test_retrieval_disabled_sends_no_memory(engine: Engine) -> None:
    """With retrieval switched off the chat request carries no memory at all."""
    async with running_harness(engine, retrieval_enabled=False) as h:
        await _remember(h, "I have a dog named Bento")
        await h.say(ALEX, f"<@{VIVY}> what is my dog called?", mentions=(VIVY_USER,))
        [request] = h.llm.chats
        assert request.memory_context == ""
        assert "Bento" not in h.fake.sent(CHANNEL)[0]["content"]
        assert replies(h, ReplyOutcome.ANSWERED) == 1


async def test_capture_disabled_stores_nothing(engine: Engine) -> None:
    """With capture switched off nothing is buffered, yet mentions are still answered."""
    async with running_harness(engine, capture_enabled=False) as h:
        await h.say(ALEX, "I live in Austin")
        await h.say(ALEX, f"<@{VIVY}> hello", mentions=(VIVY_USER,))
        assert await h.probe.count("SELECT COUNT(*) FROM buffer_messages") == 0
        assert len(h.fake.sent(CHANNEL)) == 1


async def test_a_chat_failure_gives_a_short_apology(engine: Engine) -> None:
    """When the chat model is down the member gets an apology, still as a reply."""
    async with running_harness(engine, llm=ScriptedLLM(fail=True)) as h:
        asked = await h.say(ALEX, f"<@{VIVY}> are you there?", mentions=(VIVY_USER,))
        [sent] = h.fake.sent(CHANNEL)
        assert sent["content"] == APOLOGY
        assert sent["message_reference"]["message_id"] == str(asked)
        assert replies(h, ReplyOutcome.FAILED) == 1


async def test_mentions_are_passed_to_retrieval_without_vivy(engine: Engine) -> None:
    """A mentioned member's stated facts come along; Vivy's own mention is not a member."""
    async with running_harness(engine) as h:
        body = await h.command(SAM, "remember", {"fact": "I play the cello"})
        assert "cello" in body["data"]["content"]
        await h.say(
            ALEX,
            f"<@{VIVY}> what does <@{uid(SAM)}> play?",
            mentions=(VIVY_USER, SAM),
        )
        [request] = h.llm.chats
        assert request.turns[-1].text == "@Vivy what does @Sam play?"
        assert "I play the cello" in request.memory_context


async def test_a_bulk_delete_removes_every_message(engine: Engine) -> None:
    """A bulk deletion removes each of its messages from the buffer."""
    async with running_harness(engine) as h:
        first = await h.say(ALEX, "one")
        second = await h.say(SAM, "two")
        await h.say(SAM, "three")
        payload = {
            "ids": [str(first), str(second)],
            "channel_id": str(CHANNEL),
            "guild_id": str(GUILD),
        }
        factory = h.bot.event_factory
        await h.dispatch(factory.deserialize_guild_message_delete_bulk_event(h.shard, payload))
        assert await buffered_texts(h.probe) == ["three"]


async def test_the_gateway_gauge_follows_the_shard(engine: Engine) -> None:
    """``vivy_gateway_connected`` is 1 while the shard is connected and 0 after it drops."""
    async with running_harness(engine) as h:
        factory = h.bot.event_factory

        def gauge() -> float | None:
            return h.app.metrics.registry.get_sample_value("vivy_gateway_connected")

        assert gauge() == 0
        await h.dispatch(factory.deserialize_connected_event(h.shard))
        assert gauge() == 1
        await h.dispatch(factory.deserialize_disconnected_event(h.shard))
        assert gauge() == 0


async def test_a_forgotten_fact_is_gone_from_the_next_answer(engine: Engine) -> None:
    """After ``/memory forget`` the fact no longer reaches the chat model."""
    async with running_harness(engine) as h:
        await _remember(h, "I have a dog named Bento")
        question = f"<@{VIVY}> what is my dog called?"
        await h.say(ALEX, question, mentions=(VIVY_USER,))
        assert "Bento" in h.llm.chats[-1].memory_context
        await h.command(ALEX, "forget", {"text": "Bento"})
        await h.say(ALEX, question, mentions=(VIVY_USER,))
        assert "Bento" not in h.llm.chats[-1].memory_context
