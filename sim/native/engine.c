/* The native engine as a Python extension module: `systolic.sim.native._engine`.
 *
 * setup.py compiles this file with golden.c, timing.c and facts.c (all including the one
 * generated header isa.h) into one shared library at install time. Python loads it with ctypes
 * (`systolic.sim.native.build`) and calls `golden_run`, `timing_pass` and `external_facts`
 * directly; the module `PyInit__engine` creates is empty and exists so that the file is a valid
 * extension module, found and installed like any other.
 *
 * `engine_sources()` returns the digest of the sources the library was built from
 * (`systolic.sim.native.sources.source_digest`, passed by setup.py as ENGINE_SOURCES_DIGEST),
 * so that a library older than its sources (an editable install whose C files changed) is
 * recognised and not used.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifndef ENGINE_SOURCES_DIGEST
#error "build the native engine through setup.py, which defines ENGINE_SOURCES_DIGEST"
#endif

const char *engine_sources(void) { return ENGINE_SOURCES_DIGEST; }

static struct PyModuleDef engine_module = {
    PyModuleDef_HEAD_INIT,
    "_engine",
    "The native engine of the model backend; loaded with ctypes by systolic.sim.native.build.",
    -1,
    NULL,
};

PyMODINIT_FUNC PyInit__engine(void) { return PyModule_Create(&engine_module); }
