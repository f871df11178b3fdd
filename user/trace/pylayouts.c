// SPDX-License-Identifier: MIT
/*
 * CPython's layouts and line tables, and the names and merged text of Python stacks: the pure
 * parts of reading a Python stack from outside (pystack.c reads the memory).
 *
 * The table holds, for each version from 3.9 to 3.12, the offsets of the fields the reader
 * follows, as the compiler computes them from that version's own headers
 * (scripts/pyoffsets.sh prints them: Include/internal/pycore_runtime.h, pycore_interp.h,
 * pycore_frame.h, cpython/pystate.h, cpython/code.h, cpython/unicodeobject.h). They are the
 * same for every patch release of a version on x86-64 and aarch64 (LP64): 3.11.2 (Debian 12) and
 * 3.11.7 give the same line. 3.13 and later publish the offsets themselves (_Py_DebugOffsets);
 * the layout of that struct is itself 3.13's (pycore_runtime.h), and a later version, whose
 * struct has other fields, is unknown until its layout is added here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "trace/pystack.h"
#include "trace/pystack_priv.h"

/*
 * One row per version, in struct py_layout's order (pystack_priv.h): minor, hexversion (0: read
 * from Py_Version), then the runtime (interpreters.head, main_thread), the interpreter
 * (threads.head), the thread state (next, thread_id, native_thread_id, frame, cframe), the
 * cframe (current_frame), the frame (previous, f_code, f_lasti or prev_instr, owner, is_entry),
 * the code object (co_filename, co_name, co_qualname, co_firstlineno, co_lnotab or
 * co_linetable, co_code_adaptive), bytes (ob_size, ob_sval) and str (length, state,
 * sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject)).
 */
/* clang-format off */
static const struct py_layout layouts[] = {
	{ 9, 0, 32, 72,  8, 8, 176,  -1, 24, -1, -1, 24, 32, 104, -1, -1,
	  104, 112,  -1, 40, 120,  -1, 16, 32, 16, 32, 48, 72 },
	{10, 0, 32, 72,  8, 8, 176,  -1, 24, -1, -1, 24, 32,  96, -1, -1,
	  104, 112,  -1, 40, 120,  -1, 16, 32, 16, 32, 48, 72 },
	{11, 0, 40, 80, 16, 8, 152, 160, -1, 56,  8, 48, 32,  56, 69, 68,
	  112, 120, 128, 72, 136, 184, 16, 32, 16, 32, 48, 72 },
	{12, 0, 40, 64, 72, 8, 136, 144, -1, 56,  0,  8,  0,  56, 70, -1,
	  112, 120, 128, 68, 136, 192, 16, 32, 16, 32, 40, 56 },
};
/* clang-format on */

const struct py_layout *pylayout_table(int minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

static uint64_t u64_at(const uint8_t *buf, size_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/*
 * 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h, 3.13.0): uint64_t fields, each
 * the offset of a field in its struct; where each of those sits in _Py_DebugOffsets.
 */
enum {
	D13_VERSION = 8,
	D13_RT_INTERP_HEAD = 40,
	D13_IN_THREADS_HEAD = 72,
	D13_TS_NEXT = 168,
	D13_TS_CURRENT_FRAME = 184,
	D13_TS_THREAD_ID = 192,
	D13_TS_NATIVE_TID = 200,
	D13_FR_PREVIOUS = 232,
	D13_FR_EXECUTABLE = 240,
	D13_FR_INSTR_PTR = 248,
	D13_FR_OWNER = 264,
	D13_CO_FILENAME = 280,
	D13_CO_NAME = 288,
	D13_CO_QUALNAME = 296,
	D13_CO_LINETABLE = 304,
	D13_CO_FIRSTLINENO = 312,
	D13_CO_CODE = 344,
	D13_BY_SIZE = 520,
	D13_BY_SVAL = 528,
	D13_UN_STATE = 544,
	D13_UN_LENGTH = 552,
	D13_UN_ASCII_SIZE = 560,
	D13_END = 584,
};

/* an offset that a struct of CPython's could have; anything else is not a debug offsets table */
static int field(const uint8_t *buf, size_t off, int *bad)
{
	uint64_t v = u64_at(buf, off);

	if (v > (1 << 20))
		*bad = 1;
	return (int)v;
}

int pylayout_from_debug(const uint8_t *buf, size_t n, struct py_layout *out, int *minor)
{
	uint64_t hex;
	int bad = 0;

	*minor = -1;
	if (n < 16 || memcmp(buf, "xdebugpy", 8))
		return -ENOENT;
	hex = u64_at(buf, D13_VERSION);
	*minor = (int)((hex >> 16) & 0xff);
	if ((hex >> 24) != 3 || *minor != 13 || n < D13_END)
		return -ENOTSUP;
	memset(out, 0xff, sizeof(*out)); /* every field -1 unless set */
	out->minor = 13;
	out->hexversion = hex;
	out->rt_interp_head = field(buf, D13_RT_INTERP_HEAD, &bad);
	out->in_threads_head = field(buf, D13_IN_THREADS_HEAD, &bad);
	out->ts_next = field(buf, D13_TS_NEXT, &bad);
	out->ts_frame = field(buf, D13_TS_CURRENT_FRAME, &bad);
	out->ts_thread_id = field(buf, D13_TS_THREAD_ID, &bad);
	out->ts_native_tid = field(buf, D13_TS_NATIVE_TID, &bad);
	out->fr_previous = field(buf, D13_FR_PREVIOUS, &bad);
	out->fr_code = field(buf, D13_FR_EXECUTABLE, &bad);
	out->fr_instr = field(buf, D13_FR_INSTR_PTR, &bad);
	out->fr_owner = field(buf, D13_FR_OWNER, &bad);
	out->co_filename = field(buf, D13_CO_FILENAME, &bad);
	out->co_name = field(buf, D13_CO_NAME, &bad);
	out->co_qualname = field(buf, D13_CO_QUALNAME, &bad);
	out->co_linetable = field(buf, D13_CO_LINETABLE, &bad);
	out->co_firstlineno = field(buf, D13_CO_FIRSTLINENO, &bad);
	out->co_code = field(buf, D13_CO_CODE, &bad);
	out->by_size = field(buf, D13_BY_SIZE, &bad);
	out->by_sval = field(buf, D13_BY_SVAL, &bad);
	out->un_state = field(buf, D13_UN_STATE, &bad);
	out->un_length = field(buf, D13_UN_LENGTH, &bad);
	out->un_ascii_size = field(buf, D13_UN_ASCII_SIZE, &bad);
	/* PyCompactUnicodeObject: PyASCIIObject, then utf8_length and utf8 (no wstr since 3.12) */
	out->un_compact_size = out->un_ascii_size + 16;
	return bad ? -ENOTSUP : 0;
}

/* 3.9's co_lnotab: (address increment, signed line increment) byte pairs; addr in bytes */
static int lnotab_line(const uint8_t *tab, size_t n, int first, int addr)
{
	int line = first, a = 0;

	for (size_t i = 0; i + 1 < n; i += 2) {
		a += tab[i];
		if (a > addr)
			break;
		line += (int8_t)tab[i + 1];
	}
	return line;
}

/* 3.10's co_linetable: (bytes, signed line delta) pairs, -128 for "no line"; addr in bytes */
static int linetable310_line(const uint8_t *tab, size_t n, int first, int addr)
{
	int line = first, start, end = 0;

	for (size_t i = 0; i + 1 < n; i += 2) {
		int8_t d = (int8_t)tab[i + 1];
		int ar_line;

		start = end;
		end += tab[i];
		if (d == -128) {
			ar_line = 0;
		} else {
			line += d;
			ar_line = line;
		}
		if (addr >= start && addr < end)
			return ar_line;
	}
	return 0;
}

/* 6-bit groups, low first, bit 6 set while more follow (Objects/locations.md) */
static unsigned varint(const uint8_t *tab, size_t n, size_t *i)
{
	unsigned v = 0, shift = 0;
	uint8_t b;

	do {
		if (*i >= n)
			return v;
		b = tab[(*i)++];
		v |= (unsigned)(b & 63) << shift;
		shift += 6;
	} while ((b & 64) && shift < 32);
	return v;
}

static int svarint(const uint8_t *tab, size_t n, size_t *i)
{
	unsigned v = varint(tab, n, i);

	return v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
}

/*
 * 3.11+'s location table (Objects/locations.md): entries whose first byte has bit 7 set, then
 * a 4-bit code and the length in code units less 1. Code 15: no location; 14: long form and
 * 13: no columns, a signed varint line delta first; 10-12: the line moves by code - 10; 0-9:
 * the same line. addr in code units.
 */
static int locations_line(const uint8_t *tab, size_t n, int first, int addr)
{
	int line = first, start = 0;
	size_t i = 0;

	while (i < n) {
		uint8_t b = tab[i++];
		int code = (b >> 3) & 15, len = (b & 7) + 1;
		bool none = code == 15;

		if (!(b & 0x80))
			continue; /* not an entry's first byte: resynchronise */
		if (code == 14 || code == 13)
			line += svarint(tab, n, &i);
		else if (code >= 10 && code <= 12)
			line += code - 10;
		if (addr >= start && addr < start + len)
			return none ? 0 : line;
		start += len;
		while (i < n && !(tab[i] & 0x80))
			i++;
	}
	return 0;
}

int py_addr2line(int minor, const uint8_t *tab, size_t n, int first, int addr)
{
	if (addr < 0)
		return first;
	if (minor <= 9)
		return lnotab_line(tab, n, first, addr);
	if (minor == 10)
		return linetable310_line(tab, n, first, addr);
	return locations_line(tab, n, first, addr);
}

/* the part of path after the last "/NEEDLE/", or NULL */
static const char *after(const char *path, const char *needle)
{
	const char *p = strstr(path, needle), *q;

	if (!p)
		return NULL;
	while ((q = strstr(p + 1, needle)))
		p = q;
	return p + strlen(needle);
}

/* "torch/serialization.py" under site-packages, "threading.py" in the library, else the name */
static const char *short_file(const char *file)
{
	const char *s = after(file, "/site-packages/");
	const char *lib;

	if (s || (s = after(file, "/dist-packages/")))
		return s;
	lib = after(file, "/lib/python3");
	if (lib && (s = strchr(lib, '/')))
		return s + 1;
	s = strrchr(file, '/');
	return s ? s + 1 : file;
}

const char *py_frame_name(const struct py_frame *f, char *buf, size_t len)
{
	if (f->line > 0)
		snprintf(buf, len, "%s:%d %s", short_file(f->file), f->line, f->func);
	else
		snprintf(buf, len, "%s %s", short_file(f->file), f->func);
	return buf;
}

bool py_frame_is_user(const struct py_frame *f)
{
	return f->file[0] && f->file[0] != '<' && !strstr(f->file, "/site-packages/") &&
	       !strstr(f->file, "/dist-packages/") && !strstr(f->file, "/lib/python3");
}

const struct py_frame *py_top_frame(const struct py_thread *t)
{
	for (int i = 0; t && i < t->nframes; i++)
		if (py_frame_is_user(&t->frames[i]))
			return &t->frames[i];
	return t && t->nframes ? &t->frames[0] : NULL;
}
