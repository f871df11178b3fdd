// SPDX-License-Identifier: MIT
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "trace/users.h"

int users_parse_passwd(const char *line, struct nt_user *u)
{
	/* name:passwd:uid:gid:gecos:dir:shell */
	const char *c1 = strchr(line, ':'), *c2, *c3;
	char *end;
	unsigned long uid, gid;

	if (!c1 || c1 == line || (size_t)(c1 - line) >= sizeof(u->name))
		return -EINVAL;
	c2 = strchr(c1 + 1, ':');
	if (!c2)
		return -EINVAL;
	errno = 0;
	uid = strtoul(c2 + 1, &end, 10);
	if (errno || *end != ':' || end == c2 + 1)
		return -EINVAL;
	c3 = end;
	gid = strtoul(c3 + 1, &end, 10);
	if (errno || (*end != ':' && *end != '\0' && *end != '\n') || end == c3 + 1)
		return -EINVAL;
	memcpy(u->name, line, c1 - line);
	u->name[c1 - line] = '\0';
	u->uid = uid;
	u->gid = gid;
	return 0;
}

bool users_group_has(const char *line, const char *name, gid_t *gid)
{
	/* group:passwd:gid:member,member */
	const char *c1 = strchr(line, ':'), *c2, *m;
	char *end;
	size_t nl = strlen(name);
	unsigned long g;

	if (!c1 || !(c2 = strchr(c1 + 1, ':')))
		return false;
	g = strtoul(c2 + 1, &end, 10);
	if (*end != ':' || end == c2 + 1)
		return false;
	for (m = end + 1; *m && *m != '\n';) {
		size_t len = strcspn(m, ",\n");

		if (len == nl && strncmp(m, name, nl) == 0) {
			*gid = g;
			return true;
		}
		m += len;
		if (*m == ',')
			m++;
	}
	return false;
}

#ifdef NT_STATIC
static int passwd_find(const char *name, uid_t uid, struct nt_user *u)
{
	FILE *f = fopen("/etc/passwd", "re");
	char line[1024];
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (users_parse_passwd(line, u))
			continue;
		if (name ? strcmp(u->name, name) == 0 : u->uid == uid) {
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

int users_by_name(const char *name, struct nt_user *u)
{
	return passwd_find(name, 0, u);
}

int users_by_uid(uid_t uid, struct nt_user *u)
{
	return passwd_find(NULL, uid, u);
}

int users_initgroups(const char *name, gid_t gid)
{
	gid_t groups[256];
	int n = 0;
	char line[4096];
	FILE *f = fopen("/etc/group", "re");

	groups[n++] = gid;
	while (f && fgets(line, sizeof(line), f) && n < 256) {
		gid_t g;

		if (users_group_has(line, name, &g) && g != gid)
			groups[n++] = g;
	}
	if (f)
		fclose(f);
	return setgroups(n, groups) ? -errno : 0;
}
#else
static int from_passwd(const struct passwd *pw, struct nt_user *u)
{
	if (!pw)
		return -ENOENT;
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	snprintf(u->name, sizeof(u->name), "%s", pw->pw_name);
	return 0;
}

int users_by_name(const char *name, struct nt_user *u)
{
	return from_passwd(getpwnam(name), u);
}

int users_by_uid(uid_t uid, struct nt_user *u)
{
	return from_passwd(getpwuid(uid), u);
}

int users_initgroups(const char *name, gid_t gid)
{
	return initgroups(name, gid) ? -errno : 0;
}
#endif
