"""Table-driven tests of the ChannelBuffer state machine; no event loop anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

import vivy.state.buffer as buffer_module
from vivy.errors import IllegalTransition
from vivy.memory.buffers import BufferedMessage, CloseReason
from vivy.state.buffer import (
    TRANSITIONS,
    AppendMessages,
    BufferConfig,
    BufferSnapshot,
    BufferState,
    ChannelBuffer,
    CloseBuffer,
    DeadlineReached,
    DeleteMessage,
    EditMessage,
    Event,
    Ignore,
    IgnoreReason,
    MessageCreated,
    MessageDeleted,
    MessageEdited,
    MessagesArrived,
    OpenBuffer,
    Restored,
    Trigger,
    next_state,
    state_diagram,
)
from vivy.state.gate import IngestOutcome

T0 = 1_000_000.0
WINDOW = 1500.0
CONFIG = BufferConfig(inactivity_s=WINDOW, max_age_s=7200.0, cap=5)
S = BufferState
T = Trigger


def msg(message_id: int, at: float = T0) -> BufferedMessage:
    """A message from one author."""
    return BufferedMessage(message_id, author_id=7, author_name="alex", text="hi", created_at=at)


def created(message_id: int, at: float = T0, *, truncated: bool = False) -> MessageCreated:
    """A created message of channel #general."""
    return MessageCreated(msg(message_id, at), "general", truncated)


def arrived(*ids: int, at: float = T0) -> MessagesArrived:
    """A burst of messages with these ids."""
    return MessagesArrived(tuple(created(i, at) for i in ids))


def opened(at: float = T0, window: float = WINDOW) -> OpenBuffer:
    """The effect opening a buffer of #general at ``at``."""
    return OpenBuffer(started_at=at, inactivity_s=window, channel_name="general")


def machine_in(state: BufferState) -> ChannelBuffer:
    """A machine driven into ``state`` through legal events only (message 1, closed or not)."""
    machine = ChannelBuffer(CONFIG)
    if state is BufferState.EMPTY:
        return machine
    machine.handle(arrived(1), T0)
    if state is BufferState.CLOSED:
        machine.handle(DeadlineReached(T0 + WINDOW), T0 + WINDOW)
    assert machine.state is state
    return machine


def data(machine: ChannelBuffer) -> tuple[object, ...]:
    """Everything a transition may change."""
    return (
        machine.state,
        machine.config,
        machine.started_at,
        machine.last_message_at,
        set(machine.message_ids),
        machine.watermark,
    )


# The table ------------------------------------------------------------------------------


@pytest.mark.parametrize("state", list(BufferState), ids=lambda s: s.name)
@pytest.mark.parametrize("trigger", list(Trigger), ids=lambda t: t.name)
def test_the_table_is_total_with_one_next_state_per_pair(
    state: BufferState, trigger: Trigger
) -> None:
    """Every (state, trigger) pair has exactly one next state, or raises naming both."""
    target = TRANSITIONS[state].get(trigger)
    if target is not None:
        assert isinstance(target, BufferState)
        assert next_state(state, trigger) is target
        return
    with pytest.raises(IllegalTransition) as info:
        next_state(state, trigger)
    assert (info.value.state, info.value.event) == (state.name, trigger.name)
    assert state.name in str(info.value) and trigger.name in str(info.value)


#: Scenarios: a machine in a state, an event at a time, the table steps it takes, in order.
SCENARIOS: list[tuple[str, BufferState, Event, float, list[tuple[BufferState, Trigger]]]] = [
    ("first-message", S.EMPTY, arrived(1), T0, [(S.EMPTY, T.OPENED), (S.OPEN, T.APPENDED)]),
    (
        "first-burst-fills",
        S.EMPTY,
        arrived(*range(1, 6)),
        T0,
        [(S.EMPTY, T.OPENED), (S.OPEN, T.FILLED)],
    ),
    # Id 0 is at the watermark of a channel none of whose buffers closed yet.
    ("duplicate-empty", S.EMPTY, arrived(0), T0, [(S.EMPTY, T.DUPLICATES)]),
    ("edit-empty", S.EMPTY, MessageEdited(9, "x"), T0, [(S.EMPTY, T.EDITED)]),
    ("delete-empty", S.EMPTY, MessageDeleted(9), T0, [(S.EMPTY, T.DELETED)]),
    ("timer-empty", S.EMPTY, DeadlineReached(T0), T0, [(S.EMPTY, T.STALE_DEADLINE)]),
    (
        "restore-open",
        S.EMPTY,
        Restored(BufferSnapshot(T0, T0, frozenset({1}), WINDOW), 0),
        T0 + 1,
        [(S.EMPTY, T.RESTORED)],
    ),
    ("restore-none", S.EMPTY, Restored(None, 4), T0, [(S.EMPTY, T.RESTORED_NONE)]),
    ("append", S.OPEN, arrived(2), T0 + 1, [(S.OPEN, T.APPENDED)]),
    ("duplicate-open", S.OPEN, arrived(1), T0 + 1, [(S.OPEN, T.DUPLICATES)]),
    (
        "late",
        S.OPEN,
        arrived(2, at=T0 + 7200),
        T0 + 7200,
        [(S.OPEN, T.LATE), (S.CLOSED, T.OPENED), (S.OPEN, T.APPENDED)],
    ),
    ("edit-open", S.OPEN, MessageEdited(1, "x"), T0, [(S.OPEN, T.EDITED)]),
    ("delete-open", S.OPEN, MessageDeleted(1), T0, [(S.OPEN, T.DELETED)]),
    (
        "deadline",
        S.OPEN,
        DeadlineReached(T0 + WINDOW),
        T0 + WINDOW,
        [(S.OPEN, T.DEADLINE_PASSED)],
    ),
    ("stale-timer", S.OPEN, DeadlineReached(T0 + 10), T0 + 10, [(S.OPEN, T.STALE_DEADLINE)]),
    ("duplicate-closed", S.CLOSED, arrived(1), T0 + 1, [(S.CLOSED, T.DUPLICATES)]),
    (
        "next-buffer",
        S.CLOSED,
        arrived(2),
        T0 + 2000,
        [(S.CLOSED, T.OPENED), (S.OPEN, T.APPENDED)],
    ),
    ("edit-closed", S.CLOSED, MessageEdited(1, "x"), T0, [(S.CLOSED, T.EDITED)]),
    ("delete-closed", S.CLOSED, MessageDeleted(1), T0, [(S.CLOSED, T.DELETED)]),
    ("timer-closed", S.CLOSED, DeadlineReached(T0), T0, [(S.CLOSED, T.STALE_DEADLINE)]),
]


@pytest.mark.parametrize(
    ("state", "event", "now", "steps"),
    [scenario[1:] for scenario in SCENARIOS],
    ids=[scenario[0] for scenario in SCENARIOS],
)
def test_events_take_the_table_steps(
    monkeypatch: pytest.MonkeyPatch,
    state: BufferState,
    event: Event,
    now: float,
    steps: list[tuple[BufferState, Trigger]],
) -> None:
    """An input event is refined into triggers, each moving to the table's one next state."""
    machine = machine_in(state)
    taken: list[tuple[BufferState, Trigger]] = []

    def recording(source: BufferState, trigger: Trigger) -> BufferState:
        taken.append((source, trigger))
        return next_state(source, trigger)

    monkeypatch.setattr(buffer_module, "next_state", recording)
    machine.handle(event, now)
    assert taken == steps
    last_source, last_trigger = steps[-1]
    assert machine.state is TRANSITIONS[last_source][last_trigger]


def test_the_scenarios_cover_every_legal_pair() -> None:
    """Every entry of the table is taken by some scenario above."""
    covered = {step for scenario in SCENARIOS for step in scenario[4]}
    legal = {
        (state, trigger) for state, by_trigger in TRANSITIONS.items() for trigger in by_trigger
    }
    assert covered == legal


@pytest.mark.parametrize("state", [S.OPEN, S.CLOSED], ids=lambda s: s.name)
def test_an_illegal_event_raises_and_changes_nothing(state: BufferState) -> None:
    """A restore once the machine runs is refused naming state and trigger; nothing changes."""
    machine = machine_in(state)
    before = data(machine)
    with pytest.raises(IllegalTransition) as info:
        machine.handle(Restored(BufferSnapshot(T0, T0, frozenset({3}), 60.0), 9), T0 + 20)
    assert (info.value.state, info.value.event) == (state.name, "RESTORED")
    assert data(machine) == before


# Messages -------------------------------------------------------------------------------


def test_first_message_opens_and_arms_both_timers() -> None:
    """The first message opens the buffer, stores the message and arms both deadlines."""
    machine = ChannelBuffer(CONFIG)
    effects = machine.handle(arrived(1), T0)
    assert effects == [opened(), AppendMessages((msg(1),), T0)]
    assert machine.state is BufferState.OPEN
    assert (machine.inactivity_deadline, machine.max_age_deadline) == (T0 + WINDOW, T0 + 7200.0)
    assert machine.next_deadline == T0 + WINDOW


def test_each_buffer_takes_the_window_of_its_first_message() -> None:
    """The window function gives every new buffer its inactivity window, by first message id."""
    machine = ChannelBuffer(CONFIG, window=lambda first: 1000.0 + first)
    assert machine.handle(arrived(3, 4), T0)[0] == opened(window=1003.0)
    machine.handle(DeadlineReached(T0 + 1003.0), T0 + 1003.0)
    assert machine.handle(arrived(8), T0 + 2000)[0] == opened(T0 + 2000, 1008.0)
    assert machine.next_deadline == T0 + 2000 + 1008.0


def test_a_burst_is_one_append_and_moves_the_deadline_once() -> None:
    """Messages taken together are appended by one effect, in order, at the burst's time."""
    machine = machine_in(BufferState.OPEN)
    effects = machine.handle(arrived(3, 2, 4), T0 + 600)
    assert effects == [AppendMessages((msg(3), msg(2), msg(4)), T0 + 600)]
    assert machine.message_ids == {1, 2, 3, 4}
    assert (machine.inactivity_deadline, machine.max_age_deadline) == (T0 + 600 + WINDOW, T0 + 7200)


def test_an_empty_burst_is_refused() -> None:
    """A burst without messages is a caller's bug, refused before anything changes."""
    machine = machine_in(BufferState.OPEN)
    before = data(machine)
    with pytest.raises(ValueError, match="at least one message"):
        machine.handle(MessagesArrived(()), T0 + 1)
    assert data(machine) == before


def test_duplicate_message_is_ignored() -> None:
    """A redelivered message id in the open buffer changes nothing."""
    machine = machine_in(BufferState.OPEN)
    assert machine.handle(arrived(1), T0 + 5) == [Ignore(IgnoreReason.DUPLICATE, (1,))]
    assert machine.message_ids == frozenset({1})
    assert machine.last_message_at == T0


def test_duplicates_in_a_burst_are_named_and_the_rest_stored_once() -> None:
    """A burst's ids already buffered, or repeated within it, are ignored by id."""
    machine = machine_in(BufferState.OPEN)
    effects = machine.handle(arrived(2, 1, 3, 2), T0 + 5)
    assert effects == [
        AppendMessages((msg(2), msg(3)), T0 + 5),
        Ignore(IgnoreReason.DUPLICATE, (1, 2)),
    ]
    assert machine.message_ids == {1, 2, 3}


def test_a_message_of_a_closed_buffer_is_a_duplicate_by_the_watermark() -> None:
    """Once a buffer closes, its ids and older ones are duplicates: no buffer opens for them."""
    machine = machine_in(BufferState.CLOSED)
    assert machine.watermark == 1
    assert machine.handle(arrived(1, 0), T0 + 2000) == [Ignore(IgnoreReason.DUPLICATE, (1, 0))]
    assert machine.state is BufferState.CLOSED


def test_message_past_max_age_closes_then_opens_the_next_buffer() -> None:
    """A message arriving past the max age closes the old buffer first and opens a new one."""
    machine = machine_in(BufferState.OPEN)
    late = T0 + 7200
    effects = machine.handle(arrived(9, 1, 10, at=late), late)
    assert effects == [
        CloseBuffer(CloseReason.MAX_AGE, closed_at=late),
        opened(late),
        AppendMessages((msg(9, late), msg(10, late)), late),
        Ignore(IgnoreReason.DUPLICATE, (1,)),
    ]
    assert machine.state is BufferState.OPEN
    assert (machine.message_ids, machine.watermark) == ({9, 10}, 1)


def test_only_duplicates_past_max_age_leave_the_buffer_to_its_timer() -> None:
    """A redelivery past the max age opens no new buffer: the timer closes this one."""
    machine = machine_in(BufferState.OPEN)
    assert machine.handle(arrived(1), T0 + 7200) == [Ignore(IgnoreReason.DUPLICATE, (1,))]
    assert machine.state is BufferState.OPEN


def test_cap_closes_the_buffer_with_the_last_message_in_it() -> None:
    """The message that reaches the cap is stored, then the buffer closes."""
    machine = machine_in(BufferState.OPEN)
    for i in range(2, 5):
        machine.handle(arrived(i), T0 + i)
    effects = machine.handle(arrived(5), T0 + 5)
    assert effects == [AppendMessages((msg(5),), T0 + 5), CloseBuffer(CloseReason.CAP, T0 + 5)]
    assert machine.state is BufferState.CLOSED
    assert machine.next_deadline is None


def test_a_burst_past_the_cap_opens_the_next_buffer_for_the_rest() -> None:
    """A first burst longer than the cap fills the buffer, closes it, and opens the next."""
    machine = ChannelBuffer(CONFIG)
    effects = machine.handle(arrived(*range(1, 9)), T0)
    assert effects == [
        opened(),
        AppendMessages(tuple(msg(i) for i in range(1, 6)), T0),
        CloseBuffer(CloseReason.CAP, T0),
        opened(),
        AppendMessages((msg(6), msg(7), msg(8)), T0),
    ]
    assert machine.state is BufferState.OPEN
    assert (machine.message_ids, machine.watermark) == ({6, 7, 8}, 5)


# Deadlines ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("now", "reason"),
    [(T0 + WINDOW, CloseReason.INACTIVITY), (T0 + 7200.0, CloseReason.MAX_AGE)],
)
def test_deadlines_close(now: float, reason: CloseReason) -> None:
    """A reached deadline closes the buffer for its reason."""
    machine = machine_in(BufferState.OPEN)
    if reason is CloseReason.MAX_AGE:  # keep it busy so only the max age is due
        machine.handle(arrived(2), now - 100)
    assert machine.handle(DeadlineReached(now), now) == [CloseBuffer(reason, now)]
    assert machine.state is BufferState.CLOSED


def test_a_timer_that_rang_is_due_even_if_the_wall_time_reads_a_hair_early() -> None:
    """The deadline the timer rang for is reached: float rounding in ``now`` cannot undo it."""
    machine = machine_in(BufferState.OPEN)
    early = T0 + WINDOW - 1e-9
    assert machine.handle(DeadlineReached(T0 + WINDOW), early) == [
        CloseBuffer(CloseReason.INACTIVITY, T0 + WINDOW)
    ]


def test_stale_timer_is_ignored() -> None:
    """A timer armed before a message moved the deadline changes nothing."""
    machine = machine_in(BufferState.OPEN)
    machine.handle(arrived(2), T0 + 100)
    effects = machine.handle(DeadlineReached(T0 + WINDOW), T0 + WINDOW)
    assert effects == [Ignore(IgnoreReason.STALE_TIMER)]
    assert machine.state is BufferState.OPEN
    assert machine.next_deadline == T0 + 100 + WINDOW


def test_a_stale_timer_that_rings_late_still_closes_a_buffer_whose_deadline_passed() -> None:
    """A busy actor hearing an old timer after the current deadline closes at its own time."""
    machine = machine_in(BufferState.OPEN)
    machine.handle(arrived(2), T0 + 100)
    later = T0 + 100 + WINDOW + 5
    assert machine.handle(DeadlineReached(T0 + WINDOW), later) == [
        CloseBuffer(CloseReason.INACTIVITY, later)
    ]


# Edits and deletes ----------------------------------------------------------------------


@pytest.mark.parametrize("state", list(BufferState), ids=lambda s: s.name)
def test_edits_and_deletes_are_one_effect_each_in_any_state(state: BufferState) -> None:
    """Edits and deletes go to wherever the message is stored; a deleted id leaves the buffer."""
    machine = machine_in(state)
    assert machine.handle(MessageEdited(1, "new"), T0 + 1) == [EditMessage(1, "new", T0 + 1)]
    assert machine.handle(MessageEdited(8, "x"), T0 + 2) == [EditMessage(8, "x", T0 + 2)]
    assert machine.handle(MessageDeleted(8), T0 + 3) == [DeleteMessage(8)]
    assert machine.handle(MessageDeleted(1), T0 + 4) == [DeleteMessage(1)]
    assert machine.message_ids == frozenset()
    assert machine.state is state


# Restoring ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("snapshot", "now", "state", "effects"),
    [
        (BufferSnapshot(T0, T0 + 100, frozenset({1}), WINDOW), T0 + 200, S.OPEN, []),
        (
            BufferSnapshot(T0, T0 + 100, frozenset({1}), WINDOW),
            T0 + 100 + WINDOW + 1,
            S.CLOSED,
            [CloseBuffer(CloseReason.INACTIVITY, T0 + 100 + WINDOW + 1)],
        ),
        (
            BufferSnapshot(T0, T0 + 7000, frozenset({1}), WINDOW),
            T0 + 7300,
            S.CLOSED,
            [CloseBuffer(CloseReason.MAX_AGE, T0 + 7300)],
        ),
    ],
    ids=["open-in-time", "inactivity-passed-while-down", "max-age-passed"],
)
def test_restore_recomputes_deadlines_from_persisted_times(
    snapshot: BufferSnapshot, now: float, state: BufferState, effects: list[object]
) -> None:
    """Restoring keeps persisted timestamps: remaining time is honoured, passed deadlines close."""
    machine = ChannelBuffer(BufferConfig(inactivity_s=999.0))
    assert machine.handle(Restored(snapshot, 0), now) == effects
    assert machine.state is state
    assert machine.config.inactivity_s == WINDOW
    assert (machine.inactivity_deadline, machine.max_age_deadline) == (
        snapshot.last_message_at + WINDOW,
        snapshot.started_at + 7200,
    )


def test_a_restored_watermark_makes_old_messages_duplicates() -> None:
    """A channel without an open buffer restores its watermark: older ids are duplicates."""
    machine = ChannelBuffer(CONFIG)
    assert machine.handle(Restored(None, 40), T0) == []
    assert machine.state is BufferState.EMPTY
    effects = machine.handle(arrived(39, 41), T0)
    assert effects == [
        opened(),
        AppendMessages((msg(41),), T0),
        Ignore(IgnoreReason.DUPLICATE, (39,)),
    ]


# Planning a batch and its outcomes -------------------------------------------------------


def test_a_batch_plan_answers_every_item_from_the_storage_results() -> None:
    """Creations, edits and deletes of one batch get their outcomes from what storage found."""
    machine = machine_in(BufferState.OPEN)
    batch = [
        created(2),
        created(3, truncated=True),
        created(1),
        MessageEdited(2, "fixed"),
        MessageDeleted(77),
        created(4),
        created(5),
    ]
    plan = machine.plan(batch, T0 + 10)
    assert plan.effects == [
        AppendMessages((msg(2), msg(3)), T0 + 10),
        Ignore(IgnoreReason.DUPLICATE, (1,)),
        EditMessage(2, "fixed", T0 + 10),
        DeleteMessage(77),
        AppendMessages((msg(4), msg(5)), T0 + 10),
        CloseBuffer(CloseReason.CAP, T0 + 10),
    ]
    # The delete found nothing; another buffer already held message 4 (a replay).
    outcomes = plan.outcomes({2: True, 3: False}, frozenset({4}))
    assert outcomes == [
        IngestOutcome.STORED,
        IngestOutcome.TRUNCATED,
        IngestOutcome.DUPLICATE,
        IngestOutcome.EDITED,
        IngestOutcome.UNKNOWN_DELETE,
        IngestOutcome.DUPLICATE,
        IngestOutcome.STORED,
    ]


def test_an_edit_after_the_cap_closed_the_buffer_in_the_same_batch_is_planned() -> None:
    """A batch may go on after its creations filled the buffer: the edit still finds its row."""
    machine = machine_in(BufferState.OPEN)
    plan = machine.plan([*(created(i) for i in range(2, 6)), MessageEdited(5, "x")], T0 + 1)
    assert plan.effects[-2:] == [CloseBuffer(CloseReason.CAP, T0 + 1), EditMessage(5, "x", T0 + 1)]
    assert plan.outcomes({2: False}, frozenset())[-1] is IngestOutcome.UNKNOWN_EDIT
    assert machine.state is BufferState.CLOSED


def test_state_diagram_is_generated_from_the_table() -> None:
    """Every table entry appears in the generated diagram, which the docs show as it is."""
    diagram = state_diagram()
    page = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
    assert f"```mermaid\n{diagram}\n```" in page.read_text(encoding="utf-8")
    for source, by_trigger in TRANSITIONS.items():
        for trigger, target in by_trigger.items():
            assert f"{source.name} --> {target.name}: {trigger.name}" in diagram
