"""The audit log's hash chain, its sealed head anchor, and keyed subjects.

Every audit line carries ``seq`` (1, 2, 3 … with no gap) and ``mac`` = HMAC-SHA256 over the
previous line's mac and this line's fields, under a key derived (HKDF) from the store root.
Editing, deleting, reordering or inserting a line breaks the chain from that line on, and
only a holder of the master key (through the root) can compute a valid mac: a database
writer without it cannot hide a change.

The chain's head (last seq and mac, and how many lines from before the chain there are) is
kept in the one-row ``audit_head`` table, *sealed* (an HMAC under the chain key) and
rewritten in the same transaction as every append: a cut tail leaves a chain that ends
before the anchor, found by ``keys audit verify`` with nothing kept by the operator.
Whether a store HAS an anchor is sealed into the store root's wrapping
(:data:`keystore.subkeys.ROOT_BINDING_ANCHORED`), so deleting the anchor row is found too,
and an append extends the chain from the anchor, never from a table a writer may have cut.
What remains: a writer who puts back an older copy of the whole log *and* its anchor (a
consistent rollback) — the head is also logged at every append and exported on /metrics,
so a monitor that sees it go backwards catches that (docs/security.md).

Lines written before the chain existed (schema < 4: no seq, no mac) are a prefix whose
length the anchor pins; the first chained line's "previous mac" is an HMAC over all of
them, so they cannot be changed unnoticed afterwards either. Any other line without seq or
mac is a broken line (nulling the chain columns does not make a line "old").

Subjects are keyed too: a reveal's subject is an HMAC of the pseudonym under the audit
subject key (an unkeyed hash of a pseudonym could be matched against research output).
"""

from __future__ import annotations

import hmac
import struct
from collections.abc import Sequence
from dataclasses import dataclass, replace

from keystore.keyring import PURPOSE_AUDIT_CHAIN, PURPOSE_AUDIT_SUBJECT, derive_subkey
from keystore.pseudonyms import KeyedHash, encode_parts

_GENESIS = b"deidstream/v1/audit-genesis"
_ANCHOR = b"deidstream/v1/audit-anchor"


@dataclass(frozen=True)
class AuditLine:
    at: float
    action: str
    operator: str
    reason: str
    subject: str
    outcome: str
    seq: int | None = None
    mac: bytes | None = None
    row_id: int | None = None  # the table's own id (order of insertion); not covered

    def content(self) -> bytes:
        """The bytes the mac covers (besides the previous mac)."""
        return encode_parts(
            str(self.seq or 0),
            struct.pack(">d", self.at),
            self.action,
            self.operator,
            self.reason,
            self.subject,
            self.outcome,
        )


@dataclass(frozen=True)
class AuditAnchor:
    """The chain's head as last appended: ``seq`` (0: no chained line yet), its ``mac``
    (the genesis when ``seq`` is 0), the ``legacy`` lines before the chain, and ``seal``."""

    seq: int
    mac: bytes
    legacy: int
    seal: bytes

    def __post_init__(self) -> None:
        if self.seq < 0 or self.legacy < 0:
            raise ValueError("an audit anchor's seq and legacy count are never negative")


@dataclass(frozen=True)
class AuditReport:
    lines: int
    legacy_lines: int  # unchained lines from before schema 4 (covered by the genesis)
    head_seq: int
    head_mac: str  # hex
    broken_at: int | None = None  # the row id of the first line that does not verify
    broken_seq: int | None = None
    problem: str = ""
    anchored_seq: int | None = None  # the sealed anchor's seq (None: no valid anchor)

    @property
    def ok(self) -> bool:
        return self.broken_at is None and not self.problem

    @property
    def head(self) -> str:
        return f"{self.head_seq}:{self.head_mac}"


class AuditKeys:
    """The chain key and the subject key, both from the store root; ``anchored``: this
    store's root says its log has a sealed head anchor (a missing one is then tampering)."""

    def __init__(self, root: bytes, *, anchored: bool = False) -> None:
        self._chain = derive_subkey(root, PURPOSE_AUDIT_CHAIN)
        self._subject = KeyedHash(derive_subkey(root, PURPOSE_AUDIT_SUBJECT))
        self.anchored = anchored

    def subject(self, kind: str, value: str | bytes) -> str:
        """A keyed, non-reversible tag for an audit subject (a pseudonym, a record)."""
        return "s" + self._subject.digest(encode_parts(kind, value))[:12].hex()

    def genesis(self, legacy: Sequence[AuditLine]) -> bytes:
        """The "previous mac" of the first chained line: covers every unchained line."""
        body = b"".join(encode_parts(str(line.row_id), line.content()) for line in legacy)
        return hmac.digest(self._chain, _GENESIS + body, "sha256")

    def sign(self, prev: bytes, line: AuditLine) -> bytes:
        return hmac.digest(self._chain, prev + line.content(), "sha256")

    # -- the anchor -----------------------------------------------------------------------
    def anchor(self, seq: int, mac: bytes, legacy: int) -> AuditAnchor:
        """A sealed anchor for this head."""
        body = encode_parts(str(seq), mac, str(legacy))
        return AuditAnchor(seq, mac, legacy, hmac.digest(self._chain, _ANCHOR + body, "sha256"))

    def sealed(self, anchor: AuditAnchor) -> bool:
        """The anchor was written by a holder of the chain key, unchanged since."""
        want = self.anchor(anchor.seq, anchor.mac, anchor.legacy).seal
        return hmac.compare_digest(anchor.seal, want)

    def anchor_of(self, lines: Sequence[AuditLine], legacy: int | None = None) -> AuditAnchor:
        """The anchor for a log as it is now (a store anchored for the first time), its
        unchained prefix ``legacy`` lines long (None: every leading unchained line)."""
        found = _leading_unchained(lines)
        legacy = found if legacy is None else min(found, legacy)
        chained = [line for line in lines[legacy:] if line.seq is not None and line.mac]
        if chained:
            last = max(chained, key=lambda line: line.seq or 0)
            return self.anchor(last.seq or 0, last.mac or b"", legacy)
        return self.anchor(0, self.genesis(lines[:legacy]), legacy)

    def append(self, anchor: AuditAnchor, line: AuditLine) -> tuple[AuditLine, AuditAnchor]:
        """``line`` as the next link after ``anchor`` (a verified one), and the new anchor."""
        numbered = replace(line, seq=anchor.seq + 1, mac=None)
        signed = replace(numbered, mac=self.sign(anchor.mac, numbered))
        return signed, self.anchor(anchor.seq + 1, signed.mac or b"", anchor.legacy)

    # -- verification ---------------------------------------------------------------------
    def verify(
        self,
        lines: Sequence[AuditLine],
        head: str | None = None,
        anchor: AuditAnchor | None = None,
    ) -> AuditReport:
        """Check the whole log (``lines`` in insertion order) against the chain and the
        sealed ``anchor``; name the first broken line, or what is wrong with the head."""
        trusted = anchor if anchor is not None and self.sealed(anchor) else None
        legacy = _leading_unchained(lines)
        if trusted is not None:
            legacy = min(legacy, trusted.legacy)  # only the pinned prefix may be unchained
        prev = self.genesis(lines[:legacy])
        seq = 0
        for line in lines[legacy:]:
            problem = self._check(line, seq + 1, prev)
            if problem:
                return AuditReport(
                    len(lines), legacy, seq, prev.hex(), line.row_id, line.seq, problem
                )
            prev, seq = line.mac or b"", seq + 1
        report = AuditReport(len(lines), legacy, seq, prev.hex() if seq else "")
        report = self._against_anchor(report, anchor, trusted, prev)
        return _against_head(report, lines[legacy:], head)

    def _against_anchor(
        self,
        report: AuditReport,
        anchor: AuditAnchor | None,
        trusted: AuditAnchor | None,
        prev: bytes,
    ) -> AuditReport:
        if anchor is None:
            if self.anchored:
                return replace(report, problem="the sealed head anchor was deleted")
            return replace(
                report,
                problem="this store has no sealed head anchor yet: run `deidstream keys "
                "migrate` (as the owner) to anchor it",
            )
        if trusted is None:
            return replace(report, problem="the head anchor does not verify: it was changed")
        report = replace(report, anchored_seq=trusted.seq)
        if report.legacy_lines != trusted.legacy:
            return replace(
                report,
                problem=f"{trusted.legacy} lines from before the chain were anchored, "
                f"{report.legacy_lines} are there: lines were deleted or added",
            )
        if report.head_seq < trusted.seq:
            return replace(
                report,
                problem=f"the log ends at seq {report.head_seq}, before the anchored head "
                f"{trusted.seq}: its tail was deleted",
            )
        if report.head_seq > trusted.seq:
            return replace(
                report,
                problem=f"the anchored head {trusted.seq} is behind the log's "
                f"{report.head_seq}: the anchor was replaced by an older copy",
            )
        if not hmac.compare_digest(prev, trusted.mac):
            return replace(report, problem="the last line differs from the anchored head")
        return report

    def _check(self, line: AuditLine, want_seq: int, prev: bytes) -> str:
        if line.seq is None or line.mac is None:
            return "a line without seq or mac (no line may be unchained)"
        if line.seq != want_seq:
            return (
                f"seq {line.seq} where {want_seq} was due (a line was deleted, moved or inserted)"
            )
        if not hmac.compare_digest(line.mac, self.sign(prev, line)):
            return "mac does not match: this line (or its mac) was changed"
        return ""


def _leading_unchained(lines: Sequence[AuditLine]) -> int:
    count = 0
    while count < len(lines) and lines[count].seq is None and lines[count].mac is None:
        count += 1
    return count


def _against_head(
    report: AuditReport, chained: Sequence[AuditLine], head: str | None
) -> AuditReport:
    """A head recorded earlier must still be in the chain (else the tail was cut)."""
    if not head:
        return report
    seq_text, _, mac_hex = head.partition(":")
    try:
        seq = int(seq_text)
        mac = bytes.fromhex(mac_hex)
    except ValueError:
        return replace(report, problem="the expected head is not SEQ:HEXMAC")
    if seq > len(chained):
        return replace(
            report,
            problem=f"the log ends at seq {report.head_seq}, before the "
            f"recorded head {seq}: its tail was deleted",
        )
    if seq < 1 or not hmac.compare_digest(chained[seq - 1].mac or b"", mac):
        return replace(
            report,
            broken_seq=seq,
            broken_at=chained[seq - 1].row_id if seq >= 1 else None,
            problem="the line at the recorded head differs from it",
        )
    return report
