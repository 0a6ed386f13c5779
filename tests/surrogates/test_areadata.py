"""The shipped area-code copy (surrogates/data/area_codes.txt) is libphonenumber's data."""

from __future__ import annotations

from surrogates import areadata


def test_the_shipped_copy_equals_the_installed_package() -> None:
    """Fails when phonenumbers changes its data: run ``python -m surrogates.areadata``."""
    assert areadata.by_state() == areadata.by_state_from_package()


def test_the_copy_places_codes_in_states_and_no_code_twice() -> None:
    table = areadata.by_state()
    assert len(table) >= 50
    codes = [c for cs in table.values() for c in cs]
    assert len(codes) == len(set(codes)) > 250
    assert all(len(s) == 2 and s.isupper() for s in table)
    assert "800" not in codes and "500" not in codes
    assert "212" in table["NY"] and "907" in table["AK"]


def test_reading_the_copy_loads_no_geocoder() -> None:
    """The point of the copy: the geocoder's tables (~90 MB resident) stay unloaded."""
    import subprocess
    import sys

    probe = (
        "import sys; from surrogates import areadata; areadata.by_state();"
        "import surrogates.contact as c; c.us_area_codes();"
        "print(any(m.startswith('phonenumbers.geodata') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
