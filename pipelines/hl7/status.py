"""The status of an HL7 v2 document (see :mod:`pipelines.hl7.mapping`'s decisions).

TXA-17 for MDM (T06/T08/T10 of a final document → amended), else OBR-25, else the OBX-11 of
the narrative OBX. OBR-25 "A" (some results available) is preliminary. MDM^T11 (document
cancel), TXA-17 "CA", OBR-25 "X", or every OBX-11 D/W/X: entered in error (a retraction).
"""

from __future__ import annotations

from pipelines.document import Status
from pipelines.hl7.er7 import Er7Message, Segment

# HL7 table 0271 (TXA-17 document completion status)
TXA_STATUS = {
    "AU": Status.FINAL,
    "LA": Status.FINAL,
    "DO": Status.FINAL,
    "DI": Status.PRELIMINARY,
    "IP": Status.PRELIMINARY,
    "IN": Status.PRELIMINARY,
    "PA": Status.PRELIMINARY,
    "CA": Status.ENTERED_IN_ERROR,
}
# HL7 table 0123 (OBR-25 result status)
OBR_STATUS = {
    "F": Status.FINAL,
    "C": Status.CORRECTED,
    "P": Status.PRELIMINARY,
    "A": Status.PRELIMINARY,  # some, not all, results available
    "R": Status.PRELIMINARY,
    "I": Status.PRELIMINARY,
    "S": Status.PRELIMINARY,
    "O": Status.PRELIMINARY,
    "X": Status.ENTERED_IN_ERROR,  # no results: order cancelled
}
# HL7 table 0085 (OBX-11 observation result status)
OBX_STATUS = {
    "F": Status.FINAL,
    "U": Status.FINAL,
    "C": Status.CORRECTED,
    "A": Status.AMENDED,
    "P": Status.PRELIMINARY,
    "R": Status.PRELIMINARY,
    "S": Status.PRELIMINARY,
    "I": Status.PRELIMINARY,
    "D": Status.ENTERED_IN_ERROR,
    "W": Status.ENTERED_IN_ERROR,
    "X": Status.ENTERED_IN_ERROR,
}
_AMENDING_TRIGGERS = frozenset({"T06", "T08", "T10"})

_CANCEL_TRIGGERS = frozenset({"T11"})  # MDM^T11: document cancel notification (no content)


def document_status(msg: Er7Message, trigger: str, obx: list[Segment]) -> Status:
    """TXA-17 for MDM (T06/T08/T10 of a final document: amended), else OBR-25, else the
    OBX-11 of ``obx`` (the OBX that gave the narrative); MDM^T11 is a retraction."""
    if trigger in _CANCEL_TRIGGERS:
        return Status.ENTERED_IN_ERROR
    s = _txa_status(msg, trigger)
    if s is not None:
        return s
    for obr in msg.all("OBR"):
        s = OBR_STATUS.get(obr.first_component(25).strip().upper())
        if s is not None:
            return s
    return _obx_statuses(obx)


def _txa_status(msg: Er7Message, trigger: str) -> Status | None:
    """TXA-17, a final document of an amending trigger being amended; None without one."""
    txa = msg.first("TXA")
    if txa is None:
        return None
    s = TXA_STATUS.get(txa.first_component(17).strip().upper())
    if s is Status.FINAL and trigger in _AMENDING_TRIGGERS:
        return Status.AMENDED
    return s


def _obx_statuses(obx: list[Segment]) -> Status:
    """The status the OBX-11 of the narrative OBX give together (final when none says)."""
    statuses = []
    code = OBX_STATUS.get
    for seg in obx:  # _obx_status, its usual case inline: a bare code ("F") in OBX-11
        f = seg.fields
        s = code(f[11]) if len(f) > 11 else None
        if s is None:
            s = _obx_status(seg)
        if s is not None:
            statuses.append(s)
    if not statuses:
        return Status.FINAL
    if statuses.count(Status.ENTERED_IN_ERROR) == len(statuses):  # all retracted
        return Status.ENTERED_IN_ERROR
    for s in (Status.CORRECTED, Status.AMENDED, Status.PRELIMINARY):
        if s in statuses:
            return s
    return Status.FINAL


def _obx_status(seg: Segment) -> Status | None:
    """OBX-11 as a status; a bare code (the usual "F") is looked up as it is."""
    f = seg.fields
    found = OBX_STATUS.get(f[11]) if len(f) > 11 else None
    if found is not None:
        return found
    return OBX_STATUS.get(seg.first_component(11).strip().upper())
