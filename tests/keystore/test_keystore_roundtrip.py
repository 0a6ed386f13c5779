"""Hypothesis: any PatientState survives sealing, storing and reopening unchanged."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keystore import Keyring, PatientState, open_store
from keystore.envelope import open_sealed, seal
from keystore.records import Identity, dump_state, load_state

# Lone surrogates cannot be encoded as UTF-8; documents decoded by the parsers never hold them.
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
states = st.builds(
    PatientState,
    shift_days=st.integers(-3650, 3650).filter(bool),
    pseudonym=text,
    seed=st.binary(min_size=0, max_size=64),
    name_map=st.dictionaries(text, text, max_size=8),
    id_map=st.dictionaries(text, text, max_size=8),
    extra=st.dictionaries(text, text, max_size=4),
)
KEYRING = Keyring.generate("hypothesis")


@given(states, st.one_of(st.none(), st.builds(Identity, text, text)))
def test_record_round_trip(state: PatientState, identity: Identity | None) -> None:
    raw = dump_state(state, identity)
    assert load_state(raw) == (state, identity)
    lookup = b"\x01" * 32
    assert open_sealed(KEYRING, lookup, seal(KEYRING, lookup, raw)) == raw


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(text, text, states), min_size=1, max_size=4, unique_by=lambda t: (t[0], t[1])
    )
)
def test_store_round_trip_across_restart(patients: list[tuple[str, str, PatientState]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'ks.sqlite3'}"
        with open_store(url, KEYRING) as store:
            for authority, pid, state in patients:
                stored = store.get_or_create(authority, pid, lambda s=state: s)
                stored.name_map.update({"added": "later"})
                store.save(authority, pid, stored)
        with open_store(url, KEYRING) as store:
            for authority, pid, state in patients:
                again = store.get_or_create(authority, pid, lambda: PatientState(1, "", b""))
                assert again == state
                assert again.name_map["added"] == "later"


keys = st.sampled_from(["a", "b", "dedup:x"])
values = st.binary(min_size=0, max_size=12)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(keys, st.one_of(st.none(), values), values), max_size=12))
def test_marks_behave_like_a_compare_and_set_dict(
    ops: list[tuple[str, bytes | None, bytes]],
) -> None:
    model: dict[str, bytes] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        open_store(f"sqlite:///{Path(tmp) / 'm.sqlite3'}", KEYRING) as store,
    ):
        for key, expected, value in ops:
            wins = model.get(key) == expected
            if wins:
                model[key] = value
            assert store.compare_and_set_mark(key, expected, value) is wins
        for key in ("a", "b", "dedup:x"):
            assert store.get_mark(key) == model.get(key)
