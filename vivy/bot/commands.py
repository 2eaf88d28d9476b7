"""The ``/memory`` slash commands: what Vivy knows, and the member's say over it.

``/memory profile [user]``, ``remember <fact>``, ``forget <text>``, ``forget-me``,
``opt-out``, ``opt-in``, and for server managers ``lore <fact>`` and ``status``. Every
command is scoped to the guild it is used in and answered ephemerally, without pings. An
interaction is first reduced to an :class:`Invocation` (plain values), which
:meth:`MemoryCommands.answer` answers, through the members area of the storage port.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import hikari
import structlog

from vivy.app import App
from vivy.memory.dates import note_date, short_date
from vivy.memory.facts import PROFILE_SECTIONS
from vivy.memory.members import BufferedRef, MemberProfile, RememberOutcome
from vivy.metrics import CommandName, CommandOutcome
from vivy.state.gate import IncomingDelete
from vivy.state.profile import Rejection, check_fact_text

__all__ = [
    "COMMAND_NAME",
    "MANAGER_PERMISSIONS",
    "SUBCOMMANDS",
    "CommandReply",
    "Invocation",
    "MemoryCommands",
    "command_builders",
    "guess_section",
    "invocation_from",
    "register_commands",
]

log = structlog.get_logger(__name__)

#: The top-level slash command.
COMMAND_NAME = "memory"

#: Permissions that make a member a server manager (ADMINISTRATOR implies every other).
MANAGER_PERMISSIONS = hikari.Permissions.MANAGE_GUILD | hikari.Permissions.ADMINISTRATOR

#: Subcommand name -> metric label.
SUBCOMMANDS: Mapping[str, CommandName] = {
    "profile": CommandName.PROFILE,
    "remember": CommandName.REMEMBER,
    "forget": CommandName.FORGET,
    "forget-me": CommandName.FORGET_ME,
    "opt-out": CommandName.OPT_OUT,
    "opt-in": CommandName.OPT_IN,
    "lore": CommandName.LORE,
    "status": CommandName.STATUS,
}

#: Longest fact text the command options accept (the guards allow fewer words anyway).
MAX_OPTION_CHARS = 300

#: Reply length kept under Discord's limit.
_MAX_REPLY = 1900

_SECTION_TITLES: dict[str, str] = {section: section.capitalize() for section in PROFILE_SECTIONS}

_SECTION_HINTS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (section, re.compile(pattern, re.IGNORECASE))
    for section, pattern in (
        (
            "relationships",
            r"\b(my|our)\s+(wife|husband|partner|girlfriend|boyfriend|fianc[ée]e?|son|daughter"
            r"|kids?|children|mom|mother|dad|father|brother|sister|friend|dog|cat|pet)s?\b",
        ),
        ("skills", r"\b(i\s+can|i\s+know\s+how|i'?m\s+good\s+at|i\s+(code|program|speak))\b"),
        (
            "opinions",
            r"\b(i\s+(think|believe|prefer|hate|dislike)|in\s+my\s+opinion)\b",
        ),
        (
            "interests",
            r"\b(i\s+(like|love|enjoy|play|collect|watch|read)|i'?m\s+(into|a\s+fan\s+of))\b",
        ),
        (
            "bio",
            r"\b(i\s+(live|work|study|was\s+born|grew\s+up)|i'?m\s+(a|an|from|\d+)\b"
            r"|my\s+(name|job|age|birthday|pronouns))",
        ),
    )
)


@dataclass(frozen=True, slots=True)
class Invocation:
    """One use of a ``/memory`` subcommand, reduced to plain values."""

    guild_id: int
    user_id: int
    display_name: str
    is_manager: bool
    subcommand: str
    options: Mapping[str, str | int] = field(default_factory=dict)
    #: Display names of users named in options (from the interaction's resolved data).
    names: Mapping[int, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CommandReply:
    """The ephemeral answer to a command and how it is counted."""

    text: str
    outcome: CommandOutcome = CommandOutcome.OK


def guess_section(text: str) -> str:
    """The profile section a stated fact most likely belongs to (``other`` if unsure)."""
    for section, pattern in _SECTION_HINTS:
        if pattern.search(text):
            return section
    return "other"


def command_builders(rest: hikari.api.RESTClient) -> list[hikari.api.SlashCommandBuilder]:
    """The ``/memory`` command with its subcommands, ready for ``set_application_commands``."""

    def sub(name: str, description: str, *options: hikari.CommandOption) -> hikari.CommandOption:
        return hikari.CommandOption(
            type=hikari.OptionType.SUB_COMMAND,
            name=name,
            description=description,
            options=list(options),
        )

    def text(name: str, description: str) -> hikari.CommandOption:
        return hikari.CommandOption(
            type=hikari.OptionType.STRING,
            name=name,
            description=description,
            is_required=True,
            min_length=1,
            max_length=MAX_OPTION_CHARS,
        )

    builder = rest.slash_command_builder(COMMAND_NAME, "What Vivy remembers about you")
    builder.set_context_types([hikari.ApplicationContextType.GUILD])
    for option in (
        sub(
            "profile",
            "Show what Vivy remembers about you (managers: about anyone)",
            hikari.CommandOption(
                type=hikari.OptionType.USER,
                name="user",
                description="Whose profile to show (default: yours)",
                is_required=False,
            ),
        ),
        sub("remember", "Tell Vivy a fact about yourself", text("fact", "The fact")),
        sub("forget", "Make Vivy forget facts about you", text("text", "What to forget")),
        sub("forget-me", "Erase everything Vivy remembers about you in this server"),
        sub("opt-out", "Stop Vivy from remembering your messages in this server"),
        sub("opt-in", "Let Vivy remember your messages in this server again"),
        sub("lore", "Managers: tell Vivy a fact about this server", text("fact", "The fact")),
        sub("status", "Managers: how much Vivy remembers in this server"),
    ):
        builder.add_option(option)
    return [builder]


async def register_commands(
    rest: hikari.api.RESTClient, application_id: int, guild_ids: Sequence[int] = ()
) -> None:
    """Register ``/memory`` in each of ``guild_ids`` (instant), or globally when none."""
    commands = command_builders(rest)
    if not guild_ids:
        await rest.set_application_commands(application_id, commands)
        return
    for guild_id in guild_ids:
        await rest.set_application_commands(application_id, commands, guild=guild_id)


def invocation_from(interaction: hikari.CommandInteraction) -> Invocation | None:
    """The invocation behind a ``/memory`` interaction; None outside a guild or if malformed."""
    if interaction.guild_id is None or interaction.member is None or not interaction.options:
        return None
    sub = interaction.options[0]
    options: dict[str, str | int] = {}
    for option in sub.options or ():
        if isinstance(option.value, str | int) and not isinstance(option.value, bool):
            options[option.name] = option.value
    names: dict[int, str] = {}
    if interaction.resolved is not None:
        names.update(
            {
                int(i): user.global_name or user.username
                for i, user in interaction.resolved.users.items()
            }
        )
        names.update({int(i): m.display_name for i, m in interaction.resolved.members.items()})
    member = interaction.member
    return Invocation(
        guild_id=int(interaction.guild_id),
        user_id=int(member.id),
        display_name=member.display_name,
        is_manager=bool(member.permissions & MANAGER_PERMISSIONS),
        subcommand=sub.name,
        options=options,
        names=names,
    )


def _when(wall: float) -> str:
    return datetime.fromtimestamp(wall, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


class MemoryCommands:
    """Answers ``/memory`` interactions against the running app."""

    def __init__(self, app: App, *, forgotten: Callable[[], None] | None = None) -> None:
        self._app = app
        self._forgotten = forgotten

    def _memory_changed(self) -> None:
        """Tell whoever caches built memory (the retriever) that some of it was erased."""
        if self._forgotten is not None:
            self._forgotten()

    async def handle(self, interaction: hikari.CommandInteraction) -> None:
        """Answer one interaction ephemerally and count it."""
        invocation = invocation_from(interaction)
        if invocation is None:
            reply = CommandReply("Memory commands work inside a server.", CommandOutcome.DENIED)
            name: CommandName | None = None
        else:
            name = SUBCOMMANDS.get(invocation.subcommand)
            reply = await self.answer(invocation)
        if name is not None:
            self._app.metrics.commands.labels(name, reply.outcome).inc()
        await interaction.create_initial_response(
            hikari.ResponseType.MESSAGE_CREATE,
            reply.text,
            flags=hikari.MessageFlag.EPHEMERAL,
            mentions_everyone=False,
            user_mentions=False,
            role_mentions=False,
        )

    async def answer(self, invocation: Invocation) -> CommandReply:
        """The answer to ``invocation``; an unexpected failure becomes an apology."""
        handlers = {
            "profile": self._profile,
            "remember": self._remember,
            "forget": self._forget,
            "forget-me": self._forget_me,
            "opt-out": self._opt_out,
            "opt-in": self._opt_in,
            "lore": self._lore,
            "status": self._status,
        }
        handler = handlers.get(invocation.subcommand)
        if handler is None:
            return CommandReply("I don't know that command.", CommandOutcome.ERROR)
        bound = log.bind(guild_id=invocation.guild_id, user_id=invocation.user_id)
        try:
            return await handler(invocation)
        except Exception:
            bound.exception("memory command failed", subcommand=invocation.subcommand)
            return CommandReply(
                "Sorry, something went wrong on my side. Please try again later.",
                CommandOutcome.ERROR,
            )

    # Members ---------------------------------------------------------------------------------

    async def _profile(self, inv: Invocation) -> CommandReply:
        raw = inv.options.get("user", inv.user_id)
        target = int(raw)
        if target != inv.user_id and not inv.is_manager:
            return CommandReply(
                "You can only see what I remember about you. Server managers can look up others.",
                CommandOutcome.DENIED,
            )
        profile = await self._app.store.members.member_profile(inv.guild_id, target)
        own = target == inv.user_id
        name = "you" if own else (inv.names.get(target) or profile.display_name or "them")
        return CommandReply(_render_profile(profile, name, own))

    async def _remember(self, inv: Invocation) -> CommandReply:
        fact = " ".join(str(inv.options.get("fact", "")).split())
        refused = _refusal(fact)
        if refused is not None:
            return refused
        if await self._app.store.members.is_opted_out(inv.guild_id, inv.user_id):
            return CommandReply(
                "You've opted out of being remembered here. Use `/memory opt-in` first.",
                CommandOutcome.DENIED,
            )
        now = self._app.clock.now()
        label = f"stated by the member, {short_date(note_date(now))}"
        outcome = await self._app.store.members.remember_fact(
            inv.guild_id,
            inv.user_id,
            inv.display_name,
            guess_section(fact),
            fact,
            label,
            now,
        )
        if outcome is RememberOutcome.DUPLICATE:
            return CommandReply("I already remember that.")
        return CommandReply(f"Got it. I'll remember: “{fact}”")

    async def _forget(self, inv: Invocation) -> CommandReply:
        query = " ".join(str(inv.options.get("text", "")).split())
        removed = await self._app.store.members.forget_facts(
            inv.guild_id, inv.user_id, query, self._app.clock.now()
        )
        if not removed:
            return CommandReply(f"I couldn't find anything about you matching “{query}”.")
        self._memory_changed()
        lines = "\n".join(f"- {text}" for text in removed)
        return CommandReply(_fit(f"Forgotten:\n{lines}"))

    async def _forget_me(self, inv: Invocation) -> CommandReply:
        report = await self._app.store.members.forget_member(inv.guild_id, inv.user_id)
        self._memory_changed()
        await self._tell_actors(inv.guild_id, report.open_messages)
        return CommandReply(
            "Done. I've forgotten you in this server: "
            f"{report.facts} profile facts, {report.messages} buffered messages, "
            f"{report.notes} conversation notes you were part of or mentioned in, and "
            f"{report.other_facts} facts of other members that mentioned you."
        )

    async def _opt_out(self, inv: Invocation) -> CommandReply:
        self._app.router.set_opted_out(inv.guild_id, inv.user_id, True)
        refs = await self._app.store.members.set_opted_out(
            inv.guild_id,
            inv.user_id,
            inv.display_name,
            True,
            self._app.clock.now(),
        )
        self._memory_changed()
        await self._tell_actors(inv.guild_id, tuple(refs))
        return CommandReply(
            "You're opted out: I won't remember your messages in this server, and I've dropped "
            "the ones I was holding. What I already learned stays until you use "
            "`/memory forget-me`."
        )

    async def _opt_in(self, inv: Invocation) -> CommandReply:
        await self._app.store.members.set_opted_out(
            inv.guild_id,
            inv.user_id,
            inv.display_name,
            False,
            self._app.clock.now(),
        )
        self._app.router.set_opted_out(inv.guild_id, inv.user_id, False)
        return CommandReply("Welcome back! I'll remember our conversations in this server again.")

    async def _tell_actors(self, guild_id: int, refs: Sequence[BufferedRef]) -> None:
        """Let the channel actors drop deleted messages from their open buffers."""
        for ref in refs:
            await self._app.router.delete(IncomingDelete(guild_id, ref.channel_id, ref.message_id))

    # Managers --------------------------------------------------------------------------------

    async def _lore(self, inv: Invocation) -> CommandReply:
        if not inv.is_manager:
            return _managers_only()
        fact = " ".join(str(inv.options.get("fact", "")).split())
        refused = _refusal(fact)
        if refused is not None:
            return refused
        await self._app.store.members.add_lore(
            inv.guild_id, inv.user_id, fact, self._app.clock.now()
        )
        return CommandReply(f"Noted about this server: “{fact}”")

    async def _status(self, inv: Invocation) -> CommandReply:
        if not inv.is_manager:
            return _managers_only()
        s = await self._app.store.members.guild_status(inv.guild_id)
        last = _when(s.last_nightly_job) if s.last_nightly_job is not None else "never"
        return CommandReply(
            "**Memory in this server**\n"
            f"Conversation notes: {s.conversation_notes} (topic clusters: {s.topic_clusters})\n"
            f"Profile facts: {s.active_facts} about {s.members_with_facts} members\n"
            f"Buffers: {s.open_buffers} open, {s.closed_buffers} waiting for a note\n"
            f"Pending profile updates: {s.pending_updates}\n"
            f"Server lore: {s.lore}\n"
            f"Last nightly job: {last}"
        )


def _managers_only() -> CommandReply:
    return CommandReply(
        "Only server managers (Manage Server permission) can use this.", CommandOutcome.DENIED
    )


def _refusal(fact: str) -> CommandReply | None:
    """The polite refusal of a fact the guards reject, or None when it may be stored."""
    if not fact:
        return CommandReply("Tell me the fact to remember.", CommandOutcome.DENIED)
    rejection = check_fact_text(fact)
    if rejection is Rejection.INSTRUCTION:
        return CommandReply(
            "I can't remember that: it reads like an instruction to me (or a secret) rather than "
            "a fact. Try something like “I live in Austin” or “I play the cello”.",
            CommandOutcome.DENIED,
        )
    if rejection is not None:
        return CommandReply(
            "That's a bit long for one fact. Please keep it short, one fact at a time.",
            CommandOutcome.DENIED,
        )
    return None


def _render_profile(profile: MemberProfile, name: str, own: bool) -> str:
    """The profile as a short Discord message: facts by section, each with its source."""
    if not profile.facts:
        nothing = f"I don't remember anything about {name} yet."
        return nothing + (" (You're opted out here.)" if own and profile.opted_out else "")
    lines = [f"**What I remember about {name}**"]
    section = ""
    shown = 0
    for fact in profile.facts:
        entry = f"- {fact.text}  [{fact.source_label}]"
        header = (
            [] if fact.section == section else [f"{_SECTION_TITLES.get(fact.section, 'Other')}:"]
        )
        if sum(len(line) + 1 for line in lines + header) + len(entry) > _MAX_REPLY - 80:
            break
        lines += header
        lines.append(entry)
        section = fact.section
        shown += 1
    if shown < len(profile.facts):
        lines.append(f"…and {len(profile.facts) - shown} more.")
    if profile.note_count:
        plural = "s" if profile.note_count != 1 else ""
        lines.append(f"({profile.note_count} conversation note{plural} include {name}.)")
    if own and profile.opted_out:
        lines.append("You're opted out: I'm not remembering new messages of yours here.")
    return "\n".join(lines)


def _fit(text: str) -> str:
    """``text`` cut to fit one Discord message."""
    return text if len(text) <= _MAX_REPLY else text[: _MAX_REPLY - 1] + "…"
