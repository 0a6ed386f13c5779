"""The audit log's hash chain and keyed subjects.

Every audit line carries ``seq`` (1, 2, 3 … with no gap) and ``mac`` = HMAC-SHA256 over the
previous line's mac and this line's fields, under a key derived (HKDF) from the store root.
Editing, deleting, reordering or inserting a line breaks the chain from that line on, and
only a holder of the master key (through the root) can compute a valid mac: a database
writer without it cannot hide a change. Deleting lines at the *end* leaves a shorter chain
that still verifies: compare with a head (seq and mac) recorded elsewhere
(``deidstream keys audit verify --head SEQ:MAC``).

Lines written before the chain existed (schema < 3: no seq, no mac) are kept as a prefix;
the first chained line's "previous mac" is an HMAC over all of them, so they cannot be
changed unnoticed afterwards either.

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
class AuditReport:
    lines: int
    legacy_lines: int  # unchained lines from before schema 3 (covered by the genesis)
    head_seq: int
    head_mac: str  # hex; record it elsewhere to detect a truncated tail later
    broken_at: int | None = None  # the row id of the first line that does not verify
    broken_seq: int | None = None
    problem: str = ""

    @property
    def ok(self) -> bool:
        return self.broken_at is None and not self.problem

    @property
    def head(self) -> str:
        return f"{self.head_seq}:{self.head_mac}"


class AuditKeys:
    """The chain key and the subject key, both from the store root."""

    def __init__(self, root: bytes) -> None:
        self._chain = derive_subkey(root, PURPOSE_AUDIT_CHAIN)
        self._subject = KeyedHash(derive_subkey(root, PURPOSE_AUDIT_SUBJECT))

    def subject(self, kind: str, value: str | bytes) -> str:
        """A keyed, non-reversible tag for an audit subject (a pseudonym, a record)."""
        return "s" + self._subject.digest(encode_parts(kind, value))[:12].hex()

    def genesis(self, legacy: Sequence[AuditLine]) -> bytes:
        """The "previous mac" of the first chained line: covers every unchained line."""
        body = b"".join(encode_parts(str(line.row_id), line.content()) for line in legacy)
        return hmac.digest(self._chain, _GENESIS + body, "sha256")

    def sign(self, prev: bytes, line: AuditLine) -> bytes:
        return hmac.digest(self._chain, prev + line.content(), "sha256")

    def chain(
        self, prev: bytes | None, legacy: Sequence[AuditLine], head_seq: int, line: AuditLine
    ) -> AuditLine:
        """``line`` as the next line after ``head_seq`` (whose mac is ``prev``; None: no
        chained line yet, the chain starts from the genesis of ``legacy``)."""
        seq = head_seq + 1
        start = self.genesis(legacy) if prev is None else prev
        numbered = replace(line, seq=seq, mac=None)
        return replace(numbered, mac=self.sign(start, numbered))

    def verify(self, lines: Sequence[AuditLine], head: str | None = None) -> AuditReport:
        """Check the whole log (``lines`` in insertion order); name the first broken line."""
        legacy = 0
        while legacy < len(lines) and lines[legacy].seq is None and lines[legacy].mac is None:
            legacy += 1
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
        return _against_head(report, lines[legacy:], head)

    def _check(self, line: AuditLine, want_seq: int, prev: bytes) -> str:
        if line.seq is None or line.mac is None:
            return "a line without seq or mac after the chain began"
        if line.seq != want_seq:
            return (
                f"seq {line.seq} where {want_seq} was due (a line was deleted, moved or inserted)"
            )
        if not hmac.compare_digest(line.mac, self.sign(prev, line)):
            return "mac does not match: this line (or its mac) was changed"
        return ""


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
