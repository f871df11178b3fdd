// SPDX-License-Identifier: MIT
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <elfutils/libdw.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "nccl/dwoff.h"

/*
 * Is the member's type a pointer, once typedefs and qualifiers are peeled? A field that became
 * a pointer in some version (NCCL 2.29's ncclIbListenComm.stage) holds an address there, not
 * the value its offset was wanted for.
 */
static bool member_is_ptr(Dwarf_Die *member)
{
	Dwarf_Attribute attr;
	Dwarf_Die type, peeled;
	int tag;

	if (!dwarf_attr_integrate(member, DW_AT_type, &attr) || !dwarf_formref_die(&attr, &type) ||
	    dwarf_peel_type(&type, &peeled) != 0)
		return false;
	tag = dwarf_tag(&peeled);
	return tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type ||
	       tag == DW_TAG_rvalue_reference_type;
}

/* Fill every request for the struct at die; returns how many it filled. */
static int fill_struct(Dwarf_Die *die, const char *name, struct dwoff_req *reqs, int n)
{
	Dwarf_Die child;
	int filled = 0;

	if (dwarf_child(die, &child) != 0)
		return 0;
	do {
		Dwarf_Attribute attr;
		Dwarf_Word off;
		const char *mname;

		if (dwarf_tag(&child) != DW_TAG_member || !(mname = dwarf_diename(&child)))
			continue;
		if (!dwarf_attr(&child, DW_AT_data_member_location, &attr) ||
		    dwarf_formudata(&attr, &off) != 0)
			continue;
		for (int i = 0; i < n; i++) {
			if (reqs[i].offset < 0 && strcmp(reqs[i].type, name) == 0 &&
			    strcmp(reqs[i].member, mname) == 0) {
				reqs[i].offset = (long)off;
				reqs[i].is_ptr = member_is_ptr(&child);
				filled++;
			}
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return filled;
}

static bool wanted(const char *name, const struct dwoff_req *reqs, int n)
{
	for (int i = 0; i < n; i++)
		if (reqs[i].offset < 0 && strcmp(reqs[i].type, name) == 0)
			return true;
	return false;
}

int dwoff_resolve(const char *path, struct dwoff_req *reqs, int n, char *err, size_t errlen)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	int fd, found = 0, left = n;
	Dwarf *dw;

	for (int i = 0; i < n; i++) {
		reqs[i].offset = -1;
		reqs[i].is_ptr = false;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -errno;
	}
	dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw) {
		snprintf(err, errlen, "%s: no DWARF debug info (%s)", path, dwarf_errmsg(-1));
		close(fd);
		return -ENODATA;
	}
	while (left > 0 && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, die;

		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &die) == 0) {
			do {
				int tag = dwarf_tag(&die);
				const char *name;
				Dwarf_Attribute a;

				if (tag != DW_TAG_structure_type && tag != DW_TAG_class_type &&
				    tag != DW_TAG_union_type)
					continue;
				name = dwarf_diename(&die);
				if (!name || dwarf_attr(&die, DW_AT_declaration, &a) ||
				    !wanted(name, reqs, n))
					continue;
				left -= fill_struct(&die, name, reqs, n);
			} while (left > 0 && dwarf_siblingof(&die, &die) == 0);
		}
		off = next;
	}
	for (int i = 0; i < n; i++)
		found += reqs[i].offset >= 0;
	dwarf_end(dw);
	close(fd);
	return found;
}
