# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The near-duplicate sketch of an ASCII text, compiled (``pipelines.compiled``); the reference
is ``near_duplicates._sketch``, which it must match value for value: the ``size`` smallest
distinct ``((a1·w1 + a2·w2 + a3·w3 + b) mod 2^64) >> 32`` over the CRC-32 codes of the
case-folded text's word 3-shingles (one shingle padded with 2^32 when there are 1 or 2 words).

One pass over the characters: each word's CRC-32 is computed as it is read (ASCII case folding
is lowering; a word is a run of ``[0-9A-Za-z_]``, what ``\\w`` matches in ASCII), the shingle
hash in 64-bit arithmetic (which wraps modulo 2^64), and the bottom ``size`` kept in a sorted
array: no string, list or big integer per word, and memory bounded by ``size`` at any length."""

from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memmove
from cpython.object cimport PyObject


cdef extern from "Python.h":
    void* PyUnicode_DATA(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)


cdef uint32_t _CRC[256]  # CRC-32 (zlib's: reflected polynomial 0xEDB88320) byte table
cdef unsigned char _FOLD[256]  # a word character's folded byte, 0 for any other byte


cdef void _tables():
    cdef uint32_t poly = 0xEDB88320
    cdef uint32_t c
    cdef int n, k
    for n in range(256):
        c = <uint32_t>n
        for k in range(8):
            c = (poly ^ (c >> 1)) if (c & 1) else (c >> 1)
        _CRC[n] = c
        if 97 <= n <= 122 or 48 <= n <= 57 or n == 95:
            _FOLD[n] = <unsigned char>n
        elif 65 <= n <= 90:
            _FOLD[n] = <unsigned char>(n + 32)
        else:
            _FOLD[n] = 0


_tables()


cdef Py_ssize_t _keep(uint32_t* best, Py_ssize_t m, Py_ssize_t size, uint32_t h):
    """Insert ``h`` into the ascending distinct ``best[:m]`` kept to ``size`` values; the new
    count."""
    if m == size and h >= best[m - 1]:
        return m
    cdef Py_ssize_t lo = 0
    cdef Py_ssize_t hi = m
    cdef Py_ssize_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if best[mid] < h:
            lo = mid + 1
        else:
            hi = mid
    if lo < m and best[lo] == h:
        return m
    if m < size:
        m += 1
    if m - 1 > lo:
        memmove(&best[lo + 1], &best[lo], <size_t>(m - 1 - lo) * sizeof(uint32_t))
    best[lo] = h
    return m


def ascii_sketch(str text, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t b, Py_ssize_t size):
    """The sketch of ``text`` (which must be ASCII; ``size`` > 0) with the key's coefficients,
    ascending: what ``near_duplicates._sketch`` gives."""
    if not text.isascii():
        raise ValueError("ascii_sketch() reads ASCII text only")
    if size <= 0:
        raise ValueError("ascii_sketch() needs a positive size")
    cdef const unsigned char* s = <const unsigned char*>PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    cdef Py_ssize_t cap = size if size <= n + 1 else n + 1
    cdef uint32_t* best = <uint32_t*>malloc(<size_t>cap * sizeof(uint32_t))
    if best == NULL:
        raise MemoryError()
    cdef Py_ssize_t m = 0
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t words = 0
    cdef uint64_t w1 = 0
    cdef uint64_t w2 = 0
    cdef uint64_t code
    cdef uint64_t pad = (<uint64_t>1) << 32
    cdef uint32_t crc
    cdef uint32_t ones = ~(<uint32_t>0)
    cdef unsigned char c
    try:
        while i < n:
            c = _FOLD[s[i]]
            if c == 0:
                i += 1
                continue
            crc = ones
            while True:
                crc = _CRC[(crc ^ c) & 0xFF] ^ (crc >> 8)
                i += 1
                if i >= n:
                    break
                c = _FOLD[s[i]]
                if c == 0:
                    break
            code = <uint64_t>(crc ^ ones)
            words += 1
            if words >= 3:
                m = _keep(best, m, cap, <uint32_t>((a1 * w1 + a2 * w2 + a3 * code + b) >> 32))
            w1, w2 = w2, code
        if 0 < words < 3:  # one shingle, padded with 2^32 (never a CRC-32)
            if words == 1:
                w1, w2 = w2, pad
            m = _keep(best, m, cap, <uint32_t>((a1 * w1 + a2 * w2 + a3 * pad + b) >> 32))
        return tuple([best[j] for j in range(m)])
    finally:
        free(best)



cdef extern from "Python.h":
    PyObject* PyDict_GetItemWithError(object, object) except? NULL
    bint PyUnicode_IS_ASCII(object)


cdef Py_ssize_t _ascending(const uint32_t* v, Py_ssize_t n):
    """``n`` if ``v[:n]`` is strictly ascending, else -1."""
    cdef Py_ssize_t k
    for k in range(1, n):
        if v[k] <= v[k - 1]:
            return -1
    return n


cdef double _score(const uint32_t* a, Py_ssize_t na, const uint32_t* b, Py_ssize_t nb,
                   Py_ssize_t size):
    """``near_duplicates._visit_score`` without its bound, of two strictly ascending sketches:
    shared / union when the union has at most ``size`` values, else the share of the union's
    ``size`` smallest values that both hold."""
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t j = 0
    cdef Py_ssize_t shared = 0
    while i < na and j < nb:
        if a[i] < b[j]:
            i += 1
        elif a[i] > b[j]:
            j += 1
        else:
            shared += 1
            i += 1
            j += 1
    if shared == 0:
        return 0.0
    cdef Py_ssize_t union = na + nb - shared
    if union <= size:
        return <double>shared / <double>union
    i = 0
    j = 0
    cdef Py_ssize_t taken = 0
    cdef Py_ssize_t low = 0
    while taken < size:
        if j >= nb or (i < na and a[i] < b[j]):
            i += 1
        elif i >= na or a[i] > b[j]:
            j += 1
        else:
            low += 1
            i += 1
            j += 1
        taken += 1
    return <double>low / <double>size


def nearest(dict table, str prefix, str own, tuple signature, Py_ssize_t size, dict words,
            object decode):
    """``VisitSketches.nearest`` before its threshold: (entry name, score, memo hits) of the
    first highest-scoring entry under ``prefix`` but ``own`` (name None when there is none).
    ``words``: the memo table of each entry's values as native 32-bit words (bytes);
    ``decode``: the memo itself, called on a miss. None when the Python code must decide:
    ``signature`` or some entry's values not strictly ascending 32-bit values."""
    if size <= 0:
        return None
    cdef Py_ssize_t nm = len(signature)
    cdef uint32_t* mine = <uint32_t*>malloc(<size_t>(nm + 1) * sizeof(uint32_t))
    if mine == NULL:
        raise MemoryError()
    cdef Py_ssize_t k, count
    cdef Py_ssize_t hits = 0
    cdef const uint32_t* theirs
    cdef PyObject* held
    cdef uint64_t v
    cdef double score
    cdef double top = 0.0
    cdef bytes packed
    best = None
    try:
        for k in range(nm):
            item = signature[k]
            if type(item) is not int or item < 0 or item > 0xFFFFFFFF:
                return None
            v = item
            mine[k] = <uint32_t>v
            if k and mine[k] <= mine[k - 1]:
                return None
        for name, value in table.items():
            if type(name) is not str or not (<str>name).startswith(prefix) or name == own:
                continue
            held = PyDict_GetItemWithError(words, value)
            if held == NULL:
                found = decode(value)
            else:
                found = <object>held
                hits += 1
            if type(found) is not bytes:
                return None
            packed = <bytes>found
            count = len(packed) // 4
            theirs = <const uint32_t*><const char*>packed
            if len(packed) % 4 or _ascending(theirs, count) < 0:
                return None
            score = _score(mine, nm, theirs, count, size)
            if best is None or score > top:
                best = name
                top = score
        return (best, top, hits)
    finally:
        free(mine)


cdef long long _filing_time(str value):
    """The filing time a stored entry starts with (ASCII digits, then ':'), -1 for any other
    start (the caller then leaves it to the Python code)."""
    if not PyUnicode_IS_ASCII(value):
        return -1
    cdef const unsigned char* s = <const unsigned char*>PyUnicode_DATA(value)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(value)
    cdef Py_ssize_t i = 0
    cdef long long at = 0
    while i < n and 48 <= s[i] <= 57 and i < 18:
        at = at * 10 + (s[i] - 48)
        i += 1
    if i == 0 or i >= n or s[i] != 58:
        return -1
    return at


def oldest(dict table, str prefix, Py_ssize_t keep):
    """``VisitSketches.add``'s eviction: the names of the entries under ``prefix`` beyond the
    ``keep`` filed last, by (filing time, name). None when the Python code must decide (an
    entry's filing time not plain digits)."""
    visits = []
    cdef long long at
    for name, value in table.items():
        if type(name) is not str or not (<str>name).startswith(prefix):
            continue
        if type(value) is not str:
            return None
        at = _filing_time(<str>value)
        if at < 0:
            return None
        visits.append((at, name))
    cdef Py_ssize_t extra = len(visits) - keep
    if extra <= 0:
        return []
    visits.sort()
    return [visit[1] for visit in visits[:extra]]
