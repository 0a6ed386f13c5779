"""HL7 v2 composite data types → document model (XPN, XCN, CNN, XAD, XTN, CX, TS).

Each reader takes one raw repetition and returns our immutable types; component positions are
the standard's (2.3 to 2.8 agree on the ones read here). Escapes are decoded per component.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

from pipelines.document import Address, Identifier, PersonName
from pipelines.hl7.er7 import Delimiters
from pipelines.hl7.escapes import decode_escapes
from pipelines.memo import memoized


def _comps(
    raw: str, d: Delimiters, charset: str, sub_joiner: str | None = None, limit: int = 12
) -> list[str]:
    """The first ``limit`` components, decoded; subcomponents keep only the first unless
    ``sub_joiner`` is given."""
    out = []
    esc = d.escape
    for c in raw.split(d.component, limit)[:limit]:
        if not c:
            out.append("")
            continue
        if d.subcomponent and d.subcomponent in c:
            subs = c.split(d.subcomponent)
            c = sub_joiner.join(s for s in subs if s) if sub_joiner is not None else subs[0]
        if esc and esc in c:
            c = decode_escapes(c, d, charset=charset)
        out.append(c.strip())
    return out


def _at(comps: list[str], i: int) -> str:
    return comps[i - 1] if i <= len(comps) else ""


def _name(
    family: str, given: str, middle: str, suffix: str, prefix: str, degree: str
) -> PersonName | None:
    if not (family or given or middle):
        return None
    return PersonName(
        family=family,
        given=tuple([p for p in (given, *middle.split()) if p]),
        prefix=prefix,
        suffix=f"{suffix} {degree}" if suffix and degree else suffix or degree,
    )


def xpn(raw: str, d: Delimiters, charset: str) -> PersonName | None:
    """XPN: family(FN&…)^given^middle^suffix^prefix^degree."""
    c = _comps(raw, d, charset, limit=6)
    return _name(_at(c, 1), _at(c, 2), _at(c, 3), _at(c, 4), _at(c, 5), _at(c, 6))


def xcn(raw: str, d: Delimiters, charset: str) -> PersonName | None:
    """XCN / PPN / CN: id^family(FN&…)^given^middle^suffix^prefix^degree."""
    c = _comps(raw, d, charset, limit=7)
    return _name(_at(c, 2), _at(c, 3), _at(c, 4), _at(c, 5), _at(c, 6), _at(c, 7))


def ndl(raw: str, d: Delimiters, charset: str) -> PersonName | None:
    """NDL (OBR-32..35): name is CNN in component 1 as subcomponents id&family&given&…"""
    first = raw.split(d.component, 1)[0]
    if not d.subcomponent:
        return None
    s = [decode_escapes(x, d, charset=charset).strip() for x in first.split(d.subcomponent)]
    s += [""] * (7 - len(s))
    return _name(s[1], s[2], s[3], s[4], s[5], s[6])


def xad(raw: str, d: Delimiters, charset: str) -> Address | None:
    """XAD: street(SAD&…)^other^city^state^zip^country^type…"""
    c = _comps(raw, d, charset, sub_joiner=" ", limit=6)
    street = tuple(p for p in (_at(c, 1), _at(c, 2)) if p)
    a = Address(
        street=street, city=_at(c, 3), state=_at(c, 4), postal_code=_at(c, 5), country=_at(c, 6)
    )
    if not (a.street or a.city or a.state or a.postal_code):
        return None
    return a


def xtn(raw: str, d: Delimiters, charset: str) -> tuple[list[str], list[str]]:
    """XTN → (phones, emails): formatted number (comp 1), area+local (6, 7), unformatted (12)."""
    c = _comps(raw, d, charset)
    phones: list[str] = []
    emails: list[str] = []
    for v in (_at(c, 1), _at(c, 4)):
        if "@" in v:
            emails.append(v)
    first = _at(c, 1)
    if first and "@" not in first and any(ch.isdigit() for ch in first):
        phones.append(first)
    local = _at(c, 7)
    if local:
        phones.append(_at(c, 6) + local)
    unformatted = _at(c, 12)
    if unformatted and unformatted not in phones:
        phones.append(unformatted)
    return phones, emails


def cx(raw: str, d: Delimiters, charset: str) -> Identifier | None:
    """CX: id^check digit^scheme^authority(HD: namespace&universal&type)^type code."""
    comps = raw.split(d.component)
    value = decode_escapes(comps[0], d, charset=charset).strip() if comps else ""
    if d.subcomponent and d.subcomponent in value:
        value = value.split(d.subcomponent)[0]
    if not value:
        return None
    authority = ""
    if len(comps) > 3 and comps[3]:
        hd = comps[3].split(d.subcomponent) if d.subcomponent else [comps[3]]
        for h in hd:  # the first part given (a loop: no generator left unfinished)
            if h:
                authority = decode_escapes(h, d, charset=charset)
                break
    type_code = decode_escapes(comps[4], d, charset=charset).strip() if len(comps) > 4 else ""
    return Identifier(value=value, authority=authority.strip(), type_code=type_code)


def parse_ts(value: str, default_tz: timezone | None = None) -> datetime | None:
    """HL7 TS/DTM ``YYYY[MM[DD[HH[MM[SS[.S…]]]]]][±ZZZZ]`` → aware datetime (None if unreadable).

    Without an offset the sender's zone applies (``default_tz``: MSH-7's offset), else UTC, so
    every time we hand out is comparable. Cached: one message repeats its times (MSH-7 for
    the offset and the message time, OBR-7, OBR-22…), and datetimes are immutable.
    """
    return _parse_ts(value, default_tz)


@memoized("datatypes.parse_ts", 1024)
def _parse_ts(value: str, default_tz: timezone | None) -> datetime | None:
    v = value.strip()
    if len(v) < 4:
        return None
    v, tz = _split_offset(v)
    digits = v.split(".", 1)[0]
    # ASCII digits only: str.isdigit() also takes "²" or "٣", which int() refuses or reads
    if not (digits.isascii() and digits.isdigit()) or len(digits) % 2 or len(digits) > 14:
        return None
    parts = [int(digits[:4])] + [int(digits[i : i + 2]) for i in range(4, len(digits), 2)]
    parts += [1, 1][: max(0, 3 - len(parts))]
    try:
        return datetime(*parts, tzinfo=tz or default_tz or UTC)  # type: ignore[arg-type,misc]
    except (ValueError, TypeError, OverflowError):
        return None


def _split_offset(v: str) -> tuple[str, timezone | None]:
    """(the time without its ``±ZZZZ`` suffix, that offset or None when unreadable)."""
    for sign in ("+", "-"):
        pos = v.find(sign, 4)
        if pos != -1:
            return v[:pos], _offset(sign, v[pos + 1 : pos + 5])
    return v, None


def _offset(sign: str, off: str) -> timezone | None:
    if not (len(off) == 4 and off.isascii() and off.isdigit()):
        return None
    minutes = int(off[:2]) * 60 + int(off[2:])
    if minutes >= 24 * 60:
        return None
    return timezone(timedelta(minutes=minutes if sign == "+" else -minutes))


def parse_offset(value: str) -> timezone | None:
    ts = parse_ts(value)
    tail = value[4:]
    if ts is None or ("+" not in tail and "-" not in tail):
        return None
    return ts.tzinfo if isinstance(ts.tzinfo, timezone) else None


def parse_date(value: str) -> date | None:
    """PID-7 birth date: the first 8 digits, when they are a real date."""
    v = value.strip()[:8]
    if len(v) != 8 or not (v.isascii() and v.isdigit()):
        return None
    try:
        return date(int(v[:4]), int(v[4:6]), int(v[6:8]))
    except ValueError:
        return None
