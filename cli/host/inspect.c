/* What LD_PRELOAD can reach: a look at the file the program would be (its ELF headers and
 * sections, a #! interpreter, setuid/setgid bits, file capabilities), before it runs. */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "host/inspect.h"

/* The file execvp would run: a name with a slash as is, otherwise the first executable
 * regular file of that name along PATH. */
int resolve_program(const char *name, char *out)
{
	const char *path = getenv("PATH");
	return path_lookup(name, path ? path : "/bin:/usr/bin", out);
}

/* ... along the directories of path, a PATH value */
int path_lookup(const char *name, const char *path, char *out)
{
	if (strchr(name, '/')) {
		snprintf(out, PATH_MAX, "%s", name);
		return access(out, X_OK) == 0 ? 0 : -1;
	}
	for (const char *p = path; *p;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		struct stat st;
		int w = snprintf(out, PATH_MAX, "%.*s%s%s", (int)len, p, len ? "/" : "", name);
		if (w > 0 && w < PATH_MAX && stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(out, X_OK) == 0)
			return 0;
		if (!end)
			break;
		p = end + 1;
	}
	return -1;
}

static int read_at(int fd, void *buf, size_t n, off_t off)
{
	return pread(fd, buf, n, off) == (ssize_t)n ? 0 : -1;
}

/* Flags P_STATIC and P_GO for the ELF file on fd (native byte order only; anything else
 * is left alone: it would not run here anyway, or binfmt_misc runs it). */
static unsigned inspect_elf(int fd)
{
	unsigned char ident[EI_NIDENT];
	if (read_at(fd, ident, sizeof ident, 0) != 0 || memcmp(ident, ELFMAG, SELFMAG) != 0)
		return 0;
	const union {
		uint16_t u;
		unsigned char c[2];
	} order = {.u = 1};
	if (ident[EI_DATA] != (order.c[0] ? ELFDATA2LSB : ELFDATA2MSB))
		return 0;

	int is64 = ident[EI_CLASS] == ELFCLASS64;
	if (!is64 && ident[EI_CLASS] != ELFCLASS32)
		return 0;
	Elf64_Ehdr eh;
	if (is64) {
		if (read_at(fd, &eh, sizeof eh, 0) != 0)
			return 0;
	} else {
		Elf32_Ehdr e32;
		if (read_at(fd, &e32, sizeof e32, 0) != 0)
			return 0;
		eh.e_type = e32.e_type;
		eh.e_phoff = e32.e_phoff;
		eh.e_shoff = e32.e_shoff;
		eh.e_phnum = e32.e_phnum;
		eh.e_shnum = e32.e_shnum;
		eh.e_shstrndx = e32.e_shstrndx;
		eh.e_phentsize = e32.e_phentsize;
		eh.e_shentsize = e32.e_shentsize;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return 0;

	unsigned flags = P_STATIC; /* until a PT_INTERP shows the dynamic loader runs it */
	for (unsigned i = 0; i < eh.e_phnum && i < 4096; i++) {
		uint32_t type;
		if (read_at(fd, &type, sizeof type, (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)))
			break;
		if (type == PT_INTERP) {
			flags &= ~(unsigned)P_STATIC;
			break;
		}
	}

	/* Go: its own sections, even in a cgo (dynamically linked) binary, whose net package
	 * still makes raw syscalls. */
	if (eh.e_shoff == 0 || eh.e_shstrndx == SHN_UNDEF || eh.e_shstrndx >= eh.e_shnum)
		return flags;
	uint64_t str_off, str_size;
	off_t sh = (off_t)(eh.e_shoff + (uint64_t)eh.e_shstrndx * eh.e_shentsize);
	if (is64) {
		Elf64_Shdr s;
		if (read_at(fd, &s, sizeof s, sh))
			return flags;
		str_off = s.sh_offset, str_size = s.sh_size;
	} else {
		Elf32_Shdr s;
		if (read_at(fd, &s, sizeof s, sh))
			return flags;
		str_off = s.sh_offset, str_size = s.sh_size;
	}
	if (str_size == 0 || str_size > (1u << 20))
		return flags;
	char *names = malloc(str_size + 1);
	if (!names)
		return flags;
	if (read_at(fd, names, str_size, (off_t)str_off) == 0) {
		names[str_size] = '\0';
		for (unsigned i = 0; i < eh.e_shnum && i < 65536; i++) {
			uint32_t name; /* sh_name is the first field of both Shdr layouts */
			if (read_at(fd, &name, sizeof name, (off_t)(eh.e_shoff + (uint64_t)i * eh.e_shentsize)))
				break;
			if (name < str_size && (strcmp(names + name, ".note.go.buildid") == 0 ||
			                        strcmp(names + name, ".go.buildinfo") == 0)) {
				flags |= P_GO;
				break;
			}
		}
	}
	free(names);
	return flags;
}

/* Flags for the file at path; a #! script is judged by its interpreter (the kernel ignores
 * setuid bits on scripts), up to the kernel's own nesting limit. */
unsigned inspect_program(const char *path, char *judged, int depth)
{
	snprintf(judged, PATH_MAX, "%s", path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char head[256];
	ssize_t n = pread(fd, head, sizeof head - 1, 0);
	if (n > 2 && head[0] == '#' && head[1] == '!') {
		close(fd);
		head[n] = '\0';
		char *s = head + 2;
		s += strspn(s, " \t");
		s[strcspn(s, " \t\r\n")] = '\0';
		if (*s != '/' || depth >= 4)
			return 0;
		char interp[PATH_MAX];
		snprintf(interp, sizeof interp, "%s", s);
		return inspect_program(interp, judged, depth + 1);
	}
	unsigned flags = inspect_elf(fd);
	struct stat st;
	if (fstat(fd, &st) == 0 &&
	    ((st.st_mode & S_ISUID) || ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP))))
		flags |= P_SETID;
	if (fgetxattr(fd, "security.capability", NULL, 0) > 0)
		flags |= P_CAPS;
	close(fd);
	return flags;
}
