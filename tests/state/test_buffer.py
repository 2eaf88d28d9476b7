"""Table-driven tests of the ChannelBuffer state machine; no event loop anywhere."""

from __future__ import annotations

import pytest

from vivy.errors import IllegalTransition
from vivy.state.buffer import (
    TRANSITIONS,
    AppendMessage,
    BufferConfig,
    BufferedMessage,
    BufferSnapshot,
    BufferState,
    ChannelBuffer,
    CloseBuffer,
    CloseReason,
    Event,
    HandedOff,
    HandOff,
    Ignore,
    IgnoreReason,
    InactivityDeadlineReached,
    MaxAgeDeadlineReached,
    MessageArrived,
    MessageDeleted,
    MessageEdited,
    NoteCommitted,
    NoteFailed,
    OpenBuffer,
    RemoveMessage,
    RemoveStoredMessage,
    Restored,
    StartNextBuffer,
    UpdateMessage,
    UpdateStoredMessage,
    state_diagram,
)

T0 = 1_000_000.0
WINDOW = 1500.0
CONFIG = BufferConfig(inactivity_s=WINDOW, max_age_s=7200.0, cap=5)


def msg(message_id: int, at: float = T0) -> BufferedMessage:
    """A message from one author."""
    return BufferedMessage(message_id, author_id=7, author_name="alex", text="hi", created_at=at)


def machine_in(state: BufferState) -> ChannelBuffer:
    """A machine driven into ``state`` through legal events only."""
    machine = ChannelBuffer(CONFIG)
    if state is BufferState.EMPTY:
        return machine
    machine.handle(MessageArrived(msg(1)), T0)
    if state is BufferState.OPEN:
        return machine
    machine.handle(InactivityDeadlineReached(), T0 + WINDOW)
    if state is BufferState.CLOSED:
        return machine
    machine.handle(HandedOff(), T0 + WINDOW)
    if state is BufferState.HANDED_OFF:
        return machine
    machine.handle(NoteCommitted(1), T0 + WINDOW)
    assert machine.state is BufferState.NOTED
    return machine


SAMPLE_EVENTS: list[Event] = [
    MessageArrived(msg(2, T0 + 10)),
    MessageEdited(1, "edited"),
    MessageDeleted(1),
    InactivityDeadlineReached(),
    MaxAgeDeadlineReached(),
    Restored(BufferSnapshot(False, T0, T0, frozenset({1}), WINDOW)),
    HandedOff(),
    NoteCommitted(3),
    NoteFailed("boom"),
]

LEGAL = [
    (state, event)
    for state in BufferState
    for event in SAMPLE_EVENTS
    if type(event) in TRANSITIONS[state]
]
ILLEGAL = [
    (state, event)
    for state in BufferState
    for event in SAMPLE_EVENTS
    if type(event) not in TRANSITIONS[state]
]


@pytest.mark.parametrize(
    ("state", "event"), LEGAL, ids=lambda v: getattr(v, "name", type(v).__name__)
)
def test_legal_transitions_land_in_an_allowed_state(state: BufferState, event: Event) -> None:
    """Every legal (state, event) pair lands in one of the table's target states."""
    machine = machine_in(state)
    machine.handle(event, T0 + 20)
    assert machine.state in TRANSITIONS[state][type(event)]


@pytest.mark.parametrize(
    ("state", "event"), ILLEGAL, ids=lambda v: getattr(v, "name", type(v).__name__)
)
def test_illegal_transitions_raise_and_change_nothing(state: BufferState, event: Event) -> None:
    """An illegal event raises an error naming state and event, and the machine is unchanged."""
    machine = machine_in(state)
    before = (machine.state, machine.started_at, machine.last_message_at, set(machine.message_ids))
    with pytest.raises(IllegalTransition) as info:
        machine.handle(event, T0 + 20)
    assert info.value.state == state.name
    assert info.value.event == type(event).__name__
    assert state.name in str(info.value) and type(event).__name__ in str(info.value)
    assert (
        machine.state,
        machine.started_at,
        machine.last_message_at,
        machine.message_ids,
    ) == before


def test_first_message_opens_and_arms_both_timers() -> None:
    """The first message opens the buffer, stores the message and arms both deadlines."""
    machine = ChannelBuffer(CONFIG)
    effects = machine.handle(MessageArrived(msg(1)), T0)
    assert effects == [OpenBuffer(started_at=T0, inactivity_s=WINDOW), AppendMessage(msg(1), T0)]
    assert machine.state is BufferState.OPEN
    assert (machine.inactivity_deadline, machine.max_age_deadline) == (T0 + WINDOW, T0 + 7200.0)
    assert machine.next_deadline == T0 + WINDOW


def test_each_message_pushes_the_inactivity_deadline() -> None:
    """A later message moves the inactivity deadline but never the max-age deadline."""
    machine = machine_in(BufferState.OPEN)
    effects = machine.handle(MessageArrived(msg(2)), T0 + 600)
    assert effects == [AppendMessage(msg(2), T0 + 600)]
    assert (machine.inactivity_deadline, machine.max_age_deadline) == (T0 + 600 + WINDOW, T0 + 7200)


def test_duplicate_message_is_ignored() -> None:
    """A redelivered message id in the open buffer changes nothing."""
    machine = machine_in(BufferState.OPEN)
    assert machine.handle(MessageArrived(msg(1)), T0 + 5) == [Ignore(IgnoreReason.DUPLICATE)]
    assert machine.message_ids == frozenset({1})


def test_message_past_max_age_closes_then_starts_next_buffer() -> None:
    """A message arriving past the max age closes the old buffer first and goes to a new one."""
    machine = machine_in(BufferState.OPEN)
    late = msg(9, T0 + 7200)
    effects = machine.handle(MessageArrived(late), T0 + 7200)
    assert effects == [
        CloseBuffer(CloseReason.MAX_AGE, closed_at=T0 + 7200),
        HandOff(),
        StartNextBuffer(late),
    ]
    assert machine.state is BufferState.CLOSED
    assert 9 not in machine.message_ids


def test_cap_closes_the_buffer_with_the_last_message_in_it() -> None:
    """The message that reaches the cap is stored, then the buffer closes."""
    machine = machine_in(BufferState.OPEN)
    for i in range(2, 5):
        machine.handle(MessageArrived(msg(i)), T0 + i)
    effects = machine.handle(MessageArrived(msg(5)), T0 + 5)
    closed = CloseBuffer(CloseReason.CAP, T0 + 5)
    assert effects == [AppendMessage(msg(5), T0 + 5), closed, HandOff()]
    assert machine.state is BufferState.CLOSED


@pytest.mark.parametrize(
    ("event", "now", "reason"),
    [
        (InactivityDeadlineReached(), T0 + WINDOW, CloseReason.INACTIVITY),
        (MaxAgeDeadlineReached(), T0 + 7200.0, CloseReason.MAX_AGE),
    ],
)
def test_deadlines_close(event: Event, now: float, reason: CloseReason) -> None:
    """A reached deadline closes the buffer for its reason and asks for a hand-off."""
    machine = machine_in(BufferState.OPEN)
    if reason is CloseReason.MAX_AGE:  # keep it busy so only the max age is due
        machine.handle(MessageArrived(msg(2)), now - 100)
    assert machine.handle(event, now) == [CloseBuffer(reason, now), HandOff()]


def test_stale_timer_is_ignored() -> None:
    """A timer that fires before the current deadline (a message moved it) changes nothing."""
    machine = machine_in(BufferState.OPEN)
    machine.handle(MessageArrived(msg(2)), T0 + 100)
    effects = machine.handle(InactivityDeadlineReached(), T0 + WINDOW)
    assert effects == [Ignore(IgnoreReason.STALE_TIMER)]
    assert machine.state is BufferState.OPEN
    assert machine.next_deadline == T0 + 100 + WINDOW


def test_edits_and_deletes_of_buffered_and_other_messages() -> None:
    """Edits/deletes of this buffer's messages act on it; others go to wherever they are stored."""
    machine = machine_in(BufferState.OPEN)
    assert machine.handle(MessageEdited(1, "new"), T0 + 1) == [UpdateMessage(1, "new", T0 + 1)]
    assert machine.handle(MessageEdited(8, "x"), T0 + 2) == [UpdateStoredMessage(8, "x", T0 + 2)]
    assert machine.handle(MessageDeleted(8), T0 + 3) == [RemoveStoredMessage(8)]
    assert machine.handle(MessageDeleted(1), T0 + 4) == [RemoveMessage(1)]
    assert machine.message_ids == frozenset()


@pytest.mark.parametrize(
    ("snapshot", "now", "state", "effects"),
    [
        (
            BufferSnapshot(False, T0, T0 + 100, frozenset({1}), WINDOW),
            T0 + 200,
            BufferState.OPEN,
            [],
        ),
        (
            BufferSnapshot(False, T0, T0 + 100, frozenset({1}), WINDOW),
            T0 + 100 + WINDOW + 1,
            BufferState.CLOSED,
            [CloseBuffer(CloseReason.INACTIVITY, T0 + 100 + WINDOW + 1), HandOff()],
        ),
        (
            BufferSnapshot(False, T0, T0 + 7000, frozenset({1}), WINDOW),
            T0 + 7300,
            BufferState.CLOSED,
            [CloseBuffer(CloseReason.MAX_AGE, T0 + 7300), HandOff()],
        ),
        (
            BufferSnapshot(True, T0, T0, frozenset({1}), WINDOW),
            T0 + 1,
            BufferState.CLOSED,
            [HandOff()],
        ),
    ],
    ids=["open-in-time", "inactivity-passed-while-down", "max-age-passed", "closed"],
)
def test_restore_recomputes_deadlines_from_persisted_times(
    snapshot: BufferSnapshot, now: float, state: BufferState, effects: list[object]
) -> None:
    """Restoring keeps persisted timestamps: remaining time is honoured, passed deadlines close."""
    machine = ChannelBuffer(BufferConfig(inactivity_s=999.0))
    assert machine.handle(Restored(snapshot), now) == effects
    assert machine.state is state
    assert machine.config.inactivity_s == WINDOW
    assert (machine.inactivity_deadline, machine.max_age_deadline) == (
        snapshot.last_message_at + WINDOW,
        snapshot.started_at + 7200,
    )


def test_note_failure_returns_to_closed_for_another_hand_off() -> None:
    """A failed note puts the buffer back to CLOSED; the retry hands it off again."""
    machine = machine_in(BufferState.HANDED_OFF)
    machine.handle(NoteFailed("timeout"), T0)
    assert machine.state is BufferState.CLOSED
    machine.handle(HandedOff(), T0)
    machine.handle(NoteCommitted(4), T0)
    assert machine.state is BufferState.NOTED


def test_state_diagram_is_generated_from_the_table() -> None:
    """Every table entry appears in the generated diagram."""
    diagram = state_diagram()
    for source, by_event in TRANSITIONS.items():
        for event_type, targets in by_event.items():
            for target in targets:
                assert f"{source.name} --> {target.name}: {event_type.__name__}" in diagram
