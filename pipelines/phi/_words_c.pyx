# cython: language_level=3, boundscheck=False, wraparound=False
"""What a word costs the detector, compiled (``pipelines.compiled``, helper "words"): a look-up
in a sorted word list, a new word's attribute ids for the tagger (its entry), the look-ups of a
note's words in a memo, and a filter of the words one letter short of a common English word.
The references, which these must match for every input, are
``sorted_words.SortedWords.lookup`` (its ASCII branch), the end of
``tagger.features.Featurizer._made``, ``memo.Memo.many``'s Python look-ups, the loop of
``slips.letter_dropped`` and the pick of ``location_words.positions_in``."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.set cimport PySet_Contains
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport uint64_t
from libc.string cimport memchr, memcmp, memcpy


cdef extern from "Python.h":
    void* PyUnicode_DATA(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    bint PyUnicode_IS_ASCII(object)
    PyObject* PyDict_GetItemWithError(object, object) except? NULL


cdef inline const char* _ascii(object text) except NULL:
    if type(text) is not str or not PyUnicode_IS_ASCII(text):
        raise ValueError("a sorted word list holds ASCII strings only")
    return <const char*>PyUnicode_DATA(text)


cdef inline bint _before(const char* w, Py_ssize_t m, object other) except -1:
    """``word < other`` for ASCII strings (code points compare as bytes)."""
    cdef const char* o = _ascii(other)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(other)
    cdef int c = memcmp(w, o, m if m < n else n)
    return c < 0 or (c == 0 and m < n)


def lookup(words, str word, Py_ssize_t block):
    """``words.lookup(word)`` (a ``SortedWords``) for an ASCII ``word``: the bisection of the
    lines' first words, then " word " found in its line (``_in_line``), both as bytes."""
    if not word.isascii():
        raise ValueError("lookup() reads ASCII words only")
    cdef Py_ssize_t m = PyUnicode_GET_LENGTH(word)
    cdef const char* w = <const char*>PyUnicode_DATA(word)
    if m == 0 or memchr(w, 32, m) != NULL:
        return None
    cdef list firsts = words.firsts
    cdef Py_ssize_t lo = 0
    cdef Py_ssize_t hi = PyList_GET_SIZE(firsts)
    cdef Py_ssize_t mid
    while lo < hi:  # bisect_right
        mid = (lo + hi) >> 1
        if _before(w, m, <object>PyList_GET_ITEM(firsts, mid)):
            hi = mid
        else:
            lo = mid + 1
    cdef Py_ssize_t at = lo - 1
    if at < 0:
        return None
    cdef list lines = words.lines
    line = <object>PyList_GET_ITEM(lines, at)
    cdef const char* s = _ascii(line)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(line)
    cdef Py_ssize_t found = _in_line(s, n, w, m)
    if found < 0:
        return None
    cdef Py_ssize_t spaces = 0  # before the word: its index in the line
    cdef Py_ssize_t i
    for i in range(found):
        spaces += s[i] == 32
    return words.values[words.buckets[at * block + spaces]]


cdef Py_ssize_t _in_line(const char* s, Py_ssize_t n, const char* w, Py_ssize_t m):
    """Where " word " first is in the line ``s`` (" w1 w2 … wk ", sorted), or -1: bisected
    by words (a sorted line holds a word once, or, in a list of one value, its repeats side by
    side, which answer alike); a line not padded so is searched from its start."""
    cdef Py_ssize_t a = 0
    cdef Py_ssize_t b = n - 1
    cdef Py_ssize_t p, q, size
    cdef int c
    if n < 2 or s[0] != 32 or s[b] != 32:
        for p in range(n - m - 1):  # str.find
            if s[p] == 32 and s[p + m + 1] == 32 and memcmp(s + p + 1, w, m) == 0:
                return p
        return -1
    while a < b:  # s[a] and s[b] are spaces; the word sought is between them if anywhere
        p = (a + b) >> 1
        while s[p] != 32:
            p -= 1
        q = p + 1
        while s[q] != 32:
            q += 1
        size = q - p - 1
        c = memcmp(s + p + 1, w, size if size < m else m)
        if c == 0:
            c = (size > m) - (size < m)
        if c == 0:
            return p
        if c < 0:
            a = q
        else:
            b = p
    return -1


def entry(tuple features, dict table, str low, item):
    """A new word's entry (``Featurizer._made``, ``features._entry``): the ids of each kind
    of the ``features`` (``table[feature]``: a tuple of five ints, one per kind, -1 where the
    kind is not kept; a feature not listed has none), as one bytes of native ints: where the
    first four kinds end among the ids, then the ids kind after kind, each in the features'
    order; then ``low`` and ``item``."""
    cdef list kept = []
    cdef Py_ssize_t counts[5]
    cdef Py_ssize_t j, k, n, total = 0
    cdef long value
    for k in range(5):
        counts[k] = 0
    for feature in features:
        got = table.get(feature)
        if got is None:
            continue
        if type(got) is not tuple or PyTuple_GET_SIZE(got) != 5:
            raise TypeError("a feature's ids are a tuple of five ints")
        for k in range(5):
            value = <object>PyTuple_GET_ITEM(got, k)  # an int, or TypeError
            if value < -1 or value > 2147483647:
                raise OverflowError("an attribute id outside an int")
            if value >= 0:
                counts[k] += 1
                total += 1
        kept.append(got)
    n = PyList_GET_SIZE(kept)
    out = PyBytes_FromStringAndSize(NULL, (4 + total) * sizeof(int))
    cdef int* at = <int*>PyBytes_AS_STRING(out)
    cdef Py_ssize_t end = 0
    for k in range(4):
        end += counts[k]
        at[k] = <int>end
    at += 4
    for k in range(5):
        for j in range(n):
            value = <object>PyTuple_GET_ITEM(<object>PyList_GET_ITEM(kept, j), k)
            if value >= 0:
                at[0] = <int>value
                at += 1
    return (out, low, item)


# The short-form filter: a bit array of ``SHORT_BITS`` bits, two bits set for each form.
SHORT_BITS = 1 << 21
cdef uint64_t _MASK = (1 << 21) - 1


cdef inline uint64_t _fnv(const unsigned char* s, Py_ssize_t n, Py_ssize_t skip):
    """FNV-1a of the ``n`` bytes at ``s`` less the one at ``skip`` (-1: none)."""
    cdef uint64_t h = 14695981039346656037ULL
    cdef Py_ssize_t i
    for i in range(n):
        if i != skip:
            h = (h ^ s[i]) * 1099511628211ULL
    return h


def short_forms(words):
    """The filter (bytes, ``SHORT_BITS`` bits) of every ASCII word of ``words`` with one of its
    letters a-z after the first left out ("await" -> "awit", "awat"…)."""
    buf = bytearray(SHORT_BITS >> 3)
    cdef unsigned char[:] bits = buf
    cdef const unsigned char* s
    cdef Py_ssize_t n, i
    cdef uint64_t h, a, b
    for word in words:
        if type(word) is not str or not PyUnicode_IS_ASCII(word):
            continue  # no letter a-z left out makes it ASCII
        s = <const unsigned char*>PyUnicode_DATA(word)
        n = PyUnicode_GET_LENGTH(word)
        for i in range(1, n):
            if s[i] < 97 or s[i] > 122:
                continue
            h = _fnv(s, n, i)
            a = h & _MASK
            b = (h >> 32) & _MASK
            bits[a >> 3] |= 1 << (a & 7)
            bits[b >> 3] |= 1 << (b & 7)
    return bytes(buf)


def may_be_short(bytes forms, str word):
    """False when ``word`` (ASCII) is surely none of the forms in the filter ``forms``
    (``short_forms``); True when it may be one."""
    if not PyUnicode_IS_ASCII(word):
        raise ValueError("may_be_short() reads ASCII words only")
    if PyBytes_GET_SIZE(forms) != SHORT_BITS >> 3:
        raise ValueError("not a filter of short forms")
    cdef const unsigned char* bits = <const unsigned char*>PyBytes_AS_STRING(forms)
    cdef uint64_t h = _fnv(<const unsigned char*>PyUnicode_DATA(word), PyUnicode_GET_LENGTH(word), -1)
    cdef uint64_t a = h & _MASK
    cdef uint64_t b = (h >> 32) & _MASK
    return bool(bits[a >> 3] & (1 << (a & 7))) and bool(bits[b >> 3] & (1 << (b & 7)))


def many(dict store, list keys, missing):
    """``Memo.many``'s look-ups in one pass (``pipelines/memo.py``, its reference): each key's
    value in ``store`` (``missing`` where it has none), and the positions of the misses."""
    cdef Py_ssize_t n = PyList_GET_SIZE(keys)
    cdef Py_ssize_t k
    cdef PyObject* found
    cdef list values = PyList_New(n)
    cdef list missed = []
    for k in range(n):
        found = PyDict_GetItemWithError(store, <object>PyList_GET_ITEM(keys, k))
        if found == NULL:
            found = <PyObject*>missing
            missed.append(k)
        Py_INCREF(<object>found)
        PyList_SET_ITEM(values, k, <object>found)
    return values, missed


# The starting-word filter of a recognizer's passes (``passes.Passes.candidates``): a bit
# array of ``START_BITS`` bits, two bits set for each word (ASCII, lower-case) of the bound.
START_BITS = 1 << 17
cdef uint64_t _START_MASK = (1 << 17) - 1


cdef inline uint64_t _fnv_lower(const unsigned char* s, Py_ssize_t n):
    """FNV-1a of the ``n`` ASCII bytes at ``s``, lower-cased (A-Z as a-z)."""
    cdef uint64_t h = 14695981039346656037ULL
    cdef Py_ssize_t i
    cdef unsigned char c
    for i in range(n):
        c = s[i]
        if 65 <= c <= 90:
            c += 32
        h = (h ^ c) * 1099511628211ULL
    return h


def start_filter(words):
    """The filter (bytes, ``START_BITS`` bits) of the ASCII words of ``words``, as their
    lower-case forms (a word that is not ASCII is left out: a note with one is judged by the
    Python code)."""
    buf = bytearray(START_BITS >> 3)
    cdef unsigned char[:] bits = buf
    cdef uint64_t h, a, b
    for word in words:
        if type(word) is not str or not PyUnicode_IS_ASCII(word):
            continue
        h = _fnv_lower(<const unsigned char*>PyUnicode_DATA(word), PyUnicode_GET_LENGTH(word))
        a = h & _START_MASK
        b = (h >> 32) & _START_MASK
        bits[a >> 3] |= 1 << (a & 7)
        bits[b >> 3] |= 1 << (b & 7)
    return bytes(buf)


cdef inline bint _kept(const unsigned char* bits, const unsigned char* s, Py_ssize_t m,
                       bint capitals):
    """Whether a word (``m`` ASCII bytes at ``s``) may start a pass: any capital when
    ``capitals``, else its lower-case form in the filter ``bits`` (``start_filter``)."""
    cdef Py_ssize_t i
    cdef uint64_t h, a, b
    if capitals:
        for i in range(m):
            if 65 <= s[i] <= 90:
                return True
    h = _fnv_lower(s, m)
    a = h & _START_MASK
    b = (h >> 32) & _START_MASK
    return (bits[a >> 3] & (1 << (a & 7))) != 0 and (bits[b >> 3] & (1 << (b & 7))) != 0


def may_start(bytes starts, list words, bint capitals):
    """Those of ``words`` (ASCII strings) whose lower-case form the filter ``starts``
    (``start_filter``) may hold, and (``capitals``) every word with a capital letter: a
    superset of ``Passes.candidates``' Python answer (the filter says yes too often, never no
    too often)."""
    if PyBytes_GET_SIZE(starts) != START_BITS >> 3:
        raise ValueError("not a starting-word filter")
    cdef const unsigned char* bits = <const unsigned char*>PyBytes_AS_STRING(starts)
    cdef list kept = []
    cdef Py_ssize_t k
    cdef Py_ssize_t n = PyList_GET_SIZE(words)
    for k in range(n):
        word = <object>PyList_GET_ITEM(words, k)
        if type(word) is not str or not PyUnicode_IS_ASCII(word):
            raise ValueError("may_start() reads ASCII words only")
        if _kept(bits, <const unsigned char*>PyUnicode_DATA(word), PyUnicode_GET_LENGTH(word),
                 capitals):
            kept.append(word)
    return kept


def start_positions(bytes starts, bint capitals, dict store, tuple texts, compute):
    """The words of an ASCII note (``texts``, its words as written, in order) where some pass
    is tried, with their steps, in one pass (``passes.Passes.positions``; its reference is the
    Python code there): each word ``may_start`` keeps, its steps from ``store`` (the steps
    memo's table) or, where it has none, from ``compute(word)`` (the memo itself), kept when
    not empty. Returns the ``(index, steps)`` pairs in order and the number of words found in
    ``store``."""
    if PyBytes_GET_SIZE(starts) != START_BITS >> 3:
        raise ValueError("not a starting-word filter")
    cdef const unsigned char* bits = <const unsigned char*>PyBytes_AS_STRING(starts)
    cdef list found = []
    cdef Py_ssize_t k, hits = 0
    cdef Py_ssize_t n = PyTuple_GET_SIZE(texts)
    cdef PyObject* got
    for k in range(n):
        word = <object>PyTuple_GET_ITEM(texts, k)
        if type(word) is not str or not PyUnicode_IS_ASCII(word):
            raise ValueError("start_positions() reads ASCII words only")
        if not _kept(bits, <const unsigned char*>PyUnicode_DATA(word),
                     PyUnicode_GET_LENGTH(word), capitals):
            continue
        got = PyDict_GetItemWithError(store, word)
        if got == NULL:
            steps = compute(word)
        else:
            hits += 1
            steps = <object>got
        if steps:
            found.append((k, steps))
    return found, hits


def positions_in(words, tuple column, among=None):
    """Indices, ascending, of the items of ``column`` that the set ``words`` holds (of the
    indices ``among``, a list of them, when given): the Python code of
    ``location_words.positions_in`` (``compress`` over ``map(words.__contains__, ...)``) in
    one loop, with no call per item."""
    if not isinstance(words, (set, frozenset)):
        raise TypeError("positions_in() looks words up in a set")
    cdef Py_ssize_t n = PyTuple_GET_SIZE(column)
    cdef Py_ssize_t k, i, m
    cdef list found = []
    if among is None:
        for k in range(n):
            if PySet_Contains(words, <object>PyTuple_GET_ITEM(column, k)):
                found.append(k)
        return found
    cdef list at = <list?>among
    m = PyList_GET_SIZE(at)
    for i in range(m):
        item = <object>PyList_GET_ITEM(at, i)
        k = item
        if k < 0 or k >= n:
            raise IndexError("positions_in(): an index out of the column")
        if PySet_Contains(words, <object>PyTuple_GET_ITEM(column, k)):
            found.append(item)
    return found


def with_tail(words, bytes tails, Py_ssize_t longest):
    """The words of ``words`` (strings, ASCII) of 2 to ``longest`` characters whose last two,
    ``a`` then ``b``, have bit ``a * 128 + b`` set in ``tails`` (2,048 bytes), in the order
    met; None when a word is not an ASCII string (its caller then reads every word in Python).
    The pick of ``facility_acronyms._shaped``: only such words can have a hospital acronym's
    shape, so its scan reads these instead of every word of the note."""
    if PyBytes_GET_SIZE(tails) != 2048:
        raise ValueError("not a table of last two characters")
    cdef const unsigned char* bits = <const unsigned char*>PyBytes_AS_STRING(tails)
    cdef list kept = []
    cdef const unsigned char* s
    cdef Py_ssize_t m, pair
    for word in words:
        if type(word) is not str or not PyUnicode_IS_ASCII(word):
            return None
        m = PyUnicode_GET_LENGTH(word)
        if m < 2 or m > longest:
            continue
        s = <const unsigned char*>PyUnicode_DATA(word)
        pair = (s[m - 2] << 7) | s[m - 1]
        if bits[pair >> 3] & (1 << (pair & 7)):
            kept.append(word)
    return kept


cdef extern from "Python.h":
    int PyUnicode_KIND(object)


def positions(tuple column, present, Py_ssize_t few):
    """``word_positions.positions`` (its reference): the indices, ascending, of the items of
    ``column`` (strings) in ``present`` (a set of strings); up to ``few`` words each item is
    compared with each word (length, kind, then bytes: no hash, no call), more are looked up
    in the set."""
    if not isinstance(present, (set, frozenset)):
        raise TypeError("positions() looks words up in a set")
    cdef Py_ssize_t n = PyTuple_GET_SIZE(column)
    cdef Py_ssize_t count = len(present)
    cdef list found = []
    cdef Py_ssize_t k, j, m
    cdef PyObject* wants[8]
    cdef Py_ssize_t sizes[8]
    cdef int kinds[8]
    cdef PyObject* item
    if count == 0:
        return found
    if count > few or count > 8:
        for k in range(n):
            if PySet_Contains(present, <object>PyTuple_GET_ITEM(column, k)):
                found.append(k)
        return found
    j = 0
    for word in present:
        if type(word) is not str:
            raise TypeError("positions() compares strings")
        wants[j] = <PyObject*>word
        sizes[j] = PyUnicode_GET_LENGTH(word)
        kinds[j] = PyUnicode_KIND(word)
        j += 1
    for k in range(n):
        item = PyTuple_GET_ITEM(column, k)
        if type(<object>item) is not str:
            raise TypeError("positions() compares strings")
        m = PyUnicode_GET_LENGTH(<object>item)
        for j in range(count):
            if item == wants[j] or (
                m == sizes[j]
                and PyUnicode_KIND(<object>item) == kinds[j]
                and memcmp(PyUnicode_DATA(<object>item), PyUnicode_DATA(<object>wants[j]),
                           m * kinds[j]) == 0
            ):
                found.append(k)
                break
    return found
