# cython: language_level=3, boundscheck=False, wraparound=False
"""The tagger's feature rows, compiled (``pipelines.compiled``): one C loop over a note's memo
entries where ``Featurizer.encode``, ``Featurizer._rows`` and ``_add_line_features`` in
``pipelines/phi/tagger/features.py`` take a C call per column and a Python object per step.
Those are the reference; these must give the same rows byte for byte, the same counts, items,
lower cases and line-start records (``tests/tagger/test_rows_compiled.py``).

An entry is the memo's plain tuple (``features._FIELDS``): its attribute ids (``features._entry``:
one bytes of native ints, where its first four kinds end, then its own ids and those the tokens
at offsets -2, -1, +1, +2 see), its lower case, whether the CRF labels it. A row's record of an
id is the ``template`` record with the id written over its first bytes."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_AsSsize_t, PyLong_FromSsize_t
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject, PyObject_IsTrue
from cpython.ref cimport Py_INCREF
from libc.string cimport memchr, memcpy


cdef extern from "Python.h":
    PyObject* PyTuple_GET_ITEM(object, Py_ssize_t)
    PyObject* PyList_GET_ITEM(object, Py_ssize_t)
    Py_ssize_t PyList_GET_SIZE(object)
    Py_ssize_t PyTuple_GET_SIZE(object)
    bint PyTuple_CheckExact(object)
    bint PyBytes_CheckExact(object)
    void* PyUnicode_DATA(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    int PyUnicode_KIND(object)
    Py_UCS4 PyUnicode_READ(int, void*, Py_ssize_t)


# the fields of an entry (``features._FIELDS``)
DEF _IDS = 0
DEF _LOWER = 1
DEF _ITEM = 2
DEF _WIDTH = 3
DEF _HEAD = 4  # the ints before an entry's ids: where its kinds 0 .. 3 end
# the kinds of ids: its own (0), then seen at -2, -1, +1, +2 (1 .. 4)

# the word before the first token and after the last, as the pair features name them
from pipelines.phi.tagger.bounds import BEGIN, END

cdef str _BEGIN = BEGIN
cdef str _END = END
# the neighbours' offsets (``features._CONTEXT``), in the order their records are joined
cdef Py_ssize_t[4] _OFFSETS = [-2, -1, 1, 2]


cdef inline object _entry(list entries, Py_ssize_t k):
    cdef object e = <object>PyList_GET_ITEM(entries, k)
    if not PyTuple_CheckExact(e) or PyTuple_GET_SIZE(e) != _WIDTH:
        raise TypeError("a tagger entry is a tuple of three fields")
    return e


cdef int _check_ids(object e) except -1:
    """That an entry's ids are whole: bytes of native ints, its ends ascending within them."""
    cdef object ids = <object>PyTuple_GET_ITEM(e, _IDS)
    cdef Py_ssize_t size, n, k, last = 0
    cdef const int* head
    if not PyBytes_CheckExact(ids):
        raise TypeError("an entry's ids are bytes")
    size = PyBytes_GET_SIZE(ids)
    if size % sizeof(int) or size < <Py_ssize_t>(_HEAD * sizeof(int)):
        raise ValueError("an entry's ids are not whole ints")
    n = size // sizeof(int) - _HEAD
    head = <const int*>PyBytes_AS_STRING(ids)
    for k in range(_HEAD):
        if head[k] < last or head[k] > n:
            raise ValueError("an entry's kinds do not end in order")
        last = head[k]
    return 0


cdef inline Py_ssize_t _kind(object e, int k, const int** start):
    """The ids of kind ``k`` of a checked entry: how many, and (``start``) where they are."""
    cdef object ids = <object>PyTuple_GET_ITEM(e, _IDS)
    cdef const int* head = <const int*>PyBytes_AS_STRING(ids)
    cdef Py_ssize_t begin = 0 if k == 0 else head[k - 1]
    cdef Py_ssize_t end = (
        head[k] if k < _HEAD else <Py_ssize_t>(PyBytes_GET_SIZE(ids) // sizeof(int)) - _HEAD
    )
    start[0] = head + _HEAD + begin
    return end - begin


cdef inline char* _put_ids(char* at, object e, int k, const char* template, Py_ssize_t record):
    """The records of an entry's ids of kind ``k``, written at ``at``."""
    cdef const int* ids
    cdef Py_ssize_t count = _kind(e, k, &ids)
    cdef Py_ssize_t q
    if record == 16:  # crfsuite's records (``crf.ATTRIBUTE``): copies of a known size, inlined
        for q in range(count):
            memcpy(at, template, 16)
            memcpy(at, &ids[q], sizeof(int))
            at += 16
        return at
    for q in range(count):
        memcpy(at, template, record)
        memcpy(at, &ids[q], sizeof(int))
        at += record
    return at


def scan(list entries):
    """The indices of the entries the CRF labels, and every entry's lower case: ``_items``
    and ``map(_lower, entries)`` in one pass."""
    cdef Py_ssize_t n = PyList_GET_SIZE(entries)
    cdef list items = []
    cdef list lowers = PyList_New(n)
    cdef Py_ssize_t k
    cdef object e
    cdef PyObject* flag
    cdef PyObject* low
    for k in range(n):
        e = _entry(entries, k)
        low = PyTuple_GET_ITEM(e, _LOWER)
        Py_INCREF(<object>low)
        PyList_SET_ITEM(lowers, k, <object>low)
        flag = PyTuple_GET_ITEM(e, _ITEM)
        if flag == <PyObject*>True or (
            flag != <PyObject*>False and PyObject_IsTrue(<object>flag)
        ):
            items.append(PyLong_FromSsize_t(k))
    return items, lowers


cdef inline Py_ssize_t _size(PyObject* record) except -1:
    """The length of a record taken from a table (None: no record)."""
    if record == NULL or record == <PyObject*>None:
        return 0
    if not PyBytes_CheckExact(<object>record):
        raise TypeError("a record is bytes")
    return PyBytes_GET_SIZE(<object>record)


cdef inline char* _put(char* at, PyObject* record):
    cdef Py_ssize_t size
    if record == NULL or record == <PyObject*>None:
        return at
    size = PyBytes_GET_SIZE(<object>record)
    memcpy(at, PyBytes_AS_STRING(<object>record), size)
    return at + size


cdef inline PyObject* _pair(dict table, object first, object second):
    """The record of the pair (``first``, ``second``) in a table of first word -> second
    word -> record, or NULL."""
    cdef PyObject* seconds = PyDict_GetItem(table, first)
    if seconds == NULL:
        return NULL
    return PyDict_GetItem(<dict>seconds, second)


def rows(
    list entries,
    list items,
    list lowers,
    tuple pad,
    dict left,
    dict right,
    dict extras,
    bytes template,
):
    """The items' rows end to end and the records of each (``Featurizer._rows``): each
    item's own records, what its neighbours at -2, -1, +1, +2 show (``pad`` beyond the
    note), its pair records (``left``/``right``: first word -> second word -> record), and
    its ``extras``. An id's record is ``template`` with the id over its first bytes."""
    cdef Py_ssize_t n = PyList_GET_SIZE(entries)
    cdef Py_ssize_t m = PyList_GET_SIZE(items)
    cdef Py_ssize_t record = PyBytes_GET_SIZE(template)
    cdef const char* stamp = PyBytes_AS_STRING(template)
    cdef Py_ssize_t j, i, o, size, total = 0
    cdef const int* unused
    cdef object e, item
    cdef PyObject** found
    cdef list counts
    cdef bytes packed
    cdef char* at
    if record < <Py_ssize_t>sizeof(int):
        raise ValueError("a record shorter than an id")
    if PyList_GET_SIZE(lowers) != n:
        raise ValueError("one lower case per entry")
    if not PyTuple_CheckExact(pad) or PyTuple_GET_SIZE(pad) != _WIDTH:
        raise TypeError("a tagger entry is a tuple of three fields")
    _check_ids(pad)
    for i in range(n):
        _check_ids(_entry(entries, i))
        if type(<object>PyList_GET_ITEM(lowers, i)) is not str:
            raise TypeError("a lower case is a str")
    # per item: its own entry's index, then its two pairs' and its extras' records
    found = <PyObject**>PyMem_Malloc(max(m, 1) * 3 * sizeof(PyObject*))
    cdef Py_ssize_t* at_item = <Py_ssize_t*>PyMem_Malloc(max(m, 1) * sizeof(Py_ssize_t))
    if found == NULL or at_item == NULL:
        PyMem_Free(found)
        PyMem_Free(at_item)
        raise MemoryError()
    try:
        counts = PyList_New(m)
        for j in range(m):
            item = <object>PyList_GET_ITEM(items, j)
            i = PyLong_AsSsize_t(item)
            if i < 0 or i >= n:
                raise IndexError("an item beyond the note's tokens")
            at_item[j] = i
            found[3 * j] = _pair(
                left, _BEGIN if i == 0 else <object>PyList_GET_ITEM(lowers, i - 1),
                <object>PyList_GET_ITEM(lowers, i),
            )
            found[3 * j + 1] = _pair(
                right, <object>PyList_GET_ITEM(lowers, i),
                _END if i == n - 1 else <object>PyList_GET_ITEM(lowers, i + 1),
            )
            found[3 * j + 2] = PyDict_GetItem(extras, item) if extras else NULL
            size = _kind(<object>PyList_GET_ITEM(entries, i), 0, &unused)
            for o in range(4):
                size += _kind(_near(entries, pad, i + _OFFSETS[o], n), o + 1, &unused)
            size *= record
            size += _size(found[3 * j]) + _size(found[3 * j + 1]) + _size(found[3 * j + 2])
            if size % record:
                raise ValueError("a row that is not whole records")
            PyList_SET_ITEM(counts, j, PyLong_FromSsize_t(size // record))
            total += size
        packed = PyBytes_FromStringAndSize(NULL, total)
        at = PyBytes_AS_STRING(packed)
        for j in range(m):
            i = at_item[j]
            at = _put_ids(at, <object>PyList_GET_ITEM(entries, i), 0, stamp, record)
            for o in range(4):
                at = _put_ids(at, _near(entries, pad, i + _OFFSETS[o], n), o + 1, stamp, record)
            at = _put(at, found[3 * j])
            at = _put(at, found[3 * j + 1])
            at = _put(at, found[3 * j + 2])
    finally:
        PyMem_Free(found)
        PyMem_Free(at_item)
    return packed, counts


cdef inline object _near(list entries, tuple pad, Py_ssize_t k, Py_ssize_t n):
    if k < 0 or k >= n:
        return pad
    return <object>PyList_GET_ITEM(entries, k)


def line_starts(str text, list starts):
    """The tokens after a line break (``features._add_line_features``): for each break in
    order, the first token at or after the next line's start, each once, none past the last
    token. ``starts``: the tokens' starts, ascending."""
    cdef Py_ssize_t n = PyList_GET_SIZE(starts)
    cdef Py_ssize_t length = PyUnicode_GET_LENGTH(text)
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef const char* chars = <const char*>data
    cdef const char* hit
    cdef Py_ssize_t p = 0, k = 0, last = -1, line
    cdef list out = []
    while k < n:
        if kind == 1:
            hit = <const char*>memchr(chars + p, 10, length - p)
            if hit == NULL:
                break
            p = hit - chars
        else:
            while p < length and PyUnicode_READ(kind, data, p) != 10:
                p += 1
            if p >= length:
                break
        line = p + 1  # the line's start: the first token at or after it
        while k < n and PyLong_AsSsize_t(<object>PyList_GET_ITEM(starts, k)) < line:
            k += 1
        if k < n and k != last:
            out.append(PyLong_FromSsize_t(k))
            last = k
        p = line
    return out


cdef extern from "Python.h":
    int PySet_Contains(object, object) except -1
    bint PyAnySet_Check(object)
    bint PyUnicode_CheckExact(object)


def marked(list lowers, frozenset marks, dict seconds, frozenset alone, frozenset kin):
    """The tokens where some gazetteer's phrase may start and those of a kinship word
    (``extras._marked``): of the tokens whose word is in ``marks``, those whose word's
    ``seconds`` entry is ``alone`` or holds the next token's word, and those in ``kin``."""
    cdef Py_ssize_t n = PyList_GET_SIZE(lowers)
    cdef Py_ssize_t i
    cdef object low
    cdef PyObject* after
    cdef list starts = []
    cdef list kins = []
    for i in range(n):
        if not PyUnicode_CheckExact(<object>PyList_GET_ITEM(lowers, i)):
            raise TypeError("a lower case is a str")
    for i in range(n):
        low = <object>PyList_GET_ITEM(lowers, i)
        if not PySet_Contains(marks, low):
            continue
        after = PyDict_GetItem(seconds, low)
        if after != NULL:
            if not PyAnySet_Check(<object>after):
                raise TypeError("a first word's seconds are a set")
            if after == <PyObject*>alone or (
                i < n - 1 and PySet_Contains(<object>after, <object>PyList_GET_ITEM(lowers, i + 1))
            ):
                starts.append(PyLong_FromSsize_t(i))
        if PySet_Contains(kin, low):
            kins.append(PyLong_FromSsize_t(i))
    return starts, kins


ctypedef struct _Item:  # crfsuite_item_t (``crf._ITEM``: "@iiP")
    int num_contents
    int cap_contents
    void* contents


ITEM_SIZE = sizeof(_Item)


def items(list counts, size_t base, Py_ssize_t record):
    """crfsuite's items of a note (``crf.CrfTagger.set``, its reference): for each count of
    records, in order, the count twice and where its records start, the first at ``base``
    and each ``record`` bytes long."""
    cdef Py_ssize_t m = PyList_GET_SIZE(counts)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, m * sizeof(_Item))
    _fill(<_Item*>PyBytes_AS_STRING(out), counts, base, record)
    return out


cdef Py_ssize_t _fill(_Item* at, list counts, size_t base, Py_ssize_t record) except -1:
    """The items ``at`` (one per count) filled as ``items`` says; the records' bytes in all."""
    cdef Py_ssize_t j, c, total = 0
    for j in range(PyList_GET_SIZE(counts)):
        c = PyLong_AsSsize_t(<object>PyList_GET_ITEM(counts, j))
        if c < 0 or c > 2147483647:
            raise OverflowError("a count of records outside an int")
        at[j].num_contents = <int>c
        at[j].cap_contents = <int>c
        at[j].contents = <void*>(base + <size_t>total)
        total += c * record
    return total


def candidates(
    size_t alpha,
    size_t beta,
    size_t scale,
    size_t path,
    Py_ssize_t n,
    Py_ssize_t labels,
    Py_ssize_t outside,
    double least,
):
    """The items that may be PHI (``crf.likely_phi``, the reference, over ``viterbi`` and
    ``marginals``): of ``n`` items, those whose label on the Viterbi ``path`` (``n`` ints)
    is not ``outside`` or whose probability of ``outside`` leaves at least ``least``; their
    indices, path labels and that probability. The probability is computed as crfsuite's
    ``crf1dc_marginal_point`` does, forward times backward score over the item's scale
    factor, from the forward-backward arrays (``n`` × ``labels`` doubles, ``n`` scales)."""
    cdef const double* forward = <const double*>alpha
    cdef const double* backward = <const double*>beta
    cdef const double* factor = <const double*>scale
    cdef const int* best = <const int*>path
    cdef list found = []
    cdef list picked = []
    cdef list p_out = []
    cdef Py_ssize_t i, at
    cdef double p
    if n < 0 or labels <= 0 or outside < 0 or outside >= labels:
        raise ValueError("no such label or items")
    for i in range(n):
        at = i * labels + outside
        p = forward[at] * backward[at]
        p = p / factor[i]
        if best[i] != outside or 1.0 - p >= least:
            found.append(PyLong_FromSsize_t(i))
            picked.append(PyLong_FromSsize_t(best[i]))
            p_out.append(p)
    return found, picked, p_out


# crfsuite's tagger, reached through its function table (``crf.CrfTagger``): one C call per
# note where cffi took a dozen conversions and two calls through libffi.
ctypedef struct _Instance:  # crfsuite_instance_t
    int num_items
    int cap_items
    _Item* items
    int* labels
    double weight
    int group

ctypedef struct _Context:  # crf1d_context_t's head (``crf_ffi.CDEF``)
    int flag
    int num_labels
    int num_items
    int cap_items
    double log_norm
    double* state
    double* trans
    double* alpha_score
    double* beta_score
    double* scale_factor

ctypedef struct _Head:  # crf1dt_t's head: the tagger's ``internal``
    void* model
    _Context* ctx

ctypedef struct _Tagger:  # crfsuite_tagger_t's head
    _Head* internal

ctypedef int (*_Set)(void*, _Instance*) noexcept nogil
ctypedef int (*_Viterbi)(void*, int*, double*) noexcept nogil
ctypedef int (*_Marginal)(void*, int, int, double*) noexcept nogil

# where the fields read here lie, for ``crf`` to check against cffi's layout
INSTANCE_SIZE = sizeof(_Instance)
CONTEXT_OFFSETS = (
    <Py_ssize_t>&(<_Context*>NULL).num_labels,
    <Py_ssize_t>&(<_Context*>NULL).alpha_score,
    <Py_ssize_t>&(<_Context*>NULL).beta_score,
    <Py_ssize_t>&(<_Context*>NULL).scale_factor,
)


def set_items(size_t tagger, size_t function, bytes packed, list counts, Py_ssize_t record):
    """crfsuite's ``tagger->set`` (``function``) of a note's items (``crf.CrfTagger.set``,
    whose cffi path is the reference): the records ``packed`` end to end, ``counts`` of them
    per item, handed over as the items ``items`` builds; crfsuite reads them during the call
    only. Its return code."""
    cdef Py_ssize_t m = PyList_GET_SIZE(counts)
    cdef _Instance instance
    cdef _Item* at = <_Item*>PyMem_Malloc(max(m, 1) * sizeof(_Item))
    cdef int rc
    if at == NULL:
        raise MemoryError()
    try:
        if _fill(at, counts, <size_t>PyBytes_AS_STRING(packed), record) != PyBytes_GET_SIZE(packed):
            raise ValueError("the items' attribute counts do not add up to the records given")
        instance.num_items = instance.cap_items = <int>m
        instance.items = at
        instance.labels = NULL
        instance.weight = 0.0
        instance.group = 0
        rc = (<_Set>function)(<void*>tagger, &instance)
    finally:
        PyMem_Free(at)
    return rc


def tagged(
    size_t tagger,
    size_t viterbi,
    size_t marginal,
    Py_ssize_t n,
    Py_ssize_t outside,
    double least,
):
    """``candidates`` of the note crfsuite's ``tagger`` holds (``n`` items): its Viterbi
    path (``viterbi``), then the forward-backward pass its first marginal runs
    (``marginal``, of ``outside`` at the first item), read from its context
    (``crf.CrfTagger.candidates``, whose cffi path is the reference). None where crfsuite
    fails."""
    cdef int* path
    cdef double unused
    cdef const _Context* ctx
    if n <= 0 or outside < 0 or n > 2147483647 or outside > 2147483647:
        raise ValueError("no such label or items")
    path = <int*>PyMem_Malloc(n * sizeof(int))
    if path == NULL:
        raise MemoryError()
    try:
        if (<_Viterbi>viterbi)(<void*>tagger, path, NULL) != 0:
            return None
        (<_Marginal>marginal)(<void*>tagger, <int>outside, 0, &unused)  # as ``marginal``
        ctx = (<_Tagger*>tagger).internal.ctx
        return candidates(
            <size_t>ctx.alpha_score,
            <size_t>ctx.beta_score,
            <size_t>ctx.scale_factor,
            <size_t>path,
            n,
            ctx.num_labels,
            outside,
            least,
        )
    finally:
        PyMem_Free(path)
