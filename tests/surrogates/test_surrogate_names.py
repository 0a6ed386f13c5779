"""Names: part-wise consistent per patient, forms kept, gender and case kept, never an original."""

from __future__ import annotations

import re
from importlib import resources
from itertools import accumulate

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from surrogate_helpers import FakeSpan, make_ctx, make_state, replace_all

from surrogates.names import NameSurrogate, census, letter_map

NAMES = NameSurrogate()
CAT = "NAME_PATIENT"


def test_all_forms_of_one_name_map_to_forms_of_one_surrogate() -> None:
    text = "John Smith | SMITH, JOHN | Mr. Smith | J. Smith | JS | smith"
    ctx = make_ctx(text)
    full, inverted, titled, initial, initials, lower = replace_all(
        NAMES, ctx, CAT, "John Smith", "SMITH, JOHN", "Mr. Smith", "J. Smith", "JS", "smith"
    )
    first, last = full.split()
    assert inverted == f"{last.upper()}, {first.upper()}"
    assert titled == f"Mr. {last}"
    assert initial == f"{first[0]}. {last}"
    assert initials == f"{first[0]}{last[0]}"
    assert lower == last.lower()
    assert first.lower() != "john" and last.lower() != "smith"


def test_the_same_patient_gets_the_same_surrogate_in_another_note() -> None:
    state = make_state()
    one = replace_all(NAMES, make_ctx("Seen: Mary Jones.", state), CAT, "Mary Jones")[0]
    two = replace_all(NAMES, make_ctx("Daughter of JONES, MARY", state), CAT, "JONES, MARY")[0]
    first, last = one.split()
    assert two == f"{last.upper()}, {first.upper()}"
    assert state.name_map["mary"] == first.lower()


def test_same_seed_and_empty_maps_give_the_same_choice() -> None:
    a = replace_all(NAMES, make_ctx("Peter Brown"), CAT, "Peter Brown")
    b = replace_all(NAMES, make_ctx("Peter Brown"), CAT, "Peter Brown")
    c = replace_all(NAMES, make_ctx("Peter Brown", make_state(b"t" * 32)), CAT, "Peter Brown")
    assert a == b
    assert a != c


def test_gender_is_kept_from_census_lists_and_titles() -> None:
    c = census()
    text = "James Carter, Patricia Carter, Mrs. Quinn"
    ctx = make_ctx(text)
    james, patricia, _ = replace_all(
        NAMES, ctx, CAT, "James Carter", "Patricia Carter", "Mrs. Quinn"
    )
    assert james.split()[0].lower() in c.male
    assert patricia.split()[0].lower() in c.female


def test_case_is_kept() -> None:
    ctx = make_ctx("ANNA LEE / anna lee / Anna Lee")
    upper, lower, title = replace_all(NAMES, ctx, CAT, "ANNA LEE", "anna lee", "Anna Lee")
    assert upper.isupper() and lower.islower()
    assert title == " ".join(w.capitalize() for w in lower.split())


def test_unknown_and_hyphenated_names_still_get_surrogates() -> None:
    ctx = make_ctx("Xqzwv Smith-Jones")
    out = replace_all(NAMES, ctx, CAT, "Xqzwv Smith-Jones")[0]
    first, last = out.split(" ")
    assert first.lower() != "xqzwv"
    assert re.fullmatch(r"[A-Z][a-z']+-[A-Z][a-z']+", last)


def test_titles_and_suffixes_stay() -> None:
    out = replace_all(NAMES, make_ctx("Dr. Alan Grant Jr."), "NAME_PROVIDER", "Dr. Alan Grant Jr.")[
        0
    ]
    assert out.startswith("Dr. ") and out.endswith(" Jr.")
    assert "Alan" not in out and "Grant" not in out


def test_initials_never_survive() -> None:
    letters = letter_map(b"x" * 32)
    assert all(k != v for k, v in letters.items())
    assert sorted(letters.values()) == sorted(letters)


common = st.sampled_from(
    list(census().pools[("M", "")].names[:300] + census().pools[("L", "")].names[:300])
)


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(common, min_size=2, max_size=8, unique=True),
    seed=st.binary(min_size=32, max_size=32),
)
def test_a_surrogate_is_never_a_word_of_the_note(parts: list[str], seed: bytes) -> None:
    text = " ".join(p.capitalize() for p in parts) + " was seen with the family"
    ctx = make_ctx(text, make_state(seed))
    out = NAMES.replace(FakeSpan(0, text.index(" was"), CAT), ctx)
    words = {w.lower() for w in re.findall(r"[A-Za-z']+", text)}
    new = [w.lower() for w in out.split()]
    assert not words & set(new)
    assert len(new) == len(parts)
    # distinct originals get distinct surrogates (two people never merge)
    assert len(set(new)) == len(new)


def test_known_names_steer_roles() -> None:
    ctx = make_ctx("Seen by Taylor", known_given=frozenset({"taylor"}))
    out = replace_all(NAMES, ctx, CAT, "Taylor")[0]
    c = census()
    assert out.lower() in c.male or out.lower() in c.female


def test_known_names_fix_roles_in_family_first_order() -> None:
    ctx = make_ctx(
        "SMITH JOHN / John Smith",
        known_given=frozenset({"john"}),
        known_family=frozenset({"smith"}),
    )
    reversed_order, natural = replace_all(NAMES, ctx, CAT, "SMITH JOHN", "John Smith")
    first, last = natural.split()
    assert reversed_order == f"{last.upper()} {first.upper()}"
    assert first.lower() in census().male


def test_census_tables_hold_each_files_figures() -> None:
    """One float object per distinct figure and machine-integer weights change no value:
    every name has the float of its line, every pool the running sum of its weights."""
    c = census()
    for name, table in (
        ("dist.male.first", c.male),
        ("dist.female.first", c.female),
        ("dist.all.last", c.last),
    ):
        lines = resources.files("names").joinpath(name).read_text("ascii").split("\n")
        rows = [line.split() for line in lines if len(line.split()) >= 2]
        assert {row[0].lower(): float(row[1]) for row in rows} == table
    for (kind, _), pool in c.pools.items():
        table = {"M": c.male, "F": c.female, "L": c.last}[kind]
        weights = [max(1, round(table[n] * 1000)) for n in pool.names]
        assert list(pool.cumulative) == list(accumulate(weights))


def test_surname_table_answers_as_a_dict() -> None:
    c = census()
    lines = resources.files("names").joinpath("dist.all.last").read_text("ascii").split("\n")
    table = {row[0].lower(): float(row[1]) for row in map(str.split, lines) if len(row) >= 2}
    assert len(c.last) == len(table) and list(c.last) == list(table)
    assert all(name in c.last and c.last.get(name, -1.0) == f for name, f in table.items())
    assert any(f == 0.0 for f in table.values())  # listed at 0.000%: still listed
    absent = ({n + "q" for n in table} | {n[1:] for n in table} | {"", "é", "smíth"}) - table.keys()
    assert not any(name in c.last for name in absent)
    assert all(c.last.get(name) is None and c.last.get(name, 0.0) == 0.0 for name in absent)
    with pytest.raises(KeyError):
        c.last["notaname"]


def test_refused_indices_are_skipped_cyclically_until_none_is_left() -> None:
    from surrogates.choice import Refused

    refused = Refused(4)
    assert refused.next_free(2) == 2
    refused.refuse(2)
    refused.refuse(3)
    assert refused.next_free(2) == 0  # past the end: from the start
    refused.refuse(0)
    assert refused.next_free(3) == 1
    refused.refuse(1)
    assert refused.next_free(0) == -1


def test_distinct_names_past_a_pools_size_get_distinct_surrogates() -> None:
    """More surnames of one initial than the surname pool of its image initial holds: each
    still gets its own surrogate (from the whole pool once that one is spent), never the
    original, and the same one when asked again."""
    from surrogates import ReplaceContext
    from surrogates.names import surrogate_part

    state = make_state()
    letters = letter_map(state.seed)
    pools = census().pools
    initial = min(letters, key=lambda a: len(pools[("L", letters[a])].names))
    size = len(pools[("L", letters[initial])].names)
    originals = [f"{initial}qz{n}x" for n in range(size + 20)]
    ctx = ReplaceContext(state=state, text="")
    made = {low: surrogate_part(ctx, low, "family", "") for low in originals}
    assert len(set(made.values())) == len(made)
    assert all(new != low for low, new in made.items())
    assert all(surrogate_part(ctx, low, "family", "") == made[low] for low in originals)
