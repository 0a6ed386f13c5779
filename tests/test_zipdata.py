"""The shipped ZIP code copy (surrogates/data/zips.tsv.gz) is the zipcodes package's data."""

from __future__ import annotations

import pytest

from surrogates import zipdata
from surrogates.zipdata import ZipRow


def test_the_shipped_copy_equals_the_installed_package() -> None:
    """Fails when the zipcodes package changes its data: run ``python -m surrogates.zipdata``."""
    assert list(zipdata.rows()) == zipdata.rows_from_package()


def test_the_copy_holds_every_kind_of_code_with_its_state() -> None:
    rows = list(zipdata.rows())
    assert len(rows) > 40_000
    assert [r.zip_code for r in rows] == sorted({r.zip_code for r in rows})
    standard = [r for r in rows if r.standard]
    assert 25_000 < len(standard) < len(rows)  # PO boxes and unique codes are kept, flagged
    assert all(len(r.state) == 2 and r.state.isupper() for r in standard)


@pytest.mark.parametrize(
    "row",
    [
        ZipRow("02108", "MA", "Boston", True),
        ZipRow("00501", "NY", "Holtsville", False),
        ZipRow("99999", "", "", False),
        ZipRow("12345", "NY", "Two  Words", True),
    ],
)
def test_a_row_survives_its_line(row: ZipRow) -> None:
    assert ZipRow.parse(row.line()) == row


@pytest.mark.parametrize(
    ("zip_code", "city"), [("2108", "Boston"), ("0210a", "Boston"), ("02108", "Bos\tton")]
)
def test_a_malformed_row_is_refused(zip_code: str, city: str) -> None:
    with pytest.raises(ValueError):
        ZipRow(zip_code, "MA", city, True)
