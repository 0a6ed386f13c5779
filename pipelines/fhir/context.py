"""References and context resources: who the document is about, which visit, who wrote it.

Patient, RelatedPerson, Practitioner(Role) and Encounter found in the Bundle or in
``contained`` give the detector its :class:`Identifiers`; a reference that resolves nowhere
still gives what it says (logical id, ``identifier``, ``display``).
"""

from __future__ import annotations

from datetime import date

from pipelines.document import Address, Identifier, PersonName
from pipelines.fhir.json import Json, codes, obj, objs, string, strings
from pipelines.identifiers import CollectedIdentifiers

SSN_SYSTEMS = ("http://hl7.org/fhir/sid/us-ssn",)
SSN_CODES = frozenset({"SS", "SSN", "SB"})
OTHER_ID_CODES = frozenset({"DL", "PPN", "DR", "SR", "NPI"})


def reference_parts(reference: str) -> list[str]:
    """The ``/``-separated parts of a reference, without a version tail (``_history/2``)."""
    parts = reference.rstrip("/").split("/")
    if len(parts) >= 4 and parts[-2] == "_history":
        parts = parts[:-2]
    return parts


class Resolver:
    """Finds resources by reference: ``#id`` (contained), ``Type/id``, absolute URL, fullUrl."""

    def __init__(self) -> None:
        self._by_key: dict[str, Json] = {}

    def add(self, resource: Json, full_url: str = "") -> None:
        rtype = resource.get("resourceType")
        rid = resource.get("id")
        if full_url:
            self._by_key[full_url] = resource
        if isinstance(rtype, str) and isinstance(rid, str):
            self._by_key[f"{rtype}/{rid}"] = resource

    def with_contained(self, resource: Json, path: str) -> Resolver:
        contained = objs(resource, "contained", path)
        if not contained:
            return self
        child = Resolver()
        child._by_key = dict(self._by_key)
        for c in contained:
            cid = c.get("id")
            if isinstance(cid, str):
                child._by_key[f"#{cid}"] = c
        return child

    def resolve(self, reference: str) -> Json | None:
        if not reference:
            return None
        hit = self._by_key.get(reference)
        if hit is not None:
            return hit
        parts = reference_parts(reference)
        if len(parts) >= 2:  # absolute URL or versioned reference: try the Type/id tail
            return self._by_key.get(f"{parts[-2]}/{parts[-1]}")
        return None


def logical_id(reference: str) -> tuple[str, str]:
    """(id, authority) from a reference string: ``Patient/1`` → (1, ''), conditional
    ``Patient?identifier=sys|val`` → (val, sys), absolute URL → (id, base URL)."""
    if not reference or reference.startswith("#"):
        return "", ""
    if "?" in reference:
        query = reference.split("?", 1)[1]
        for part in query.split("&"):
            if part.startswith("identifier="):
                value = part[len("identifier=") :]
                system, _, val = value.rpartition("|")
                return val, system
        return "", ""
    if reference.startswith("urn:uuid:") or reference.startswith("urn:oid:"):
        return reference.rsplit(":", 1)[1], ""
    parts = reference_parts(reference)
    if len(parts) < 2:
        return parts[0], ""
    base = "/".join(parts[:-2])
    return parts[-1], base


def name_from_display(display: str) -> PersonName | None:
    """'Ronald Bone, MD' → PersonName(given=('Ronald',), family='Bone', suffix='MD')."""
    main, _, suffix = display.partition(",")
    words = main.split()
    if not words:
        return None
    if len(words) == 1:
        return PersonName(family=words[0], suffix=suffix.strip())
    return PersonName(family=words[-1], given=tuple(words[:-1]), suffix=suffix.strip())


def human_name(n: Json, path: str) -> PersonName | None:
    family = string(n, "family", path)
    given = tuple(strings(n, "given", path))
    if not family and not given:
        text = string(n, "text", path)
        return name_from_display(text) if text else None
    return PersonName(
        family=family,
        given=given,
        prefix=" ".join(strings(n, "prefix", path)),
        suffix=" ".join(strings(n, "suffix", path)),
    )


def address(a: Json, path: str) -> Address | None:
    lines = tuple(strings(a, "line", path))
    addr = Address(
        street=lines,
        city=string(a, "city", path) or string(a, "district", path),
        state=string(a, "state", path),
        postal_code=string(a, "postalCode", path),
        country=string(a, "country", path),
    )
    if not (addr.street or addr.city or addr.state or addr.postal_code):
        text = string(a, "text", path)
        return Address(street=(text,)) if text else None
    return addr


def birth_date(value: str) -> date | None:
    if len(value) < 10:
        return None
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        return None


class Collected(CollectedIdentifiers):
    """Identifiers gathered from FHIR resources, in the order found."""

    __slots__ = ()

    def telecom(self, res: Json, path: str) -> None:
        for t in objs(res, "telecom", path):
            value = string(t, "value", path)
            if not value:
                continue
            system = string(t, "system", path)
            if system == "email" or "@" in value:
                self.emails.append(value.removeprefix("mailto:"))
            elif system in ("phone", "fax", "sms", "pager", ""):
                self.phones.append(value.removeprefix("tel:"))

    def addresses_of(self, res: Json, path: str) -> None:
        for a in objs(res, "address", path):
            addr = address(a, path)
            if addr is not None:
                self.addresses.append(addr)

    def patient(self, p: Json, path: str) -> None:
        for n in objs(p, "name", path):
            name = human_name(n, path)
            if name is not None:
                self.patient_names.append(name)
        self.birth_date = self.birth_date or birth_date(string(p, "birthDate", path))
        self.record_sex(string(p, "gender", path))
        for ident in objs(p, "identifier", path):
            value = string(ident, "value", path)
            if not value:
                continue
            system = string(ident, "system", path)
            type_codes = {c for _, c, _ in codes(obj(ident, "type", path), path)}
            if system in SSN_SYSTEMS or type_codes & SSN_CODES:
                self.ssn.append(value)
            elif type_codes & OTHER_ID_CODES:
                code = sorted(type_codes & OTHER_ID_CODES)[0]
                self.other_ids.append(Identifier(value, system, code))
            else:
                code = "MR" if "MR" in type_codes else (sorted(type_codes)[0] if type_codes else "")
                self.patient_ids.append(Identifier(value, system, code))
        self.telecom(p, path)
        self.addresses_of(p, path)
        for i, contact in enumerate(objs(p, "contact", path)):
            cpath = f"{path}.contact[{i}]"
            name = human_name(obj(contact, "name", cpath), cpath)
            if name is not None:
                self.relatives.append(name)
            self.telecom(contact, cpath)
            a = address(obj(contact, "address", cpath), cpath)
            if a is not None:
                self.addresses.append(a)

    def person(self, res: Json, path: str, into: list[PersonName]) -> None:
        for n in objs(res, "name", path):
            name = human_name(n, path)
            if name is not None:
                into.append(name)

    def resource(self, res: Json, path: str, role: str) -> None:
        """Take what a resolved reference target tells (role: subject/author/encounter…)."""
        rtype = res.get("resourceType")
        if rtype == "Patient" and role == "subject":
            self.patient(res, path)
        elif rtype in ("Practitioner", "PractitionerRole"):
            self.person(res, path, self.providers)
        elif rtype == "RelatedPerson":
            self.person(res, path, self.relatives)
            self.telecom(res, path)
            self.addresses_of(res, path)
        elif rtype == "Encounter":
            for ident in objs(res, "identifier", path):
                value = string(ident, "value", path)
                if value:
                    self.other_ids.append(Identifier(value, string(ident, "system", path), "VN"))
            for part in objs(res, "participant", path):
                for key in ("individual", "actor"):  # R4 / R5
                    display = string(obj(part, key, path), "display", path)
                    name = name_from_display(display) if display else None
                    if name is not None:
                        self.providers.append(name)
