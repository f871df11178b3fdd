#!/bin/bash
# SPDX-License-Identifier: MIT
# The CPython layouts user/trace/pylayouts.c holds, computed by the compiler from an
# interpreter's own headers (its include/pythonX.Y, internal/ included): run it on each
# interpreter whose table is added or checked, e.g.
#   scripts/pyoffsets.sh /root/.pyenv/versions/3.12.1/bin/python3.12
# It prints one line of field=offset; pylayouts.c's table must say the same.
set -e
# 3.13 and later publish their offsets (_Py_DebugOffsets): nothing to print for them
PY=${1:?usage: pyoffsets.sh PYTHON}
INC=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
VER=$("$PY" -c 'import sys; print("%d%02d" % sys.version_info[:2])')
if [ "$VER" -ge 313 ]; then
	echo "pyoffsets: $PY publishes its offsets (_Py_DebugOffsets at the start of _PyRuntime): nothing to add" >&2
	exit 0
fi
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT
cat >"$TMPD/o.c" <<'C'
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030b0000
#include <internal/pycore_frame.h>
#else
#include <frameobject.h>
#endif
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#define P(name, expr) printf("%s=%zu ", name, (size_t)(expr))
int main(void)
{
	P("runtime_interpreters_head", offsetof(_PyRuntimeState, interpreters.head));
	P("runtime_main_thread", offsetof(_PyRuntimeState, main_thread));
#if PY_VERSION_HEX >= 0x030b0000
	P("interp_threads_head", offsetof(PyInterpreterState, threads.head));
#else
	P("interp_threads_head", offsetof(PyInterpreterState, tstate_head));
#endif
	P("tstate_next", offsetof(PyThreadState, next));
	P("tstate_thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030b0000
	P("tstate_native_thread_id", offsetof(PyThreadState, native_thread_id));
	P("tstate_cframe", offsetof(PyThreadState, cframe));
	P("cframe_current_frame", offsetof(_PyCFrame, current_frame));
	P("frame_previous", offsetof(_PyInterpreterFrame, previous));
	P("frame_code", offsetof(_PyInterpreterFrame, f_code));
	P("frame_instr", offsetof(_PyInterpreterFrame, prev_instr));
	P("frame_owner", offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX < 0x030c0000
	P("frame_is_entry", offsetof(_PyInterpreterFrame, is_entry));
#endif
	P("code_qualname", offsetof(PyCodeObject, co_qualname));
	P("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
	P("code_linetable", offsetof(PyCodeObject, co_linetable));
#else
	P("tstate_frame", offsetof(PyThreadState, frame));
	P("frame_previous", offsetof(PyFrameObject, f_back));
	P("frame_code", offsetof(PyFrameObject, f_code));
	P("frame_lasti", offsetof(PyFrameObject, f_lasti));
#if PY_VERSION_HEX >= 0x030a0000
	P("code_linetable", offsetof(PyCodeObject, co_linetable));
#else
	P("code_linetable", offsetof(PyCodeObject, co_lnotab));
#endif
#endif
	P("code_filename", offsetof(PyCodeObject, co_filename));
	P("code_name", offsetof(PyCodeObject, co_name));
	P("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
	P("bytes_size", offsetof(PyVarObject, ob_size));
	P("bytes_sval", offsetof(PyBytesObject, ob_sval));
	P("unicode_length", offsetof(PyASCIIObject, length));
	P("unicode_state", offsetof(PyASCIIObject, state));
	P("unicode_ascii_size", sizeof(PyASCIIObject));
	P("unicode_compact_size", sizeof(PyCompactUnicodeObject));
	printf("\n");
	return 0;
}
C
cc -I"$INC" -o "$TMPD/o" "$TMPD/o.c"
printf '%s: ' "$VER"
"$TMPD/o"
