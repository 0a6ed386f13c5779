# cython: language_level=3, boundscheck=False, wraparound=False
"""The tokenizer's loop over an ASCII text, compiled (``pipelines.compiled``); the reference is
``lexicons.token_columns`` with ``lexicons.ASCII_TOKEN``, which it must match token for token."""

from cpython.set cimport PySet_Add
from cpython.unicode cimport PyUnicode_Substring


cdef extern from "Python.h":
    ctypedef struct PyObject
    PyObject* PyList_GET_ITEM(object, Py_ssize_t)
    object PyFrozenSet_New(PyObject*)
    void* PyUnicode_DATA(object)
    object PyUnicode_New(Py_ssize_t, Py_UCS4)
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    int PyUnicode_KIND(object)


cdef inline bint _letter(unsigned char c):
    return (65 <= c <= 90) or (97 <= c <= 122)


cdef inline bint _digit(unsigned char c):
    return 48 <= c <= 57


cdef inline bint _space(unsigned char c):
    # what ASCII_TOKEN leaves between tokens: str.isspace's ASCII characters
    return c == 32 or (9 <= c <= 13) or (28 <= c <= 31)


cdef inline Py_ssize_t _token_end(const unsigned char* s, Py_ssize_t n, Py_ssize_t i):
    """Where the token starting at ``i`` (not a space) ends: a word (letters, inner
    apostrophes before letters), a run of digits, or one other character."""
    cdef Py_ssize_t j = i + 1
    if _letter(s[i]):
        while True:
            while j < n and _letter(s[j]):
                j += 1
            if j + 1 < n and s[j] == 39 and _letter(s[j + 1]):
                j += 1
                continue
            return j
    if _digit(s[i]):
        while j < n and _digit(s[j]):
            j += 1
    return j


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
        j = _token_end(s, n, i)
        starts.append(i)
        ends.append(j)
        texts.append(PyUnicode_Substring(text, i, j))
        i = j
    return starts, ends, texts


ctypedef object (*_alloc)(_Type*, Py_ssize_t)


cdef extern from "Python.h":
    ctypedef struct _Type "PyTypeObject":
        _alloc tp_alloc
    void PyTuple_SET_ITEM(object, Py_ssize_t, object)
    void PyList_SET_ITEM(object, Py_ssize_t, object)
    object PyTuple_New(Py_ssize_t)
    object PyList_New(Py_ssize_t)
    void Py_INCREF(object)


cdef inline object _token(_Type* kind, object start, object end, object word, object lower):
    """A ``kind`` (a tuple subclass of four items) made as ``tuple.__new__`` makes it, with no
    call through Python."""
    cdef object token = kind.tp_alloc(kind, 4)
    Py_INCREF(start)
    PyTuple_SET_ITEM(token, 0, start)
    Py_INCREF(end)
    PyTuple_SET_ITEM(token, 1, end)
    Py_INCREF(word)
    PyTuple_SET_ITEM(token, 2, word)
    Py_INCREF(lower)
    PyTuple_SET_ITEM(token, 3, lower)
    return token


# Python ints for the offsets 0.._INTS_MAX - 1, made once (``_offsets``): a text's token starts
# and ends are mostly above 256, where CPython makes a new int object for each of them
cdef enum:
    _INTS_MAX = 65536
cdef list _ints = list(range(257))


cdef inline void _offsets(Py_ssize_t n):
    """``_ints`` up to ``n`` (at most ``_INTS_MAX - 1``)."""
    cdef Py_ssize_t have = len(_ints)
    if n >= have and have < _INTS_MAX:
        _ints.extend(range(have, min(n + 1, _INTS_MAX)))


cdef inline object _int(Py_ssize_t i, Py_ssize_t have):
    if i < have:
        return <object>PyList_GET_ITEM(_ints, i)
    return i


cdef inline Py_ssize_t _count(const unsigned char* s, Py_ssize_t n, Py_ssize_t* words):
    """How many tokens ``s`` holds (``_token_end``), and in ``words`` how many are words."""
    cdef Py_ssize_t i = 0, tokens = 0
    words[0] = 0
    while i < n:
        if _space(s[i]):
            i += 1
            continue
        tokens += 1
        words[0] += _letter(s[i])
        i = _token_end(s, n, i)
    return tokens


cdef inline void _set(object items, Py_ssize_t k, object item, bint is_list) noexcept:
    """Item ``k`` of a new list or tuple (one of the exact size made up front)."""
    Py_INCREF(item)
    if is_list:
        PyList_SET_ITEM(items, k, item)
    else:
        PyTuple_SET_ITEM(items, k, item)


cdef inline object _lower(const unsigned char* s, Py_ssize_t i, Py_ssize_t j):
    """The ASCII ``s[i:j]`` in lower case, as a new string (``str.lower``)."""
    cdef object low = PyUnicode_New(j - i, 127)
    cdef unsigned char* d = <unsigned char*>PyUnicode_DATA(low)
    cdef Py_ssize_t k
    for k in range(i, j):
        d[k - i] = s[k] + 32 if 65 <= s[k] <= 90 else s[k]
    return low


def tokenize(str text, type token, Py_ssize_t first, Py_ssize_t span):
    """``lexicons._tokenize``'s facts about the ASCII ``text`` in one pass: its columns (as
    ``columns``), its words (the tokens starting with a letter) as ``token`` instances, their
    texts and lower-case forms, the distinct words as written and their lower-case forms, and
    the counts the note's case is decided from: words of two or more characters, of them
    lower-case and upper-case; of the ``first`` first such words, how many and how many
    lower-case; letters and capitals of the words starting before ``span``."""
    if not text.isascii():
        raise ValueError("tokenize() reads ASCII text only")
    if not issubclass(token, tuple) or token.__basicsize__ != tuple.__basicsize__:
        raise TypeError("tokenize() makes tuples of four items")
    cdef _Type* kind = <_Type*>token
    cdef const unsigned char* s = <const unsigned char*>PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t j, k
    cdef unsigned char c
    cdef int upper, lower
    cdef Py_ssize_t longer = 0, lower_words = 0, upper_words = 0
    cdef Py_ssize_t seen = 0, seen_lower = 0, letters = 0, capitals = 0
    _offsets(n)
    cdef Py_ssize_t have = len(_ints)
    cdef Py_ssize_t nwords, t = 0, w = 0
    cdef Py_ssize_t ntokens = _count(s, n, &nwords)
    cdef object starts = PyList_New(ntokens)
    cdef object ends = PyList_New(ntokens)
    cdef object texts = PyList_New(ntokens)
    cdef object words = PyTuple_New(nwords)
    cdef object word_texts = PyTuple_New(nwords)
    cdef object lowers = PyTuple_New(nwords)
    cdef dict lower_of = {}  # word as written with a capital -> its lower-case form
    cdef object written = PyFrozenSet_New(NULL)
    cdef object lower_set = PyFrozenSet_New(NULL)
    cdef object start, end, word, low
    while i < n:
        c = s[i]
        if _space(c):
            i += 1
            continue
        j = _token_end(s, n, i)
        start = _int(i, have)
        end = _int(j, have)
        if _letter(c):
            upper = lower = 0
            for k in range(i, j):  # the word's capitals and lower-case letters
                if s[k] != 39:
                    if s[k] <= 90:
                        upper += 1
                    else:
                        lower += 1
            word = PyUnicode_Substring(text, i, j)
            if upper:
                low = lower_of.get(word)
                if low is None:
                    low = _lower(s, i, j)
                    lower_of[word] = low
            else:  # its own lower-case form
                low = word
            PySet_Add(written, word)
            PySet_Add(lower_set, low)
            _set(words, w, _token(kind, start, end, word, low), False)
            _set(word_texts, w, word, False)
            _set(lowers, w, low, False)
            w += 1
            if j - i > 1:
                longer += 1
                lower_words += upper == 0
                upper_words += lower == 0
                if seen < first:
                    seen += 1
                    seen_lower += upper == 0
            if i < span:
                letters += upper + lower
                capitals += upper
        else:
            word = PyUnicode_Substring(text, i, j)
        _set(starts, t, start, True)
        _set(ends, t, end, True)
        _set(texts, t, word, True)
        t += 1
        i = j
    counts = (longer, lower_words, upper_words, seen, seen_lower, letters, capitals)
    return (
        starts, ends, texts, words, word_texts, lowers,
        written, lower_set, counts,
    )
