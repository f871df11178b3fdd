// SPDX-License-Identifier: MIT
/*
 * Naming the frames of a stack (stacks.c takes them): module, symbol and offset from .symtab,
 * .dynsym or DWARF through libdwfl, the short names the evidence shows, and for the static
 * build the stand-ins for libdwfl's debuginfod client.
 */
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "trace/stacks.h"
#include "trace/stacks_priv.h"

/* The function the DWARF of mod places pc in: for a file with DWARF but no symbol table. */
static bool dwarf_function(Dwfl_Module *mod, struct stack_frame *fr)
{
	Dwarf_Addr bias, low;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, fr->pc, &bias), *scopes = NULL;
	bool found = false;
	int n;

	if (!cu)
		return false;
	n = dwarf_getscopes(cu, fr->pc - bias, &scopes);
	for (int i = 0; i < n && !found; i++) {
		const char *name = dwarf_diename(&scopes[i]);

		if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram || !name ||
		    dwarf_lowpc(&scopes[i], &low))
			continue;
		snprintf(fr->symbol, sizeof(fr->symbol), "%s", name);
		fr->offset = fr->pc - bias - low;
		found = true;
	}
	free(scopes);
	return found;
}

/* The nearest function symbol at or below fr->pc in mod's symbol table (.dynsym when stripped) */
static void nearest_below(Dwfl_Module *mod, struct stack_frame *fr)
{
	int n = dwfl_module_getsymtab(mod);
	GElf_Addr best = 0;
	const char *best_name = NULL;

	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);

		if (name && name[0] && GELF_ST_TYPE(sym.st_info) == STT_FUNC && addr <= fr->pc &&
		    addr >= best) {
			best = addr;
			best_name = name;
		}
	}
	if (!best_name)
		return;
	snprintf(fr->near, sizeof(fr->near), "%.*s", (int)strcspn(best_name, "@"), best_name);
	fr->near_offset = fr->pc - best;
}

/*
 * Module, symbol and offset of fr->pc: .symtab, else .dynsym (libdwfl's order), else DWARF. A
 * symbol counts only if pc is inside it (its st_size): in a library stripped to .dynsym the
 * nearest export below an internal function is not where the thread is, and it is shown as
 * "libnccl.so.2+0x1234" (the module's own address, as objdump and addr2line read it), with that
 * nearest export as a landmark beside it (near).
 */
void stacks_symbolize(Dwfl *dwfl, struct stack_frame *fr)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, fr->pc);
	const char *mname, *name;
	Dwarf_Addr low = 0, bias = 0;
	GElf_Off off = 0;
	GElf_Sym sym;

	fr->offset = fr->pc;
	if (!mod)
		return;
	mname = dwfl_module_info(mod, NULL, &low, NULL, NULL, NULL, NULL, NULL);
	snprintf(fr->module, sizeof(fr->module), "%s", mname ? mname : "");
	name = dwfl_module_addrinfo(mod, fr->pc, &off, &sym, NULL, NULL, NULL);
	if (name && (sym.st_size ? off < sym.st_size : off == 0)) {
		snprintf(fr->symbol, sizeof(fr->symbol), "%s", name);
		fr->offset = off;
		fr->size = sym.st_size;
		return;
	}
	if (dwarf_function(mod, fr))
		return;
	fr->offset = fr->pc - (dwfl_module_getelf(mod, &bias) ? bias : low);
	nearest_below(mod, fr);
}

/* "_Z21ncclTransportP2pSetupP8ncclComm..." -> "ncclTransportP2pSetup"; _ZN..E -> "a::b" */
const char *stack_short_name(const char *sym, char *buf, size_t len)
{
	const char *p = sym;
	size_t off = 0;
	bool nested;

	if (strncmp(p, "_Z", 2)) {
		/* "clock_nanosleep@GLIBC_2.2.5": the version is not part of the name */
		snprintf(buf, len, "%.*s", (int)strcspn(sym, "@"), sym);
		return buf;
	}
	p += 2;
	nested = *p == 'N';
	if (nested)
		p++;
	buf[0] = '\0';
	for (;;) {
		unsigned long n;
		char *end;

		if (*p == 'L')
			p++;
		if (*p < '1' || *p > '9')
			break;
		n = strtoul(p, &end, 10);
		if (strnlen(end, n) < n)
			break;
		off += snprintf(buf + off, off < len ? len - off : 0, "%s%.*s", off ? "::" : "",
				(int)n, end);
		p = end + n;
		/* one name, or the components of a nested one up to what this reader knows */
		if (!nested || off >= len)
			break;
	}
	if (!buf[0])
		snprintf(buf, len, "%s", sym);
	return buf;
}

const char *stack_module_base(const char *module)
{
	const char *s = strrchr(module, '/');

	return s ? s + 1 : module;
}

const char *stack_frame_name(const struct stack_frame *f, char *buf, size_t len)
{
	if (f->symbol[0])
		return stack_short_name(f->symbol, buf, len);
	if (f->module[0])
		snprintf(buf, len, "%s+0x%llx", stack_module_base(f->module),
			 (unsigned long long)f->offset);
	else
		snprintf(buf, len, "0x%llx", (unsigned long long)f->pc);
	return buf;
}

#ifdef NT_STATIC
/*
 * The static build: libdwfl's debuginfod client (libdw.a's debuginfod-client.o, which dlopens
 * libdebuginfod and would ask servers over the network) is replaced by these, so the linker never
 * pulls it in. Nothing here asks for debug files on the network anyway (local_debuginfo); with
 * them, the static binary cannot either. elfutils 0.188's names (libdwfl/debuginfod-client.c): a
 * version that renames them pulls the client in again, and its dlopen warning fails the link.
 */
debuginfod_client *dwfl_get_debuginfod_client(Dwfl *dwfl)
{
	(void)dwfl;
	return NULL;
}

int __libdwfl_debuginfod_find_executable(Dwfl *dwfl, const unsigned char *id, size_t len);
int __libdwfl_debuginfod_find_executable(Dwfl *dwfl, const unsigned char *id, size_t len)
{
	(void)dwfl;
	(void)id;
	(void)len;
	return -1;
}

int __libdwfl_debuginfod_find_debuginfo(Dwfl *dwfl, const unsigned char *id, size_t len);
int __libdwfl_debuginfod_find_debuginfo(Dwfl *dwfl, const unsigned char *id, size_t len)
{
	(void)dwfl;
	(void)id;
	(void)len;
	return -1;
}

void __libdwfl_debuginfod_end(debuginfod_client *c);
void __libdwfl_debuginfod_end(debuginfod_client *c)
{
	(void)c;
}
#endif
