"""A fake Discord REST API on 127.0.0.1 that records every request hikari sends it.

It serves the routes Vivy uses (current user, create message, trigger typing, get one
message, interaction callback, bulk-overwrite commands, the application) on an ephemeral
port, on the test's own event loop (aiohttp). Point hikari at it with
``GatewayBot(token, rest_url=fake.url)``. Messages Vivy sends are kept, so a later reply chain
can fetch them; tests can seed others. For ``vivy run`` it also serves a minimal gateway
websocket (``GET /gateway/bot`` points to it): HELLO, READY after IDENTIFY, heartbeat ACKs,
zlib-stream compressed, and :meth:`FakeDiscord.dispatch` pushes events to the connected bot.
:meth:`FakeDiscord.request_reconnect` sends a shard op 7 (RECONNECT); the bot's RESUME (op 6)
then gets the session's events it missed replayed, and RESUMED.
It recommends ``shards`` shards (``GET /gateway/bot``) and takes one websocket per shard the
bot starts: each IDENTIFY names its ``[shard_id, shard_count]`` (recorded in
:attr:`FakeDiscord.identified`), and a guild's events go to the shard Discord would send them
to, ``(guild_id >> 22) % shard_count``.

Guilds given as ``guilds={guild_id: [channel_id, ...]}`` are listed (unavailable) in READY and
then made available by a GUILD_CREATE with their text channels, on their own shard, as Discord
does after every READY. Each channel keeps a message history: MESSAGE_CREATE dispatched, and
the bot's own messages, join it; :meth:`FakeDiscord.add_history` adds a message without
dispatching it (sent while Vivy was down), and :meth:`FakeDiscord.post` sends one as a member
would (dispatched only if a bot is connected as its guild's shard). ``GET
/channels/{id}/messages`` serves the history as Discord does: ``limit`` 1 to 100 (default 50),
``after`` the oldest ``limit`` messages above an id, ``before`` the newest below one, neither
the newest; always newest first, without ``guild_id`` or ``member``. A channel in
:attr:`FakeDiscord.forbidden` answers 403 (Missing Access), and one with an event in
:attr:`FakeDiscord.history_gates` computes its page, then waits for the event before sending
it. It runs on any asyncio loop, so a plain asyncio program (a benchmark) can use it too.
"""

from __future__ import annotations

import bisect
import json
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from aiohttp import WSMsgType, web

from . import payloads

__all__ = ["FakeDiscord", "Recorded"]


@dataclass(frozen=True, slots=True)
class Recorded:
    """One request received: method, path below ``/api/v10``, query and JSON body."""

    method: str
    path: str
    query: dict[str, str]
    body: Any


class FakeDiscord:
    """The fake REST API; use ``async with FakeDiscord(bot_user) as fake``."""

    def __init__(
        self,
        bot_user: dict[str, Any],
        *,
        guild_id: int,
        shards: int = 1,
        guilds: Mapping[int, Iterable[int]] | None = None,
    ) -> None:
        self.bot_user = bot_user
        self.guild_id = guild_id
        self.shards = shards
        #: Text channel ids by guild; each guild becomes available after READY on its shard.
        self.guilds: dict[int, list[int]] = {g: list(c) for g, c in (guilds or {}).items()}
        #: Channels whose history answers 403 Missing Access.
        self.forbidden: set[int] = set()
        #: Channels whose history pages wait for the event before they are sent.
        self.history_gates: dict[int, anyio.Event] = {}
        self._history: dict[int, dict[int, dict[str, Any]]] = {}
        self._history_ids: dict[int, list[int]] = {}
        #: ``(shard_id, shard_count)`` of each IDENTIFY, in order.
        self.identified: list[tuple[int, int]] = []
        #: ``(shard_id, event name)`` of each DISPATCH sent.
        self.dispatched: list[tuple[int, str]] = []
        self._sockets: dict[int, tuple[web.WebSocketResponse, Any]] = {}
        #: Each shard's dispatches of its current session, for a RESUME to replay.
        self._session_events: dict[int, list[dict[str, Any]]] = {}
        #: Shards told to reconnect (op 7) whose session a RESUME may continue; their events
        #: wait in the session until then.
        self.resumable: set[int] = set()
        #: Shards whose session was resumed (op 6), in order.
        self.resumed: list[int] = []
        self._count = 1  # the shard count the bot identified with
        self.requests: list[Recorded] = []
        self.messages: dict[int, dict[str, Any]] = {}
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._seq = 0
        self.ready = anyio.Event()
        self.gateway_closed = anyio.Event()

    @property
    def url(self) -> str:
        """The ``rest_url`` to give hikari."""
        return f"http://127.0.0.1:{self._port}/api/v10"

    async def __aenter__(self) -> FakeDiscord:
        app = web.Application()
        app.router.add_get("/api/v10/users/@me", self._me)
        app.router.add_post("/api/v10/channels/{channel}/messages", self._create_message)
        app.router.add_get("/api/v10/channels/{channel}/messages", self._channel_messages)
        app.router.add_post("/api/v10/channels/{channel}/typing", self._typing)
        app.router.add_get("/api/v10/channels/{channel}/messages/{message}", self._get_message)
        app.router.add_post("/api/v10/interactions/{id}/{token}/callback", self._callback)
        app.router.add_put("/api/v10/applications/{app}/commands", self._commands)
        app.router.add_put("/api/v10/applications/{app}/guilds/{guild}/commands", self._commands)
        app.router.add_get("/api/v10/oauth2/applications/@me", self._application)
        app.router.add_get("/api/v10/gateway/bot", self._gateway_bot)
        app.router.add_get("/gateway", self._gateway)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self._port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # Views for assertions ------------------------------------------------------------------

    def sent(self, channel_id: int | None = None) -> list[dict[str, Any]]:
        """Bodies of the messages created (in one channel, or all), oldest first."""
        return [
            r.body
            for r in self.requests
            if r.method == "POST"
            and r.path.endswith("/messages")
            and (channel_id is None or r.path == f"/channels/{channel_id}/messages")
        ]

    def callbacks(self) -> list[dict[str, Any]]:
        """Bodies of the interaction callbacks, oldest first."""
        return [r.body for r in self.requests if r.path.endswith("/callback")]

    def typing(self) -> list[str]:
        """Paths of the typing triggers received."""
        return [r.path for r in self.requests if r.path.endswith("/typing")]

    def fetched(self) -> list[str]:
        """Paths of the single messages fetched."""
        return [r.path for r in self.requests if r.method == "GET" and "/messages/" in r.path]

    def history_reads(self, channel_id: int) -> list[dict[str, str]]:
        """Queries of the history pages of the channel asked for, oldest first."""
        path = f"/channels/{channel_id}/messages"
        return [r.query for r in self.requests if r.method == "GET" and r.path == path]

    def history(self, channel_id: int) -> list[dict[str, Any]]:
        """The channel's messages, oldest first."""
        messages = self._history.get(channel_id, {})
        return [messages[i] for i in self._history_ids.get(channel_id, [])]

    # History -------------------------------------------------------------------------------

    def add_history(self, payload: Mapping[str, Any]) -> None:
        """Add a message (a MESSAGE_CREATE payload) to its channel's history without
        dispatching it: a message sent while no bot listened."""
        channel_id, message_id = int(payload["channel_id"]), int(payload["id"])
        messages = self._history.setdefault(channel_id, {})
        if message_id not in messages:
            bisect.insort(self._history_ids.setdefault(channel_id, []), message_id)
        messages[message_id] = dict(payload)

    def _edit_history(self, payload: Mapping[str, Any]) -> None:
        found = self._history.get(int(payload["channel_id"]), {}).get(int(payload["id"]))
        if found is not None and "content" in payload:
            found["content"] = payload["content"]
            found["edited_timestamp"] = payload.get("edited_timestamp")

    def _delete_history(self, channel_id: int, message_ids: Iterable[int]) -> None:
        messages = self._history.get(channel_id, {})
        ids = self._history_ids.get(channel_id, [])
        for message_id in message_ids:
            if messages.pop(message_id, None) is not None:
                ids.remove(message_id)

    def shard_of(self, guild_id: int) -> int:
        """The shard Discord sends the guild's events to, for the shard count identified."""
        return (guild_id >> 22) % self._count

    async def post(self, payload: Mapping[str, Any]) -> bool:
        """Send a message as a member would: it joins its channel's history and reaches the
        bot as MESSAGE_CREATE if one is connected as its guild's shard. False means nobody
        received it (sent while Vivy was down)."""
        shard = self.shard_of(int(payload["guild_id"]))
        if shard not in self._sockets and shard not in self.resumable:
            self.add_history(payload)
            return False
        try:
            await self.dispatch("MESSAGE_CREATE", dict(payload), shard=shard)
        except ConnectionError:  # the socket is closing: the message stays in the history
            return False
        return True

    # Gateway -------------------------------------------------------------------------------

    async def dispatch(self, name: str, data: dict[str, Any], *, shard: int | None = None) -> None:
        """Send a DISPATCH event (``MESSAGE_CREATE``, ...) to the connected bot: to ``shard``,
        else to the shard of the event's guild (shard 0 without one)."""
        if shard is None:
            guild = data.get("guild_id")
            shard = self.shard_of(int(guild)) if guild is not None else 0
        if name == "MESSAGE_CREATE":
            self.add_history(data)
        elif name == "MESSAGE_UPDATE":
            self._edit_history(data)
        elif name == "MESSAGE_DELETE":
            self._delete_history(int(data["channel_id"]), [int(data["id"])])
        elif name == "MESSAGE_DELETE_BULK":
            self._delete_history(int(data["channel_id"]), [int(i) for i in data["ids"]])
        self._seq += 1
        self.dispatched.append((shard, name))
        event = {"op": 0, "t": name, "s": self._seq, "d": data}
        self._session_events.setdefault(shard, []).append(event)
        if shard in self.resumable:  # the session waits for its RESUME, which replays it
            return
        await self._send(event, shard=shard)

    async def request_reconnect(self, shard: int) -> None:
        """Tell the shard to reconnect (op 7), as Discord does before moving a session: the
        bot is expected to RESUME, and the shard's events wait for it."""
        self.resumable.add(shard)
        ws, compressor = self._sockets.pop(shard)
        raw = json.dumps({"op": 7, "d": None, "s": None, "t": None}).encode()
        await ws.send_bytes(compressor.compress(raw) + compressor.flush(zlib.Z_SYNC_FLUSH))

    async def _resume(
        self, ws: web.WebSocketResponse, compressor: Any, session_id: str, seq: int
    ) -> int:
        """Continue the shard's session named by ``session_id``: replay its events after
        ``seq`` on the new socket, then RESUMED. Returns the shard."""
        shard = int(session_id.rsplit("-", 1)[1])
        assert shard in self.resumable, f"shard {shard}'s session cannot be resumed"
        self.resumable.discard(shard)
        self._sockets[shard] = (ws, compressor)
        self.resumed.append(shard)
        for event in self._session_events.get(shard, []):
            if event["s"] > seq:
                await self._send(event, shard=shard)
        self._seq += 1
        resumed = {"op": 0, "t": "RESUMED", "s": self._seq, "d": {}}
        self._session_events[shard].append(resumed)
        await self._send(resumed, shard=shard)
        return shard

    async def _send(self, payload: dict[str, Any], *, shard: int = 0) -> None:
        assert shard in self._sockets, f"no bot is connected to the gateway as shard {shard}"
        ws, compressor = self._sockets[shard]
        raw = json.dumps(payload).encode()
        await ws.send_bytes(compressor.compress(raw) + compressor.flush(zlib.Z_SYNC_FLUSH))

    async def _gateway_bot(self, request: web.Request) -> web.Response:
        await self._record(request)
        # Every shard may identify at once, so hikari starts them in one window.
        limit = {
            "total": 1000,
            "remaining": 999,
            "reset_after": 0,
            "max_concurrency": 16,
        }
        url = f"ws://127.0.0.1:{self._port}/gateway"
        return web.json_response({"url": url, "shards": self.shards, "session_start_limit": limit})

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        assert request.query.get("compress") == "zlib-stream", "the fake speaks zlib-stream"
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        compressor = zlib.compressobj()
        hello = {"op": 10, "d": {"heartbeat_interval": 45_000}, "s": None, "t": None}
        raw = json.dumps(hello).encode()
        await ws.send_bytes(compressor.compress(raw) + compressor.flush(zlib.Z_SYNC_FLUSH))
        shard = 0
        async for frame in ws:
            if frame.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                continue
            message = json.loads(frame.data)
            op = message["op"]
            if op == 2:  # IDENTIFY
                shard, count = message["d"].get("shard", [0, 1])
                self.identified.append((shard, count))
                if not self._sockets and self.gateway_closed.is_set():  # a new run of the bot
                    self.gateway_closed = anyio.Event()
                self._sockets[shard], self._count = (ws, compressor), count
                self._session_events[shard] = []
                self.resumable.discard(shard)
                mine = [g for g in self.guilds if self.shard_of(g) == shard]
                await self.dispatch(
                    "READY",
                    {
                        "v": 10,
                        "user": self._own_user(),
                        "guilds": [{"id": str(g), "unavailable": True} for g in mine],
                        "session_id": f"fake-session-{shard}",
                        "resume_gateway_url": f"ws://127.0.0.1:{self._port}/gateway",
                        "shard": [shard, count],
                        "application": {"id": self.bot_user["id"], "flags": 0},
                    },
                    shard=shard,
                )
                for guild in mine:
                    await self.dispatch("GUILD_CREATE", self._guild_create(guild), shard=shard)
                if len(self._sockets) == count:
                    self.ready.set()
            elif op == 6:  # RESUME
                resume = message["d"]
                shard = await self._resume(ws, compressor, resume["session_id"], resume["seq"])
            elif op == 1:  # HEARTBEAT, answered on this socket (a reconnecting one too)
                raw = json.dumps({"op": 11, "d": None, "s": None, "t": None}).encode()
                await ws.send_bytes(compressor.compress(raw) + compressor.flush(zlib.Z_SYNC_FLUSH))
        if self._sockets.get(shard, (None,))[0] is ws:
            del self._sockets[shard]
        if not self._sockets and not self.resumable:
            self.gateway_closed.set()
            if self.ready.is_set():  # the next run of the bot waits for its own READY
                self.ready = anyio.Event()
        return ws

    def _guild_create(self, guild_id: int) -> dict[str, Any]:
        """The guild's GUILD_CREATE, each channel with the id of its newest message."""
        channels = self.guilds[guild_id]
        last = {c: ids[-1] for c in channels if (ids := self._history_ids.get(c))}
        return payloads.guild_create(guild_id, channels, last_message_ids=last)

    # Routes --------------------------------------------------------------------------------

    async def _record(self, request: web.Request) -> Any:
        raw = await request.read()
        body = json.loads(raw) if raw else None
        path = request.path.removeprefix("/api/v10")
        self.requests.append(Recorded(request.method, path, dict(request.query), body))
        return body

    def _own_user(self) -> dict[str, Any]:
        """The bot's user as ``/users/@me`` and READY carry it (with account fields)."""
        return {**self.bot_user, "mfa_enabled": False, "flags": 0, "verified": True}

    async def _me(self, request: web.Request) -> web.Response:
        await self._record(request)
        return web.json_response(self._own_user())

    async def _application(self, request: web.Request) -> web.Response:
        await self._record(request)
        return web.json_response(
            {
                "id": self.bot_user["id"],
                "name": "Vivy",
                "icon": None,
                "description": "A memory bot",
                "bot_public": True,
                "bot_require_code_grant": False,
                "owner": payloads.user(1, "owner"),
                "verify_key": "0" * 64,
                "team": None,
                "flags": 0,
                "approximate_guild_count": 1,
                "approximate_user_install_count": 0,
            }
        )

    async def _create_message(self, request: web.Request) -> web.Response:
        body = await self._record(request)
        channel_id = int(request.match_info["channel"])
        message_id = payloads.next_snowflake()
        reference = body.get("message_reference")
        message = payloads.message(
            message_id,
            self.bot_user,
            body.get("content", ""),
            channel_id=channel_id,
            guild_id=next((g for g, c in self.guilds.items() if channel_id in c), self.guild_id),
            reply_to=int(reference["message_id"]) if reference else None,
        )
        self.messages[message_id] = message
        self.add_history(message)
        return web.json_response(message)

    async def _channel_messages(self, request: web.Request) -> web.Response:
        await self._record(request)
        channel_id = int(request.match_info["channel"])
        if channel_id in self.forbidden:
            return web.json_response({"message": "Missing Access", "code": 50001}, status=403)
        query = request.query
        try:
            limit = int(query.get("limit", "50"))
            after, before = (int(query[k]) if k in query else None for k in ("after", "before"))
        except ValueError:
            return web.json_response({"message": "Invalid Form Body", "code": 50035}, status=400)
        if not 1 <= limit <= 100:
            return web.json_response({"message": "Invalid Form Body", "code": 50035}, status=400)
        ids = self._history_ids.get(channel_id, [])
        if after is not None:
            start = bisect.bisect_right(ids, after)
            chosen = ids[start : start + limit]
        elif before is not None:
            end = bisect.bisect_left(ids, before)
            chosen = ids[max(0, end - limit) : end]
        else:
            chosen = ids[-limit:]
        messages = self._history[channel_id] if chosen else {}
        page = [payloads.rest_message(messages[i]) for i in reversed(chosen)]  # newest first
        gate = self.history_gates.get(channel_id)
        if gate is not None:
            await gate.wait()
        return web.json_response(page)

    async def _typing(self, request: web.Request) -> web.Response:
        await self._record(request)
        return web.Response(status=204)

    async def _get_message(self, request: web.Request) -> web.Response:
        await self._record(request)
        found = self.messages.get(int(request.match_info["message"]))
        if found is None:
            return web.json_response({"message": "Unknown Message", "code": 10008}, status=404)
        return web.json_response(found)

    async def _callback(self, request: web.Request) -> web.Response:
        await self._record(request)
        interaction = {"id": request.match_info["id"], "type": 2}
        return web.json_response({"interaction": interaction})

    async def _commands(self, request: web.Request) -> web.Response:
        body = await self._record(request)
        application_id = request.match_info["app"]
        guild = request.match_info.get("guild")
        made = [
            {
                **command,
                "id": str(payloads.next_snowflake()),
                "application_id": application_id,
                "version": "1",
                "default_member_permissions": None,
                "type": command.get("type", 1),
                **({"guild_id": guild} if guild else {}),
            }
            for command in body
        ]
        return web.json_response(made)
