# cython: language_level=3, boundscheck=False, wraparound=False
"""The tokenizer's loop over an ASCII text, compiled (``pipelines.compiled``); the reference is
``lexicons.token_columns`` with ``lexicons.ASCII_TOKEN``, which it must match token for token."""

from cpython.unicode cimport PyUnicode_Substring


cdef extern from "Python.h":
    void* PyUnicode_DATA(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    int PyUnicode_KIND(object)


cdef inline bint _letter(unsigned char c):
    return (65 <= c <= 90) or (97 <= c <= 122)


cdef inline bint _digit(unsigned char c):
    return 48 <= c <= 57


cdef inline bint _space(unsigned char c):
    # what ASCII_TOKEN leaves between tokens: str.isspace's ASCII characters
    return c == 32 or (9 <= c <= 13) or (28 <= c <= 31)


def columns(str text):
    """Starts, ends and texts of the tokens of ``text``, which must be ASCII: a word (letters,
    inner apostrophes before letters), a run of digits, or any other single visible
    character."""
    if not text.isascii():
        raise ValueError("columns() reads ASCII text only")
    cdef const unsigned char* s = <const unsigned char*>PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t j
    cdef unsigned char c
    cdef list starts = []
    cdef list ends = []
    cdef list texts = []
    while i < n:
        c = s[i]
        if _space(c):
            i += 1
            continue
        j = i + 1
        if _letter(c):
            while True:
                while j < n and _letter(s[j]):
                    j += 1
                if j + 1 < n and s[j] == 39 and _letter(s[j + 1]):
                    j += 1
                    continue
                break
        elif _digit(c):
            while j < n and _digit(s[j]):
                j += 1
        starts.append(i)
        ends.append(j)
        texts.append(PyUnicode_Substring(text, i, j))
        i = j
    return starts, ends, texts
