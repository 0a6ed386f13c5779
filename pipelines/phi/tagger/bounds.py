"""The word before a note's first token and after its last, as the tagger's pair features
name them: ``features`` and the compiled rows (``_rows_c``) both read these, and this module
imports nothing of theirs (so neither import can go round in a circle)."""

from __future__ import annotations

from typing import Final

BEGIN: Final = "<s>"
END: Final = "</s>"
