"""The demo tells each input's story (issue 15 item 8); counts read as English."""

from __future__ import annotations

from service.commands.demo import Story, plural, story_lines


def _rec(
    key: str, version: str | None, replaces: str | None = None, tombstone: bool = False
) -> dict[str, object]:
    headers = {k: v for k, v in (("version", version), ("replaces", replaces)) if v}
    return {"key": key, "headers": headers, "value": None if tombstone else {"x": 1}}


def test_each_input_gets_its_own_line() -> None:
    stories = [
        Story("a.hl7", {"published": 1}, (_rec("k1", "v1"),)),
        Story("b.hl7", {"duplicate": 1}),
        Story("c.hl7", {"published": 1}, (_rec("k1", "v2", replaces="v1"),)),
        Story("d.hl7", {"tombstoned": 1}, (_rec("k2", None, tombstone=True),)),
        Story(
            "e.hl7",
            {"deadlettered": 1},
            dead=({"headers": {"reason-class": "not_hl7", "reason": "no MSH segment"}},),
        ),
        Story("f.hl7", {"held": 1}),
    ]
    lines = story_lines(stories)
    assert len(lines) == 6
    assert "published as research key k1; later replaced by its correction c.hl7" in lines[0]
    assert "duplicate" in lines[1]
    assert "replacing the version from a.hl7" in lines[2]
    assert "tombstone for research key k2" in lines[3]
    assert "dead letter [not_hl7]: no MSH segment" in lines[4]
    assert "held back by the leak guard" in lines[5]


def test_plural() -> None:
    assert plural(1, "tombstone") == "1 tombstone"
    assert plural(0, "tombstone") == "0 tombstones"
    assert plural(3, "live document") == "3 live documents"
