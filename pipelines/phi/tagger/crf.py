"""crfsuite's tagger through its C API, fed attribute ids instead of attribute strings.

python-crfsuite's ``Tagger.set`` takes every item's attributes as strings and turns each
into a C++ string and a dictionary lookup, on every item of every note; for a long note that
was half of the tagger's time. The same library exports crfsuite's C API (``crfsuite.h``,
version 0.12, bundled in python-crfsuite), and this module calls it through cffi: the model
is opened by ``crfsuite_create_instance_from_file`` as python-crfsuite opens it, the
attribute dictionary is read once into ``{string: id}``, and a note's items are handed over
as one buffer of ``crfsuite_attribute_t`` records the featurizer packs per distinct word
(``ATTRIBUTE``). State scores, Viterbi and marginals are then crfsuite's own code, so the
labels and probabilities are those python-crfsuite gives (``tests/tagger/test_crf.py``).
Training still goes through python-crfsuite's ``Trainer``.

What is written by hand here: the declarations of the public structs and function tables of
``crfsuite.h`` (cffi needs them: ``crf_ffi``, built into ``_crf_ffi.py``, cffi's out-of-line
ABI mode), and the packing of items. The layout is checked against ``struct`` at import.
"""

from __future__ import annotations

import os
import struct
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from importlib import metadata
from itertools import accumulate, repeat
from operator import mul, truediv
from pathlib import Path
from typing import Any, Final, Protocol

import pycrfsuite
import pycrfsuite._pycrfsuite as _native

from pipelines import compiled
from pipelines.errors import DeidstreamError
from pipelines.phi.tagger._crf_ffi import ffi as _ffi

# One attribute of an item as crfsuite holds it: its id and its value (1.0: present).
ATTRIBUTE: Final = struct.Struct("@id")
# One item: the number of its attributes (twice: count and capacity) and where they start.
_ITEM: Final = struct.Struct("@iiP")

_DOUBLE: Final = 8  # floatval_t
# the C types a note is handed over with, parsed once (not on every note)
_C_TYPES: Final = {
    name: _ffi.typeof(name)
    for name in (
        "uintptr_t",
        "crfsuite_instance_t *",
        "crfsuite_item_t *",
        "int[]",
        "crf1dt_head_t *",
    )
}


@cache
def _lib() -> Any:
    """The C library: python-crfsuite's extension module, which exports crfsuite's API."""
    lib = _ffi.dlopen(_native.__file__)
    for name, packed in (("crfsuite_attribute_t", ATTRIBUTE), ("crfsuite_item_t", _ITEM)):
        if _ffi.sizeof(name) != packed.size:
            raise ImportError(f"crfsuite's {name} is not laid out as expected")
    if _ffi.sizeof("floatval_t") != _DOUBLE or array("d").itemsize != _DOUBLE:
        raise ImportError("crfsuite's floatval_t is not a double")
    return lib


CHECKED: Final = ("0.9",)  # python-crfsuite releases whose exported C API the tests have read


def _c_api_usable() -> bool:
    """The C API path: a checked python-crfsuite whose extension module loads as declared."""
    try:
        release = metadata.version("python-crfsuite")
        if ".".join(release.split(".")[:2]) not in CHECKED:
            return False
        _lib()
    except (metadata.PackageNotFoundError, ImportError, OSError, AttributeError):
        return False
    return True


C_API: Final = _c_api_usable()
_use_c = [C_API]  # the switch, flipped only by ``c_api`` (the equivalence tests use it)


@contextmanager
def c_api(enabled: bool) -> Iterator[None]:
    """Models opened inside the block use the C API (when usable) or python-crfsuite's
    public ``Tagger``."""
    before = _use_c[0]
    _use_c[0] = enabled and C_API
    try:
        yield
    finally:
        _use_c[0] = before


class ItemTagger(Protocol):
    """What the tagger model needs of crfsuite, whichever way it is reached."""

    length: int

    def set(self, packed: bytes | bytearray, counts: list[int]) -> None: ...
    def viterbi(self) -> list[int]: ...
    def marginal(self, label: int, item: int) -> float: ...
    def marginals(self, label: int) -> list[float]: ...
    def candidates(self, outside: int, least: float) -> Candidates: ...


# The items that may be PHI (``likely_phi``): their indices, their labels on the Viterbi
# path and their probability of the label ``outside``, in item order.
Candidates = tuple[list[int], list[int], list[float]]


def likely_phi(path: list[int], p_out: list[float], outside: int, least: float) -> Candidates:
    """The items whose label on the Viterbi ``path`` is not ``outside`` or whose probability
    of it (``p_out``) leaves at least ``least`` for the others: the reference of
    ``_rows_c.candidates``."""
    found = [
        i
        for i, (label, p) in enumerate(zip(path, p_out, strict=True))
        if label != outside or 1.0 - p >= least
    ]
    return found, [path[i] for i in found], [p_out[i] for i in found]


class CrfError(DeidstreamError):
    """crfsuite could not open a model or tag a note: the model file or the library is at
    fault, not the input, and retrying will not help."""

    reason_class = "tagger_model"


def _strings(dictionary: Any) -> list[str]:
    """Every string of a crfsuite dictionary, in id order."""
    out: list[str] = []
    text = _ffi.new("char const **")
    for i in range(dictionary.num(dictionary)):
        if dictionary.to_string(dictionary, i, text) != 0:
            raise CrfError(f"crfsuite dictionary entry {i} unreadable")
        out.append(_ffi.string(text[0]).decode())
        dictionary.free(dictionary, text[0])
    return out


_MAGIC: Final = b"lCRF"
_HEADER_SIZE: Final = 48


def _check_header(path: Path) -> None:
    """What python-crfsuite checks before crfsuite reads a file, which it does unchecked:
    the magic bytes, and a header that is all there."""
    with path.open("rb") as fh:
        head = fh.read(_HEADER_SIZE + 1)
    if head[:4] != _MAGIC:
        raise CrfError(f"crfsuite cannot read the model {path}: not a crfsuite model")
    if len(head) <= _HEADER_SIZE:
        raise CrfError(f"crfsuite cannot read the model {path}: its header is incomplete")


class CrfModel:
    """A trained model file opened by crfsuite: its attribute ids and its labels."""

    def __init__(self, path: Path) -> None:
        _check_header(path)
        self.path = path
        self.c_api = _use_c[0]
        if not self.c_api:  # python-crfsuite's public API: the reference and the fallback
            public = pycrfsuite.Tagger()
            try:
                public.open(str(path))
            except (OSError, ValueError) as e:
                raise CrfError(f"crfsuite cannot read the model {path}") from e
            self.attribute_ids: dict[str, int] = {
                a: int(i) for a, i in public.info().attributes.items()
            }
            self.labels: tuple[str, ...] = tuple(public.labels())
            self.attribute_names = sorted(self.attribute_ids, key=self.attribute_ids.__getitem__)
            return
        lib = _lib()
        pointer = _ffi.new("void **")
        if lib.crfsuite_create_instance_from_file(os.fsencode(path), pointer) != 0:
            raise CrfError(f"crfsuite cannot read the model {path}")
        model = _ffi.cast("crfsuite_model_t *", pointer[0])
        self._model = _ffi.gc(model, lambda m: m.release(m))
        dictionaries = _ffi.new("crfsuite_dictionary_t **")
        model.get_attrs(model, dictionaries)
        self.attribute_names = _strings(dictionaries[0])
        self.attribute_ids = {a: i for i, a in enumerate(self.attribute_names)}
        model.get_labels(model, dictionaries)
        self.labels = tuple(_strings(dictionaries[0]))

    def tagger(self) -> ItemTagger:
        """A new tagger of this model (one per thread: a tagger holds a note's scores)."""
        return CrfTagger(self) if self.c_api else PublicTagger(self)


class PublicTagger:
    """The same answers through python-crfsuite's public ``Tagger``: each item's attribute
    ids are turned back into their names, as training wrote them (one call per marginal)."""

    def __init__(self, model: CrfModel) -> None:
        self._tagger = pycrfsuite.Tagger()
        self._tagger.open(str(model.path))
        self._names = model.attribute_names
        self._labels = model.labels
        self.length = 0

    def set(self, packed: bytes | bytearray, counts: list[int]) -> None:
        if sum(counts) * ATTRIBUTE.size != len(packed):
            raise CrfError("the items' attribute counts do not add up to the records given")
        records = ATTRIBUTE.iter_unpack(packed)
        names = self._names
        items: list[list[str] | dict[str, float]] = []
        for n in counts:
            row = [next(records) for _ in range(n)]
            if all(value == 1.0 for _, value in row):  # as training wrote them: names, in order
                items.append([names[aid] for aid, _ in row])
                continue
            item: dict[str, float] = {}
            for aid, value in row:  # an attribute twice counts twice, as crfsuite sums them
                item[names[aid]] = item.get(names[aid], 0.0) + value
            items.append(item)
        self._tagger.set(pycrfsuite.ItemSequence(items))
        self.length = len(counts)

    def viterbi(self) -> list[int]:
        if self.length == 0:
            return []
        return [self._labels.index(label) for label in self._tagger.tag()]

    def marginal(self, label: int, item: int) -> float:
        return float(self._tagger.marginal(self._labels[label], item))

    def marginals(self, label: int) -> list[float]:
        return [self.marginal(label, i) for i in range(self.length)]

    def candidates(self, outside: int, least: float) -> Candidates:
        return likely_phi(self.viterbi(), self.marginals(outside), outside, least)


def _fast() -> Any:
    """The rows helper where built and its crfsuite structs are laid out as cffi's."""
    fast = compiled.helper("rows")
    return fast if fast is not None and _LAID_OUT else None


def _laid_out() -> bool:
    """Whether the rows helper reads crfsuite's instance and context as cffi declares them."""
    fast = compiled.BUILT.get("rows")
    if fast is None or not C_API:
        return False
    fields = ("num_labels", "alpha_score", "beta_score", "scale_factor")
    offsets = tuple(_ffi.offsetof("crf1d_context_t", f) for f in fields)
    return bool(
        _ITEM.size == fast.ITEM_SIZE
        and _ffi.sizeof("crfsuite_instance_t") == fast.INSTANCE_SIZE
        and offsets == fast.CONTEXT_OFFSETS
    )


_LAID_OUT: Final = _laid_out()


def _items(counts: list[int], base: int) -> bytes:
    """crfsuite's items (``_ITEM``) of rows of ``counts`` records end to end from the
    address ``base``: in one C loop where the rows helper is built (``_rows_c.items``)."""
    fast = compiled.helper("rows")
    if fast is not None and _ITEM.size == fast.ITEM_SIZE:
        items: bytes = fast.items(counts, base, ATTRIBUTE.size)
        return items
    starts = accumulate(map(mul, counts, repeat(ATTRIBUTE.size)), initial=base)
    return b"".join(map(_ITEM.pack, counts, counts, starts))


class CrfTagger:
    """crfsuite's tagger: ``set`` a note's rows, then its Viterbi path and marginals."""

    def __init__(self, model: CrfModel) -> None:
        self._owner = model  # the tagger reads the model's memory: keep it alive
        pointer = _ffi.new("crfsuite_tagger_t **")
        raw = model._model
        if raw.get_tagger(raw, pointer) != 0:
            raise CrfError("crfsuite cannot make a tagger")
        self._tagger = _ffi.gc(pointer[0], lambda t: t.release(t))
        self._out = _ffi.new("floatval_t *")
        self.length = 0
        # the tagger and its functions as addresses, for the rows helper's one call a step
        tagger, address = self._tagger, _C_TYPES["uintptr_t"]
        self._calls = tuple(
            int(_ffi.cast(address, f))
            for f in (tagger, tagger.set, tagger.viterbi, tagger.marginal_point)
        )

    def set(self, packed: bytes | bytearray, counts: list[int]) -> None:
        """Score a note: its items' ``ATTRIBUTE`` records end to end, and how many records
        each item has, in order."""
        fast = _fast()
        if fast is not None and type(packed) is bytes:  # the lines below in one C call
            tagger, function = self._calls[:2]
            try:
                done = fast.set_items(tagger, function, packed, counts, ATTRIBUTE.size)
            except ValueError as e:
                raise CrfError(str(e)) from None
            if done != 0:
                raise CrfError("crfsuite could not score a note")
            self.length = len(counts)
            return
        if sum(counts) * ATTRIBUTE.size != len(packed):
            raise CrfError("the items' attribute counts do not add up to the records given")
        buffer = _ffi.from_buffer(packed)
        base = int(_ffi.cast(_C_TYPES["uintptr_t"], buffer))
        items = _items(counts, base)
        instance = _ffi.new(_C_TYPES["crfsuite_instance_t *"])
        instance.num_items = instance.cap_items = len(counts)
        instance.items = _ffi.cast(_C_TYPES["crfsuite_item_t *"], _ffi.from_buffer(items))
        tagger = self._tagger
        if tagger.set(tagger, instance) != 0:
            raise CrfError("crfsuite could not score a note")
        self.length = len(counts)

    def viterbi(self) -> list[int]:
        """The likeliest label of each item (label ids: ``CrfModel.labels``)."""
        if self.length == 0:
            return []
        return list(_ffi.unpack(self._path(), self.length))

    def _path(self) -> Any:
        """The Viterbi path as crfsuite writes it (``int[]``, one label id per item)."""
        labels = _ffi.new(_C_TYPES["int[]"], self.length)
        tagger = self._tagger
        if tagger.viterbi(tagger, labels, _ffi.NULL) != 0:
            raise CrfError("crfsuite could not find a path")
        return labels

    def marginal(self, label: int, item: int) -> float:
        """The probability that ``item`` has ``label``."""
        tagger = self._tagger
        tagger.marginal_point(tagger, label, item, self._out)
        return float(self._out[0])

    def marginals(self, label: int) -> list[float]:
        """The probability of ``label`` at every item. The first comes through the API,
        which runs the forward-backward pass; the others are computed as the API computes
        each (``crf1dc_marginal_point``: forward times backward score over the item's
        scale factor, in doubles), from the context's arrays in one pass, not one call each."""
        n = self.length
        if n == 0:
            return []
        context = self._forward_backward(label)
        labels = context.num_labels
        size = n * labels * _DOUBLE
        forward, backward, scale = array("d"), array("d"), array("d")
        forward.frombytes(_ffi.buffer(context.alpha_score, size))
        backward.frombytes(_ffi.buffer(context.beta_score, size))
        scale.frombytes(_ffi.buffer(context.scale_factor, n * _DOUBLE))
        column = slice(label, None, labels)
        return list(map(truediv, map(mul, forward[column], backward[column]), scale))

    def _forward_backward(self, label: int) -> Any:
        """crfsuite's context after its forward-backward pass, which the API runs for the
        first marginal asked of a note (``label``'s at the first item)."""
        self.marginal(label, 0)
        return _ffi.cast(_C_TYPES["crf1dt_head_t *"], self._tagger.internal).ctx

    def candidates(self, outside: int, least: float) -> Candidates:
        """The items that may be PHI (``likely_phi``), with their path labels and their
        probability of ``outside``: in one C loop over the Viterbi path and the
        forward-backward arrays where the rows helper is built (``_rows_c.candidates``),
        from :meth:`viterbi` and :meth:`marginals` otherwise (the reference). Most items are
        neither, and no Python object is made for them. Once per note set: crfsuite's
        Viterbi pass writes over the forward scores the marginals are read from. Where the
        helper reads crfsuite's structs as declared, the passes and the loop are one C call
        (``_rows_c.tagged``)."""
        fast = compiled.helper("rows")
        n = self.length
        if fast is None or n == 0:
            return likely_phi(self.viterbi(), self.marginals(outside), outside, least)
        if not _LAID_OUT:
            return self._candidates(fast, outside, least)
        tagger, _, viterbi, marginal = self._calls
        found: Candidates | None = fast.tagged(tagger, viterbi, marginal, n, outside, least)
        if found is None:
            raise CrfError("crfsuite could not find a path")
        return found

    def _candidates(self, fast: Any, outside: int, least: float) -> Candidates:
        """:meth:`candidates` from the cffi path and the rows helper's ``candidates``: the
        reference of its ``tagged``."""
        n = self.length
        path = self._path()
        context = self._forward_backward(outside)
        cast, address = _ffi.cast, _C_TYPES["uintptr_t"]
        listed: Candidates = fast.candidates(
            int(cast(address, context.alpha_score)),
            int(cast(address, context.beta_score)),
            int(cast(address, context.scale_factor)),
            int(cast(address, path)),
            n,
            context.num_labels,
            outside,
            least,
        )
        return listed
