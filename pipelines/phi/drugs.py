"""The drug names of ``lexicons.drug_words``, read from a compact copy shipped beside this
package (``data/drug_words.txt.gz``, one word a line).

Why a copy: ``drug-named-entity-recognition`` keeps its dictionary as one bz2 pickle of three
tables; decompressing and unpickling it to keep one table's keys took about 0.3 s of every
process's start (the whole cost of a short ``deidstream detect``'s drug list) and a 46 MB
transient (bench/README.md, "Memory"). The copy holds just the words ``lexicons.drug_variants``
derives from it.

The copy is derived, not written by hand: ``python -m pipelines.phi.drugs`` rewrites it from
the installed package, and ``tests/phi/test_lexicons.py`` fails when the two differ.
"""

from __future__ import annotations

import gzip
from importlib import resources

FILENAME = "drug_words.txt.gz"


def shipped() -> list[str]:
    """The words of the shipped copy, sorted."""
    raw = resources.files("pipelines.phi").joinpath("data", FILENAME).read_bytes()
    return gzip.decompress(raw).decode("utf-8").splitlines()


def from_package() -> list[str]:
    """The words as derived from the installed package now, sorted."""
    from pipelines.phi.lexicons import drug_variants

    return sorted(drug_variants())


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    from pipelines.phi.sorted_words import write_copy

    write_copy(__file__, FILENAME, "".join(f"{word}\n" for word in from_package()).encode("utf-8"))
