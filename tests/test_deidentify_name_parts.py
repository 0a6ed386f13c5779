"""deidentify: the known given and family name parts come from one cached call; the same
sets as asking ``_known_parts`` for each."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipelines.deidentify import _known_name_parts, _known_parts
from pipelines.document import Identifiers, PersonName

WORDS = st.text(st.sampled_from(list("abAB -é\t")), max_size=8)
NAMES = st.lists(
    st.builds(PersonName, family=WORDS, given=st.lists(WORDS, max_size=3).map(tuple)),
    max_size=3,
).map(tuple)


@given(NAMES, NAMES, NAMES)
def test_both_name_parts_equal_each_asked_alone(
    patient: tuple[PersonName, ...],
    provider: tuple[PersonName, ...],
    relative: tuple[PersonName, ...],
) -> None:
    ids = Identifiers(patient_names=patient, provider_names=provider, relative_names=relative)
    assert _known_name_parts(ids) == (_known_parts(ids, True), _known_parts(ids, False))
