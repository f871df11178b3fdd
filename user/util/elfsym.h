/* SPDX-License-Identifier: MIT */
/*
 * Symbols of an ELF file (a library for uprobes, a Python interpreter for its runtime state):
 * functions and objects from .symtab and .dynsym by (mangled) name, with their file offsets;
 * the loadable segments; the GNU build-id; and whether the file has DWARF.
 */
#ifndef NT_ELFSYM_H
#define NT_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_sym {
	const char *name; /* owned by the elf_lib */
	uint64_t vaddr;
	uint64_t size;
	uint64_t offset; /* in the file: what a uprobe attaches to */
	bool global;
	bool func; /* STT_FUNC, else STT_OBJECT */
};

struct elf_lib;

/* 0 or -errno; err says what is wrong with the file ("not an ELF file", ...) */
int elflib_open(const char *path, struct elf_lib **out, char *err, size_t errlen);
void elflib_close(struct elf_lib *l);

const char *elflib_build_id(const struct elf_lib *l); /* hex, "" if none */
bool elflib_has_symtab(const struct elf_lib *l);
bool elflib_has_dwarf(const struct elf_lib *l);

/*
 * The functions named exactly name. A clone (.cold/.isra/.part/.constprop) is only found when
 * asked for by its full name: its ABI differs. Several may share a static name (net.cc and coll_net.cc both define sendSetup): up to max are
 * returned, ordered by address. Returns how many exist.
 */
int elflib_find(const struct elf_lib *l, const char *name, struct elf_sym *out, int max);
/*
 * The functions named base or base.SUFFIX: compiler clones (.part.2, .isra.0, .constprop.0), whose
 * number changes from build to build. Returns how many, like elflib_find.
 */
int elflib_find_clone(const struct elf_lib *l, const char *base, struct elf_sym *out, int max);
/* The data object named name (e.g. ncclLastError); 0 or -ENOENT */
int elflib_find_object(const struct elf_lib *l, const char *name, struct elf_sym *out);

/*
 * The loadable segment holding vaddr (its .bss too, which has no file offset): its p_vaddr and
 * p_offset, where it is mapped from. 0 or -ENOENT.
 */
int elflib_segment_of(const struct elf_lib *l, uint64_t vaddr, uint64_t *seg_vaddr,
		      uint64_t *seg_offset);

/*
 * Every whole string of .rodata that starts with prefix, to cb (which returns nonzero to
 * stop; that value is returned). 0 when all were seen, -errno on a bad file.
 */
int elflib_each_string(const struct elf_lib *l, const char *prefix,
		       int (*cb)(void *ctx, const char *s, size_t len), void *ctx);
/* The first string of .rodata starting with prefix ("NCCL version "), copied to buf; 0 or -errno */
int elflib_find_string(const struct elf_lib *l, const char *prefix, char *buf, size_t len);

/* A clone suffix (".cold", ".isra.5", ".part.2", ".constprop.0") ends this name. */
bool elfsym_is_clone(const char *name);

#endif /* NT_ELFSYM_H */
