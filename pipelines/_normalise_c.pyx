# cython: language_level=3, boundscheck=False, wraparound=False
"""The exact-repeat hash's normal form of an ASCII text, compiled (``pipelines.compiled``,
helper "normalise"). The reference, which this must match for every ASCII input, is
``" ".join(text[start:end].split()).casefold().encode("utf-8")`` (``pipelines.versions``):
runs of whitespace (what ``str.isspace`` says of ASCII: tab, newline, vertical tab, form
feed, carriage return, the four separators 0x1C-0x1F and space) become one space, none at
either end, and letters are lowered (ASCII case folding is lowering). One pass over the
characters into one bytes object (cut to its length when whitespace shrank): no string per
word, no joined and folded copies."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize

cdef extern from "Python.h":
    void* PyUnicode_DATA(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    bint PyUnicode_IS_ASCII(object)


cdef unsigned char _FOLD[256]  # an ASCII character's folded (lowered) byte
cdef bint _SPACE[256]  # is it whitespace (``str.isspace``)


cdef void _table():
    cdef int n
    for n in range(256):
        _FOLD[n] = <unsigned char>(n + 32 if 65 <= n <= 90 else n)
        _SPACE[n] = 9 <= n <= 13 or 28 <= n <= 32


_table()


def ascii_normalised(str text, Py_ssize_t start, Py_ssize_t end):
    """``" ".join(text[start:end].split()).casefold().encode()`` of an ASCII ``text``
    (``0 <= start <= end <= len(text)``); ValueError for any other text or range."""
    if not PyUnicode_IS_ASCII(text):
        raise ValueError("ascii_normalised takes an ASCII text")
    if start < 0 or end < start or end > PyUnicode_GET_LENGTH(text):
        raise ValueError("ascii_normalised: range out of the text")
    cdef const unsigned char* src = <const unsigned char*>PyUnicode_DATA(text)
    out = PyBytes_FromStringAndSize(NULL, end - start)
    cdef unsigned char* dst = <unsigned char*>PyBytes_AS_STRING(out)
    cdef Py_ssize_t n = 0
    cdef Py_ssize_t i
    cdef unsigned char c
    cdef bint gap = False  # whitespace met since the last word character written
    for i in range(start, end):
        c = src[i]
        if _SPACE[c]:
            gap = True
            continue
        if gap:
            if n:
                dst[n] = 32
                n += 1
            gap = False
        dst[n] = _FOLD[c]
        n += 1
    return out if n == end - start else out[:n]
