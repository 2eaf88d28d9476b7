"""Vivy on Discord: the hikari gateway adapter, answers to members and ``/memory`` commands.

:mod:`vivy.bot.gateway` is the only asyncio-only code of Vivy; :mod:`vivy.bot.reply` holds the
pure decisions (when to answer, rate limits, chunking) and :mod:`vivy.bot.commands` the slash
commands, which read and write through the storage port's members area.
"""

from __future__ import annotations

from vivy.bot.commands import CommandReply, Invocation, MemoryCommands, register_commands
from vivy.bot.gateway import INTENTS, Gateway
from vivy.bot.reply import RateLimit, ReplyRateLimiter, split_message

__all__ = [
    "INTENTS",
    "CommandReply",
    "Gateway",
    "Invocation",
    "MemoryCommands",
    "RateLimit",
    "ReplyRateLimiter",
    "register_commands",
    "split_message",
]
