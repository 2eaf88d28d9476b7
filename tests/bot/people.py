"""The bot, guild, channels and members of the bot tests and the fleet benchmark.

Kept apart from ``conftest.py`` so that ``benchmarks/fleet.py`` can use them without the test
tools installed.
"""

from __future__ import annotations

import base64

from . import payloads

__all__ = [
    "ALEX",
    "CHANNEL",
    "GUILD",
    "JO",
    "OTHER_BOT",
    "OTHER_CHANNEL",
    "SAM",
    "TOKEN",
    "VIVY",
    "VIVY_USER",
]

VIVY = 1_000_000_000_000_000_001
GUILD = 2_000_000_000_000_000_002
CHANNEL = 3_000_000_000_000_000_003
OTHER_CHANNEL = 3_000_000_000_000_000_004
TOKEN = base64.b64encode(str(VIVY).encode()).decode().rstrip("=") + ".fake.token"

VIVY_USER = payloads.user(VIVY, "vivy", bot=True, global_name="Vivy")
ALEX = payloads.user(4_000_000_000_000_000_011, "alex_a", global_name="Alex")
SAM = payloads.user(4_000_000_000_000_000_012, "sam_s", global_name="Sam")
JO = payloads.user(4_000_000_000_000_000_013, "jo_j", global_name="Jo")
OTHER_BOT = payloads.user(4_000_000_000_000_000_099, "helper", bot=True)
