"""Adversarial input shapes × pipeline stages: CPU time at two sizes and their ratio (issue 24).

    .venv/bin/python bench/adversarial.py [--sizes 16,64] [--repeats 2] [--shapes a,b]
                                          [--rss 4096] [--list]

An interface engine sends whatever its sources produce. Each shape below is a payload of N KiB
(HTML, RTF, an HL7 v2 field with escapes, plain text) carried as an attacker would send it:
FHIR DocumentReference attachments for HTML/RTF/plain, an ORU^R01 for the HL7 shapes. Each
input runs through ``Processor.process`` (parse → detect → replace → leak guard → render)
with an in-memory key store and the CPU clock as the processor's stage timer; a fresh patient
per run, so no run is a duplicate of another. Printed per shape and stage: CPU seconds at
each size (the minimum of ``--repeats`` runs: noise on a shared machine only slows a run
down) and the growth ratio of the last size over the first. Linear work gives the size ratio
(4 for 16 → 64 KiB); quadratic work 16. Targets (issue 24): whole ≤ 6 and ≤ 5 s at 64 KiB.

``--rss KIB`` instead runs each shape once at that size in a child process and prints its peak
RSS and the resident size before the document (issue 24 item 5: < 1 GB at 4 MiB).

Speed figures are printed, never asserted; ``tests/test_adversarial_growth.py`` asserts the
ratios (generously) on a few shapes per stage.
"""

from __future__ import annotations

import argparse
import base64
import gc
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KIB = 1024
STAGES = ("parse", "detect", "replace", "guard", "near_duplicate", "render", "whole")


def _fill(unit: str) -> Callable[[int], str]:
    return lambda n: unit * max(1, n // len(unit))


def _words(n: int, capital: bool = True) -> str:
    """Distinct pronounceable words (no dictionary words, no corpus strings)."""
    syll = ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "be", "do", "fu", "gi")
    out: list[str] = []
    size = 0
    i = 0
    while size < n:
        j, w = i, []
        for _ in range(3):
            w.append(syll[j % len(syll)])
            j //= len(syll)
        word = "".join(w) + syll[i % 5]
        out.append(word.capitalize() if capital else word)
        size += len(word) + 1
        i += 1
    return " ".join(out)


def _nested(open_: str, close: str, inner: str = "x") -> Callable[[int], str]:
    def make(n: int) -> str:
        k = max(1, n // (len(open_) + len(close)))
        return open_ * k + inner + close * k

    return make


# name → (carrier, payload builder of about n characters)
SHAPES: dict[str, tuple[str, Callable[[int], str]]] = {
    # HTML (a FHIR text/html attachment)
    "html_unclosed_a": ("html", _fill("<a ")),
    "html_unclosed_tag_attr": ("html", _fill('<p class="x" ')),
    "html_deep_nesting": ("html", _nested("<div>", "</div>")),
    "html_deep_unclosed": ("html", _fill("<span><b>")),
    "html_long_attribute": ("html", lambda n: '<a href="' + "x" * n + '">y</a>'),
    "html_unclosed_quote": ("html", lambda n: '<a href="' + "x y " * (n // 4)),
    "html_many_entities": ("html", _fill("&amp;&#169;&lt;&Eacute;&#x41; ")),
    "html_bad_entities": ("html", _fill("&am &#9999999999; &#x;& ")),
    "html_many_tags": ("html", _fill("<b>Ab</b> ")),
    "html_unclosed_comment": ("html", lambda n: "<!--" + "a -" * (n // 3)),
    "html_many_comments": ("html", _fill("<!-- a -->b ")),
    "html_lt_runs": ("html", _fill("<")),
    "html_script": ("html", lambda n: "<script>" + "a<b " * (n // 4)),
    "html_cdata": ("html", _fill("<![CDATA[a]]>")),
    "html_pi_doctype": ("html", _fill("<!DOCTYPE x><?x y?>")),
    "xml_namespaces": ("html", _fill("<a:b:c:given>Ab</a:b:c:given>")),
    # RTF (a FHIR text/rtf attachment)
    "rtf_groups": ("rtf", lambda n: "{\\rtf1 " + _nested("{", "}", "x")(n) + "}"),
    "rtf_flat_groups": ("rtf", lambda n: "{\\rtf1 " + _fill("{\\b x}")(n) + "}"),
    "rtf_control_words": ("rtf", lambda n: "{\\rtf1 " + _fill("\\b x\\b0 ")(n) + "}"),
    "rtf_unclosed_groups": ("rtf", lambda n: "{\\rtf1 " + _fill("{\\i a ")(n)),
    "rtf_hex_escapes": ("rtf", lambda n: "{\\rtf1 " + _fill("\\'e9\\'41")(n) + "}"),
    "rtf_unicode": ("rtf", lambda n: "{\\rtf1 " + _fill("\\u233?\\u65 ")(n) + "}"),
    "rtf_destinations": ("rtf", lambda n: "{\\rtf1 " + _fill("{\\*\\x a}")(n) + "}"),
    "rtf_font_table": ("rtf", lambda n: "{\\rtf1{\\fonttbl" + _fill("\\f1 x")(n) + "}}"),
    "rtf_fields": (
        "rtf",
        lambda n: "{\\rtf1 " + _fill("{\\field{\\*\\fldinst{HYPERLINK ")(n) + "}",
    ),
    "rtf_bin": ("rtf", lambda n: "{\\rtf1 {\\pict\\bin" + "1" * (n // 2) + " }a}"),
    "rtf_backslashes": ("rtf", lambda n: "{\\rtf1 " + _fill("\\\\")(n) + "}"),
    # HL7 v2 (one ORU^R01; the payload is OBX-5 of a TX, or the whole body for *_segments)
    "hl7_escapes": ("hl7", _fill("\\F\\\\S\\\\T\\\\E\\\\R\\ab")),
    "hl7_hex_escapes": ("hl7", _fill("\\X4142\\")),
    "hl7_format_escapes": ("hl7", _fill("\\.br\\\\.sp 3\\\\H\\x\\N\\")),
    "hl7_unclosed_escape": ("hl7", lambda n: "\\" + "a" * n),
    "hl7_lone_escapes": ("hl7", _fill("\\a ")),
    "hl7_repetitions": ("hl7", _fill("Ab~")),
    "hl7_components": ("hl7", _fill("Ab^")),
    "hl7_subcomponents": ("hl7", _fill("Ab&")),
    "hl7_many_obx": ("hl7_segments", _fill("Seen today.\r")),
    "hl7_ed_html": ("hl7_ed", _fill("<a ")),
    # plain text (a FHIR text/plain attachment)
    "one_long_word": ("plain", lambda n: "Ab" + "c" * (n - 2)),
    "one_long_caps_word": ("plain", _fill("A")),
    "capitalised_words": ("plain", _words),
    "repeated_capitalised": ("plain", _fill("Abc ")),
    "lower_words": ("plain", lambda n: _words(n, capital=False)),
    "title_names": ("plain", _fill("Dr. Ab Cd, ")),
    "digits_only": ("plain", _fill("1")),
    "digit_groups": ("plain", _fill("12 ")),
    "punctuation_runs": ("plain", _fill(".,;:!?-")),
    "date_like": ("plain", _fill("1/2/2003 ")),
    "date_words": ("plain", _fill("Jan 3 2004, ")),
    "many_short_lines": ("plain", _fill("a\n")),
    "blank_lines": ("plain", _fill("\n")),
    "combining_marks": ("plain", lambda n: "a" + "\u0301" * (n - 1)),
    "combining_words": ("plain", _fill("Ae\u0301b ")),
    "cjk": ("plain", _fill("患者")),
    "emails_dots": ("plain", lambda n: "a." * (n // 2) + "@x"),
    "phone_like": ("plain", _fill("(555) 01-")),
    "hyphenated": ("plain", _fill("Ab-")),
    "initials": ("plain", _fill("A. ")),
}

_MEDIA = {"html": "text/html", "rtf": "text/rtf", "plain": "text/plain"}


def _docref(payload: str, media: str, patient: str) -> bytes:
    data = base64.b64encode(payload.encode("utf-8")).decode("ascii")
    resource = {
        "resourceType": "DocumentReference",
        "id": "doc-" + patient,
        "status": "current",
        "type": {"coding": [{"system": "http://loinc.org", "code": "11506-3"}]},
        "subject": {"reference": "Patient/" + patient},
        "date": "2024-03-05T10:00:00-05:00",
        "content": [{"attachment": {"contentType": media, "data": data}}],
        "context": {"encounter": [{"reference": "Encounter/enc-" + patient}]},
    }
    return orjson.dumps(resource)


def _oru(body: str, patient: str) -> bytes:
    head = (
        "MSH|^~\\&|ADV|BENCH|DEID|RESEARCH|20240305101500||ORU^R01|M" + patient + "|P|2.5\r"
        "PID|1||" + patient + "^^^BENCH^MR||Quenby^Orla\r"
        "PV1|1|I|||||||||||||||||V" + patient + "^^^BENCH^VN\r"
        "OBR|1||R" + patient + "|11506-3^Progress note^LN\r"
    )
    return (head + body).encode("utf-8")


def build_input(shape: str, n: int, patient: str) -> tuple[bytes, str | None]:
    """(raw bytes as the service receives them, content hint) for ``shape`` at ``n`` chars."""
    carrier, make = SHAPES[shape]
    payload = make(n)
    if carrier == "hl7":
        return _oru("OBX|1|TX|NOTE^Note^L|1|" + payload + "||||||F\r", patient), None
    if carrier == "hl7_segments":
        lines = payload.split("\r")
        body = "".join(f"OBX|{i}|TX|NOTE^Note^L|1|{t}||||||F\r" for i, t in enumerate(lines, 1))
        return _oru(body, patient), None
    if carrier == "hl7_ed":
        obx = "OBX|1|ED|NOTE^Note^L|1|^text^html^A^" + payload + "||||||F\r"
        return _oru(obx, patient), None
    return _docref(payload, _MEDIA[carrier], patient), "application/fhir+json"


class Runner:
    """One processor (warm) timing inputs, CPU clock."""

    def __init__(self) -> None:
        from keystore.memory import InMemoryStore
        from keystore.pseudonyms import Pseudonyms
        from pipelines.policy import Policy
        from pipelines.process import Processor
        from service.wiring import freeze_after_warmup, warm_word_lists

        warm_word_lists()  # as the service does, before its processor
        self.proc = Processor(
            policy=Policy.load(),
            store=InMemoryStore(),
            pseudonyms=Pseudonyms.random(),
            timer=time.process_time,
            max_bytes=64 << 20,
        )
        self.count = 0
        self.outcome = ""
        self.run("plain_warmup", b"", None)  # the tagger and the rest load here
        freeze_after_warmup()  # as the service does after its warm-up

    def run(self, shape: str, raw: bytes, hint: str | None) -> dict[str, float]:
        if not raw:
            raw, hint = build_input("title_names", 256, "P0")
        gc.collect()
        t0 = time.process_time()
        (result,) = self.proc.process_many([(raw, hint, datetime.now(UTC))])
        whole = time.process_time() - t0
        times: dict[str, float] = {"whole": whole}
        if isinstance(result, BaseException):  # a typed input error is an outcome too
            self.outcome = type(result).__name__
            return times
        self.outcome = ",".join(sorted({o.kind.name.lower() for o in result})) or "none"
        for out in result:
            for stage, seconds in out.stage_seconds.items():
                times[stage] = times.get(stage, 0.0) + seconds
        return times

    def measure(self, shape: str, n: int, repeats: int) -> dict[str, float]:
        best: dict[str, float] = {}
        for _ in range(repeats):
            self.count += 1
            raw, hint = build_input(shape, n, f"A{self.count}")
            for stage, seconds in self.run(shape, raw, hint).items():
                best[stage] = min(best.get(stage, seconds), seconds)
        return best


def table(shapes: list[str], sizes: list[int], repeats: int) -> int:
    runner = Runner()
    first, last = sizes[0], sizes[-1]
    print(f"CPU seconds, min of {repeats}; ratio = t({last} KiB) / t({first} KiB)")
    head = f"{'shape':<24}" + "".join(f"{s:>16}" for s in STAGES if s != "whole")
    print(head + f"{'whole':>22}")
    worst = (0.0, "")
    for shape in shapes:
        per_size = [runner.measure(shape, kib * KIB, repeats) for kib in sizes]
        cells = []
        for stage in STAGES:
            a, b = per_size[0].get(stage, 0.0), per_size[-1].get(stage, 0.0)
            ratio = b / a if a > 0.0005 else float("nan")
            cell = f"{b:7.3f} ×{ratio:4.1f}" if ratio == ratio else f"{b:7.3f}   -- "
            cells.append(cell)
            if stage == "whole" and ratio == ratio and ratio > worst[0]:
                worst = (ratio, shape)
        row = f"{shape:<24}" + "".join(f"{c:>16}" for c in cells[:-1]) + f"{cells[-1]:>22}"
        print(row + f"  {runner.outcome}")
        sys.stdout.flush()
    print(f"worst whole-pipeline ratio: {worst[0]:.1f} ({worst[1]})")
    return 0


def _rss_mb() -> float:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return float("nan")
    return pages * resource.getpagesize() / 2**20


def rss_child(shape: str, kib: int) -> int:
    runner = Runner()
    gc.collect()
    before = _rss_mb()
    raw, hint = build_input(shape, kib * KIB, "R1")
    times = runner.run(shape, raw, hint)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{shape:<24} {kib:>6} KiB  peak RSS {peak:7.0f} MB  (resident before {before:5.0f} MB)"
        f"  CPU {times['whole']:7.2f} s",
        flush=True,
    )
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sizes", default="16,64", help="KiB, comma-separated (first and last compared)"
    )
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--shapes", default="", help="comma-separated subset (default: all)")
    ap.add_argument("--rss", type=int, default=0, help="peak RSS per shape at this many KiB")
    ap.add_argument("--list", action="store_true", help="list the shapes")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    shapes = [s for s in args.shapes.split(",") if s] or list(SHAPES)
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        ap.error(f"unknown shapes: {', '.join(unknown)}")
    if args.list:
        print("\n".join(f"{s:<24} {SHAPES[s][0]}" for s in SHAPES))
        return 0
    if args.child:
        return rss_child(args.child, args.rss)
    if args.rss:
        for shape in shapes:
            cmd = [sys.executable, __file__, "--child", shape, "--rss", str(args.rss)]
            subprocess.run(cmd, check=False)
        return 0
    return table(shapes, [int(s) for s in args.sizes.split(",")], args.repeats)


if __name__ == "__main__":
    sys.exit(main())
