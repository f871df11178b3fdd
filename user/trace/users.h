/* SPDX-License-Identifier: MIT */
/*
 * User and group lookups. The dynamic build asks NSS (getpwnam, initgroups). A static build
 * cannot (glibc loads NSS modules dynamically), so it reads /etc/passwd and /etc/group itself:
 * users known only to LDAP/SSSD need the dynamic build, or run as SUDO_UID with their primary
 * group only.
 */
#ifndef NT_USERS_H
#define NT_USERS_H

#include <stdbool.h>
#include <sys/types.h>

struct nt_user {
	uid_t uid;
	gid_t gid;
	char name[64];
};

/* 0, or -ENOENT when unknown */
int users_by_name(const char *name, struct nt_user *u);
int users_by_uid(uid_t uid, struct nt_user *u);
/* supplementary groups of name (plus gid) for the calling process; 0 or -errno */
int users_initgroups(const char *name, gid_t gid);

/* Pure parsers of /etc/passwd and /etc/group lines (exported for the tests). */
int users_parse_passwd(const char *line, struct nt_user *u);
/* true if the group line lists name as a member; its gid in *gid */
bool users_group_has(const char *line, const char *name, gid_t *gid);

#endif /* NT_USERS_H */
