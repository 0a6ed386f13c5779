"""The cffi declarations of crfsuite's C API that ``crf`` calls, and the build step that
turns them into ``_crf_ffi.py``, the module ``crf`` imports its ``ffi`` from.

Why a built module: declared at run time (``FFI().cdef``), the declarations were parsed by
pycparser in every process that tags, its import and first parse some 50 ms of a short
``deidstream detect`` (bench/README.md, "Session 15"). cffi's out-of-line ABI mode parses
them once, here, and writes the parsed types as data; at run time ``_cffi_backend`` alone
reads them, and ``dlopen`` works as before.

The module is derived, not written by hand: ``python -m pipelines.phi.tagger.crf_ffi``
rewrites it, and ``tests/tagger/test_crf.py`` fails when it differs from what these
declarations and the installed cffi give.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Final

MODULE: Final = "pipelines.phi.tagger._crf_ffi"
TARGET: Final = Path(__file__).with_name("_crf_ffi.py")

# The public part of crfsuite.h that tagging uses (crfsuite 0.12, bundled in python-crfsuite).
CDEF: Final = """
typedef double floatval_t;
typedef struct { int aid; floatval_t value; } crfsuite_attribute_t;
typedef struct {
    int num_contents; int cap_contents; crfsuite_attribute_t *contents;
} crfsuite_item_t;
typedef struct {
    int num_items; int cap_items; crfsuite_item_t *items; int *labels;
    floatval_t weight; int group;
} crfsuite_instance_t;
typedef struct tag_crfsuite_model crfsuite_model_t;
typedef struct tag_crfsuite_tagger crfsuite_tagger_t;
typedef struct tag_crfsuite_dictionary crfsuite_dictionary_t;
struct tag_crfsuite_model {
    void *internal; int nref;
    int (*addref)(crfsuite_model_t *model);
    int (*release)(crfsuite_model_t *model);
    int (*get_tagger)(crfsuite_model_t *model, crfsuite_tagger_t **ptr_tagger);
    int (*get_labels)(crfsuite_model_t *model, crfsuite_dictionary_t **ptr_labels);
    int (*get_attrs)(crfsuite_model_t *model, crfsuite_dictionary_t **ptr_attrs);
    int (*dump)(crfsuite_model_t *model, void *fpo);
};
struct tag_crfsuite_tagger {
    void *internal; int nref;
    int (*addref)(crfsuite_tagger_t *tagger);
    int (*release)(crfsuite_tagger_t *tagger);
    int (*set)(crfsuite_tagger_t *tagger, crfsuite_instance_t *inst);
    int (*length)(crfsuite_tagger_t *tagger);
    int (*viterbi)(crfsuite_tagger_t *tagger, int *labels, floatval_t *ptr_score);
    int (*score)(crfsuite_tagger_t *tagger, int *path, floatval_t *ptr_score);
    int (*lognorm)(crfsuite_tagger_t *tagger, floatval_t *ptr_norm);
    int (*marginal_point)(crfsuite_tagger_t *tagger, int l, int t, floatval_t *ptr_prob);
    int (*marginal_path)(crfsuite_tagger_t *tagger, const int *path, int begin, int end,
                         floatval_t *ptr_prob);
};
struct tag_crfsuite_dictionary {
    void *internal; int nref;
    int (*addref)(crfsuite_dictionary_t *dic);
    int (*release)(crfsuite_dictionary_t *dic);
    int (*get)(crfsuite_dictionary_t *dic, const char *str);
    int (*to_id)(crfsuite_dictionary_t *dic, const char *str);
    int (*to_string)(crfsuite_dictionary_t *dic, int id, char const **pstr);
    int (*num)(crfsuite_dictionary_t *dic);
    void (*free)(crfsuite_dictionary_t *dic, const char *str);
};
int crfsuite_create_instance_from_file(const char *filename, void **ptr);

/* Not in crfsuite.h: the head of the tagger's internal object (crf1d_tag.c, ``crf1dt_t``)
   and its context (crf1d.h, ``crf1d_context_t``), whose forward and backward scores
   ``marginals`` reads for all items at once. */
typedef struct {
    int flag; int num_labels; int num_items; int cap_items; floatval_t log_norm;
    floatval_t *state; floatval_t *trans; floatval_t *alpha_score; floatval_t *beta_score;
    floatval_t *scale_factor; floatval_t *row; int *backward_edge; floatval_t *exp_state;
    floatval_t *exp_trans; floatval_t *mexp_state; floatval_t *mexp_trans;
} crf1d_context_t;
typedef struct { void *model; crf1d_context_t *ctx; } crf1dt_head_t;
"""


def source() -> str:
    """The text of ``_crf_ffi.py`` as cffi writes it from ``CDEF`` now."""
    from cffi import FFI

    builder = FFI()
    builder.cdef(CDEF)
    builder.set_source(MODULE, None)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / TARGET.name
        builder.emit_python_code(str(path))
        return path.read_text("utf-8")


if __name__ == "__main__":  # pragma: no cover - a build step
    TARGET.write_text(source(), "utf-8")
    sys.stdout.write(f"wrote {TARGET}\n")
