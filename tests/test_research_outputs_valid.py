"""Every research document ``render`` publishes is a DocumentReference fhir.resources accepts.

``render`` validates with the split check (skeleton once per shape, per-document values by
their field types, skeletons keyed by their JSON). Over many varied documents — report
types, statuses, languages, dates, pseudonyms, replaces, near-duplicate scores, annotations,
security codes — the published bytes, parsed back, must pass the full model, and ``render``
must refuse exactly what the full model refuses.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import orjson
from fhir.resources.R4B.documentreference import DocumentReference
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.document import ClinicalDocument, ReportType, Source, Status, VersionMarker
from pipelines.errors import InvalidFHIR
from pipelines.research import build_resource, render, validate_whole
from pipelines.spans import Category, Span

_TEXT = st.text(st.sampled_from(list("aZ09 -._:/|^&é\t\n")), max_size=12)
_CODE = st.one_of(_TEXT, st.sampled_from(["11506-3", "34746-8", " x ", "a  b"]))
_SYSTEM = st.one_of(_TEXT, st.sampled_from(["LN", "SCT", "http://loinc.org", "urn:oid:1.2", ""]))
_ID = st.one_of(
    st.text(st.sampled_from(list("abc019-.")), min_size=1, max_size=70),
    st.sampled_from(["", "has space", "ok"]),
)
_MOMENT = st.one_of(
    st.none(),
    st.datetimes(datetime(1900, 1, 1), datetime(2090, 1, 1)),
    st.datetimes(datetime(1900, 1, 1), datetime(2090, 1, 1)).map(
        lambda d: d.replace(tzinfo=timezone(timedelta(hours=-5)))
    ),
)


@st.composite
def _documents(draw: st.DrawFn) -> tuple[ClinicalDocument, dict[str, object]]:
    text = draw(st.text(max_size=80))
    document = ClinicalDocument(
        text=text,
        source=draw(st.sampled_from(list(Source))),
        report_type=ReportType(draw(_CODE), draw(_TEXT), draw(_SYSTEM)),
        status=draw(st.sampled_from([s for s in Status if s is not Status.ENTERED_IN_ERROR])),
        version=VersionMarker(filing_time=draw(_MOMENT)),
        document_date=draw(_MOMENT),
        language=draw(st.sampled_from(["", "en", "en-US", "de", "x y"])),
    )
    spans = draw(
        st.lists(
            st.builds(
                lambda a, n, c: Span(a, a + n, c, 0.9, "surrogate"),
                st.integers(0, 50),
                st.integers(1, 9),
                st.sampled_from(list(Category)),
            ),
            max_size=3,
        )
    )
    near = draw(
        st.one_of(
            st.none(),
            st.tuples(_ID, st.floats(0, 1)),
            st.tuples(_ID, st.sampled_from([float("nan"), float("inf")])),
        )
    )
    args: dict[str, object] = {
        "text": text,
        "version_id": draw(_ID),
        "patient_pseudonym": draw(_ID),
        "encounter_pseudonym": draw(st.one_of(st.none(), _ID)),
        "shift_days": draw(st.integers(-800, 800)),
        "security": draw(st.lists(st.sampled_from(["PSEUDED", "REDACTED"]), max_size=2)),
        "replaces": draw(st.one_of(st.none(), _ID)),
        "near_duplicate": near,
        "annotations": spans or None,
    }
    return document, args


@settings(max_examples=600, deadline=None)
@given(_documents())
def test_published_documents_pass_the_full_model(
    case: tuple[ClinicalDocument, dict[str, object]],
) -> None:
    document, args = case
    resource = build_resource(document, **args)  # type: ignore[arg-type]
    try:
        validate_whole(resource)
        whole_ok = True
    except InvalidFHIR:
        whole_ok = False
    try:
        out = render("key", resource)
    except InvalidFHIR:
        assert not whole_ok  # refused only what the full model refuses
        return
    assert whole_ok  # published only what the full model accepts
    model = DocumentReference.model_validate(orjson.loads(out.value))  # the bytes, read back
    assert model.id == resource["id"]
    assert out.value == orjson.dumps(resource)


def test_a_known_skeleton_does_not_wave_through_a_bad_value() -> None:
    document = ClinicalDocument(text="x", document_date=datetime(2024, 1, 2, tzinfo=UTC))
    good = build_resource(
        document,
        text="x",
        version_id="ok",
        patient_pseudonym="p",
        encounter_pseudonym="e",
        shift_days=-3,
        security=["PSEUDED"],
    )
    render("key", good)
    bad = build_resource(
        document,
        text="x",
        version_id="has space",
        patient_pseudonym="p",
        encounter_pseudonym="e",
        shift_days=-3,
        security=["PSEUDED"],
    )
    try:
        render("key", bad)
    except InvalidFHIR:
        return
    raise AssertionError("an invalid id was published")
