"""Vivy's settings, read once from the environment at the entry point.

Every value has a default that runs the embedded setup (SQLite file, offline LLM provider when
no Gemini key is set). A value that cannot be used raises :class:`~vivy.errors.ConfigError`
naming the variable.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from vivy.errors import ConfigError

__all__ = ["BufferSettings", "Settings", "inactivity_window"]


@dataclass(frozen=True, slots=True)
class BufferSettings:
    """Limits of channel buffers (seed 002: 20–30 min of inactivity, 2 h max, 100 messages)."""

    inactivity_min_s: float = 20 * 60.0
    inactivity_max_s: float = 30 * 60.0
    max_age_s: float = 2 * 3600.0
    cap: int = 100
    seed: int = 0


def inactivity_window(settings: BufferSettings, channel_id: int, first_message_id: int) -> float:
    """The inactivity window of one buffer, drawn from a generator seeded by ``settings.seed``.

    It is a pure function of the seed, the channel and the buffer's first message, so it is
    deterministic in tests and the same after a restart.
    """
    low, high = settings.inactivity_min_s, settings.inactivity_max_s
    if high <= low:
        return low
    digest = hashlib.blake2b(
        f"{settings.seed}:{channel_id}:{first_message_id}".encode(), digest_size=8
    ).digest()
    fraction = int.from_bytes(digest, "big") / 2**64
    return round(low + fraction * (high - low), 3)


@dataclass(frozen=True, slots=True)
class Settings:
    """All of Vivy's configuration."""

    database: Path = Path("vivy.db")
    buffers: BufferSettings = field(default_factory=BufferSettings)
    allowed_guilds: frozenset[int] | None = None
    blacklisted_users: frozenset[int] = frozenset()
    blacklisted_channels: frozenset[int] = frozenset()
    capture_enabled: bool = True
    retrieval_enabled: bool = True
    min_note_messages: int = 2
    profile_concurrency: int = 4
    profile_delay_s: float = 12 * 3600.0
    import_concurrency: int = 4
    timezone: str = "UTC"
    min_cluster_notes: int = 3
    catchup_time_limit_s: float = 300.0
    metrics_host: str = "127.0.0.1"
    metrics_port: int = 9464
    api_token: str | None = None
    shutdown_grace_s: float = 10.0
    discord_token: str | None = None
    gemini_key: str | None = None

    @property
    def zone(self) -> ZoneInfo:
        """The IANA time zone of the midnight job."""
        return ZoneInfo(self.timezone)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Settings from ``VIVY_*`` variables (and the Discord and Gemini keys)."""
        reader = _Reader(environ)
        low = reader.number("VIVY_INACTIVITY_MIN_MINUTES", 20.0) * 60
        high = reader.number("VIVY_INACTIVITY_MAX_MINUTES", 30.0) * 60
        if high < low:
            raise ConfigError("VIVY_INACTIVITY_MAX_MINUTES must not be below the minimum")
        buffers = BufferSettings(
            inactivity_min_s=low,
            inactivity_max_s=high,
            max_age_s=reader.number("VIVY_MAX_BUFFER_MINUTES", 120.0) * 60,
            cap=int(reader.number("VIVY_BUFFER_CAP", 100, minimum=2)),
            seed=int(reader.number("VIVY_SEED", 0, minimum=0)),
        )
        settings = cls(
            database=Path(environ.get("VIVY_DB", "vivy.db")),
            buffers=buffers,
            allowed_guilds=reader.ids("VIVY_ALLOWED_GUILDS") or None,
            blacklisted_users=reader.ids("VIVY_BLACKLIST_USERS"),
            blacklisted_channels=reader.ids("VIVY_BLACKLIST_CHANNELS"),
            capture_enabled=reader.flag("VIVY_MEMORY_CAPTURE", True),
            retrieval_enabled=reader.flag("VIVY_MEMORY_RETRIEVAL", True),
            min_note_messages=int(reader.number("VIVY_MIN_NOTE_MESSAGES", 2, minimum=1)),
            profile_concurrency=int(reader.number("VIVY_PROFILE_CONCURRENCY", 4, minimum=1)),
            profile_delay_s=reader.number("VIVY_PROFILE_DELAY_MINUTES", 720.0) * 60,
            import_concurrency=int(reader.number("VIVY_IMPORT_CONCURRENCY", 4, minimum=1)),
            timezone=environ.get("VIVY_TIMEZONE", "UTC"),
            min_cluster_notes=int(reader.number("VIVY_MIN_CLUSTER_NOTES", 3, minimum=1)),
            catchup_time_limit_s=reader.number("VIVY_CATCHUP_SECONDS", 300.0),
            metrics_host=environ.get("VIVY_METRICS_HOST", "127.0.0.1"),
            metrics_port=int(reader.number("VIVY_METRICS_PORT", 9464, minimum=0)),
            api_token=environ.get("VIVY_API_TOKEN") or None,
            shutdown_grace_s=reader.number("VIVY_SHUTDOWN_GRACE_SECONDS", 10.0),
            discord_token=environ.get("DISCORD_TOKEN") or None,
            gemini_key=environ.get("MEMORY_GEMINI_TOKEN") or environ.get("GEMINI_API_KEY") or None,
        )
        try:
            settings.zone  # noqa: B018 - validates the zone name
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ConfigError(f"VIVY_TIMEZONE: unknown time zone {settings.timezone!r}") from exc
        return settings


class _Reader:
    """Parses typed values out of the environment with errors that name the variable."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    def number(self, name: str, default: float, *, minimum: float = 0.0) -> float:
        raw = self._environ.get(name)
        if raw is None or raw == "":
            return float(default)
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"{name}: expected a number, got {raw!r}") from None
        if value < minimum:
            raise ConfigError(f"{name}: must be at least {minimum:g}, got {raw!r}")
        return value

    def flag(self, name: str, default: bool) -> bool:
        raw = self._environ.get(name, "").strip().lower()
        if raw == "":
            return default
        if raw in {"1", "true", "yes", "on"}:
            return True
        if raw in {"0", "false", "no", "off"}:
            return False
        raise ConfigError(f"{name}: expected true or false, got {raw!r}")

    def ids(self, name: str) -> frozenset[int]:
        raw = self._environ.get(name, "")
        parts = [part.strip() for part in raw.replace(";", ",").split(",") if part.strip()]
        try:
            return frozenset(int(part) for part in parts)
        except ValueError:
            raise ConfigError(
                f"{name}: expected comma-separated Discord ids, got {raw!r}"
            ) from None
