// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/elfsym.h"
#include "util/grow.h"

struct elf_lib {
	int fd;
	Elf *elf;
	struct elf_sym *syms; /* functions and objects, sorted by name then address */
	int nsyms;
	char build_id[41];
	bool has_symtab;
	bool has_dwarf;
	GElf_Phdr *phdrs;
	size_t nphdrs;
};

bool elfsym_is_clone(const char *name)
{
	static const char *const suffixes[] = {".cold", ".isra", ".part", ".constprop",
					       ".lto_priv"};

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (strstr(name, suffixes[i]))
			return true;
	return false;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

static uint64_t vaddr_to_offset(const struct elf_lib *l, uint64_t vaddr)
{
	for (size_t i = 0; i < l->nphdrs; i++) {
		const GElf_Phdr *p = &l->phdrs[i];

		if (p->p_type == PT_LOAD && vaddr >= p->p_vaddr && vaddr < p->p_vaddr + p->p_filesz)
			return vaddr - p->p_vaddr + p->p_offset;
	}
	return vaddr;
}

static void read_build_id(struct elf_lib *l, Elf_Scn *scn)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((char *)d->d_buf + name_off, "GNU", 4) == 0) {
			const unsigned char *id = (const unsigned char *)d->d_buf + desc_off;

			for (size_t i = 0; i < nh.n_descsz && i < 20; i++)
				snprintf(l->build_id + 2 * i, 3, "%02x", id[i]);
			return;
		}
	}
}

/*
 * versym: .dynsym's version indexes (.gnu.version), or NULL. A symbol of a non-default version
 * (name@VER, not name@@VER: an old ABI kept for old binaries, such as ibv_create_qp@IBVERBS_1.0)
 * is never what dlsym or dlvsym of the current version gives: it is left out.
 */
static int add_symbols(struct elf_lib *l, Elf_Scn *scn, const GElf_Shdr *sh, Elf_Data *versym,
		       int *cap)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; d && i < n; i++) {
		GElf_Sym s;
		GElf_Versym v;
		const char *name;
		int type;

		if (!gelf_getsym(d, i, &s))
			continue;
		if (versym && gelf_getversym(versym, i, &v) && (v & 0x8000))
			continue;
		type = GELF_ST_TYPE(s.st_info);
		if ((type != STT_FUNC && type != STT_OBJECT) || s.st_shndx == SHN_UNDEF ||
		    !s.st_value)
			continue;
		name = elf_strptr(l->elf, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		if (grow(&l->syms, cap, l->nsyms, sizeof(*l->syms), 1024))
			return -ENOMEM;
		l->syms[l->nsyms] = (struct elf_sym){
			.name = name,
			.vaddr = s.st_value,
			.size = s.st_size,
			.global = GELF_ST_BIND(s.st_info) != STB_LOCAL,
			.func = type == STT_FUNC,
		};
		l->nsyms++;
	}
	return 0;
}

int elflib_segment_of(const struct elf_lib *l, uint64_t vaddr, uint64_t *seg_vaddr,
		      uint64_t *seg_offset)
{
	for (size_t i = 0; i < l->nphdrs; i++) {
		const GElf_Phdr *p = &l->phdrs[i];

		if (p->p_type == PT_LOAD && vaddr >= p->p_vaddr &&
		    vaddr < p->p_vaddr + p->p_memsz) {
			*seg_vaddr = p->p_vaddr;
			*seg_offset = p->p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

int elflib_open(const char *path, struct elf_lib **out, char *err, size_t errlen)
{
	struct elf_lib *l = calloc(1, sizeof(*l));
	Elf_Scn *scn = NULL;
	Elf_Data *versym = NULL;
	size_t shstrndx, n = 0;
	int cap = 0, rc;

	if (!l)
		return -ENOMEM;
	elf_version(EV_CURRENT);
	l->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (l->fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		free(l);
		return rc;
	}
	l->elf = elf_begin(l->fd, ELF_C_READ_MMAP, NULL);
	if (!l->elf || elf_kind(l->elf) != ELF_K_ELF || elf_getshdrstrndx(l->elf, &shstrndx)) {
		snprintf(err, errlen, "%s: not an ELF file", path);
		elflib_close(l);
		return -ENOEXEC;
	}
	/* the count only with its table: a failed read may leave a count behind, and a count no
	 * file this size can hold fails the allocation */
	if (elf_getphdrnum(l->elf, &n) == 0 && n && (l->phdrs = calloc(n, sizeof(*l->phdrs)))) {
		l->nphdrs = n;
		for (size_t i = 0; i < l->nphdrs; i++)
			gelf_getphdr(l->elf, i, &l->phdrs[i]);
	}
	while ((scn = elf_nextscn(l->elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_GNU_versym)
			versym = elf_getdata(scn, NULL);
	}
	while ((scn = elf_nextscn(l->elf, scn))) {
		GElf_Shdr sh;
		const char *sname;

		if (!gelf_getshdr(scn, &sh))
			continue;
		sname = elf_strptr(l->elf, shstrndx, sh.sh_name);
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) {
			if (sh.sh_type == SHT_SYMTAB)
				l->has_symtab = true;
			rc = add_symbols(l, scn, &sh, sh.sh_type == SHT_DYNSYM ? versym : NULL,
					 &cap);
			if (rc) {
				elflib_close(l);
				return rc;
			}
		} else if (sh.sh_type == SHT_NOTE) {
			read_build_id(l, scn);
		} else if (sname && strcmp(sname, ".debug_info") == 0 && sh.sh_size > 0 &&
			   sh.sh_type != SHT_NOBITS) {
			l->has_dwarf = true;
		}
	}
	for (int i = 0; i < l->nsyms; i++)
		l->syms[i].offset = vaddr_to_offset(l, l->syms[i].vaddr);
	if (l->nsyms > 1)
		qsort(l->syms, l->nsyms, sizeof(*l->syms), sym_cmp);
	*out = l;
	return 0;
}

void elflib_close(struct elf_lib *l)
{
	if (!l)
		return;
	if (l->elf)
		elf_end(l->elf);
	if (l->fd >= 0)
		close(l->fd);
	free(l->syms);
	free(l->phdrs);
	free(l);
}

const char *elflib_build_id(const struct elf_lib *l)
{
	return l->build_id;
}

bool elflib_has_symtab(const struct elf_lib *l)
{
	return l->has_symtab;
}

bool elflib_has_dwarf(const struct elf_lib *l)
{
	return l->has_dwarf;
}

static int first_named(const struct elf_lib *l, const char *name)
{
	int lo = 0, hi = l->nsyms - 1, found = -1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2, c = strcmp(l->syms[mid].name, name);

		if (c == 0) {
			found = mid;
			hi = mid - 1;
		} else if (c < 0) {
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

int elflib_find(const struct elf_lib *l, const char *name, struct elf_sym *out, int max)
{
	int i = first_named(l, name), n = 0;
	uint64_t last = 0;

	if (i < 0)
		return 0;
	for (; i < l->nsyms && strcmp(l->syms[i].name, name) == 0; i++) {
		if (!l->syms[i].func || l->syms[i].vaddr == last)
			continue; /* .dynsym and .symtab list the same function */
		last = l->syms[i].vaddr;
		if (n < max)
			out[n] = l->syms[i];
		n++;
	}
	return n;
}

int elflib_find_clone(const struct elf_lib *l, const char *base, struct elf_sym *out, int max)
{
	size_t len = strlen(base);
	int lo = 0, hi = l->nsyms, n = 0;
	uint64_t last = 0;

	/* the first name >= base: the clones sort right after it ('.' < every name character) */
	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (strcmp(l->syms[mid].name, base) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (int i = lo; i < l->nsyms && !strncmp(l->syms[i].name, base, len); i++) {
		char c = l->syms[i].name[len];

		if ((c != '\0' && c != '.') || !l->syms[i].func || l->syms[i].vaddr == last)
			continue;
		last = l->syms[i].vaddr;
		if (n < max)
			out[n] = l->syms[i];
		n++;
	}
	return n;
}

int elflib_find_object(const struct elf_lib *l, const char *name, struct elf_sym *out)
{
	int i = first_named(l, name);

	for (; i >= 0 && i < l->nsyms && strcmp(l->syms[i].name, name) == 0; i++) {
		if (!l->syms[i].func) {
			*out = l->syms[i];
			return 0;
		}
	}
	return -ENOENT;
}

int elflib_each_string(const struct elf_lib *l, const char *prefix,
		       int (*cb)(void *ctx, const char *s, size_t len), void *ctx)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, pl = strlen(prefix);

	if (elf_getshdrstrndx(l->elf, &shstrndx))
		return -EINVAL;
	while ((scn = elf_nextscn(l->elf, scn))) {
		GElf_Shdr sh;
		const char *sname;
		Elf_Data *d;
		const char *p, *end;

		if (!gelf_getshdr(scn, &sh))
			continue;
		sname = elf_strptr(l->elf, shstrndx, sh.sh_name);
		if (!sname || strcmp(sname, ".rodata") != 0 || !(d = elf_getdata(scn, NULL)) ||
		    !d->d_buf || !d->d_size)
			continue; /* a NOBITS or empty .rodata has no strings */
		p = d->d_buf;
		end = p + d->d_size;
		while (p < end && (p = memmem(p, end - p, prefix, pl))) {
			/* a whole string: starts after a NUL (or at the start) */
			if (p == d->d_buf || p[-1] == '\0') {
				size_t n = strnlen(p, end - p);
				int r = cb(ctx, p, n);

				if (r)
					return r;
				p += n;
				continue;
			}
			p += pl;
		}
	}
	return 0;
}

struct first_string {
	char *buf;
	size_t len;
};

static int take_first(void *ctx, const char *s, size_t n)
{
	struct first_string *f = ctx;

	snprintf(f->buf, f->len, "%.*s", (int)n, s);
	return 1;
}

int elflib_find_string(const struct elf_lib *l, const char *prefix, char *buf, size_t len)
{
	struct first_string f = {.buf = buf, .len = len};
	int r = elflib_each_string(l, prefix, take_first, &f);

	return r == 1 ? 0 : r < 0 ? r : -ENOENT;
}
