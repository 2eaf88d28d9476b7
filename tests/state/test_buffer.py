"""Table-driven tests of the ChannelBuffer state machine; no event loop anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from vivy.errors import IllegalTransition
from vivy.state.buffer import (
    TRANSITIONS,
    AppendMessages,
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
    MessageDeleted,
    MessageEdited,
    MessagesArrived,
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


def arrived(*ids: int, at: float = T0) -> MessagesArrived:
    """A burst of messages with these ids."""
    return MessagesArrived(tuple(msg(i, at) for i in ids))


def machine_in(state: BufferState) -> ChannelBuffer:
    """A machine driven into ``state`` through legal events only."""
    machine = ChannelBuffer(CONFIG)
    if state is BufferState.EMPTY:
        return machine
    machine.handle(arrived(1), T0)
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
    arrived(2, at=T0 + 10),
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
    effects = machine.handle(arrived(1), T0)
    assert effects == [
        OpenBuffer(started_at=T0, inactivity_s=WINDOW),
        AppendMessages((msg(1),), T0),
    ]
    assert machine.state is BufferState.OPEN
    assert (machine.inactivity_deadline, machine.max_age_deadline) == (T0 + WINDOW, T0 + 7200.0)
    assert machine.next_deadline == T0 + WINDOW


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
    with pytest.raises(ValueError, match="at least one message"):
        machine.handle(MessagesArrived(()), T0 + 1)
    assert machine.message_ids == {1}


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


def test_message_past_max_age_closes_then_starts_next_buffer() -> None:
    """A message arriving past the max age closes the old buffer first and goes to a new one."""
    machine = machine_in(BufferState.OPEN)
    effects = machine.handle(arrived(9, 1, 10, at=T0 + 7200), T0 + 7200)
    assert effects == [
        CloseBuffer(CloseReason.MAX_AGE, closed_at=T0 + 7200),
        HandOff(),
        StartNextBuffer((msg(9, T0 + 7200), msg(10, T0 + 7200))),
        Ignore(IgnoreReason.DUPLICATE, (1,)),
    ]
    assert machine.state is BufferState.CLOSED
    assert machine.message_ids == {1}


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
    closed = CloseBuffer(CloseReason.CAP, T0 + 5)
    assert effects == [AppendMessages((msg(5),), T0 + 5), closed, HandOff()]
    assert machine.state is BufferState.CLOSED


def test_a_burst_past_the_cap_sends_the_rest_to_the_next_buffer() -> None:
    """A first burst longer than the cap fills the buffer, closes it, and passes the rest on."""
    machine = ChannelBuffer(CONFIG)
    effects = machine.handle(arrived(*range(1, 9)), T0)
    assert effects == [
        OpenBuffer(started_at=T0, inactivity_s=WINDOW),
        AppendMessages(tuple(msg(i) for i in range(1, 6)), T0),
        CloseBuffer(CloseReason.CAP, T0),
        HandOff(),
        StartNextBuffer((msg(6), msg(7), msg(8))),
    ]
    assert machine.state is BufferState.CLOSED
    assert machine.message_ids == {1, 2, 3, 4, 5}


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
        machine.handle(arrived(2), now - 100)
    assert machine.handle(event, now) == [CloseBuffer(reason, now), HandOff()]


def test_stale_timer_is_ignored() -> None:
    """A timer that fires before the current deadline (a message moved it) changes nothing."""
    machine = machine_in(BufferState.OPEN)
    machine.handle(arrived(2), T0 + 100)
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
    """Every table entry appears in the generated diagram, which the README shows as it is."""
    diagram = state_diagram()
    readme = Path(__file__).resolve().parents[2] / "README.md"
    assert f"```mermaid\n{diagram}\n```" in readme.read_text(encoding="utf-8")
    for source, by_event in TRANSITIONS.items():
        for event_type, targets in by_event.items():
            for target in targets:
                assert f"{source.name} --> {target.name}: {event_type.__name__}" in diagram
