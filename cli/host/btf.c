/* A type's id in BTF, found by walking the type section as the kernel lays it out
 * (Documentation/bpf/btf.rst):
 *   a header (its own length first: hdr_len, which grows as the format does), then at
 *   hdr_len + type_off the types, at hdr_len + str_off their names (NUL-terminated);
 *   each type a 12-byte record (name offset, info: kind and vlen, size or type), followed by
 *   data whose size its kind decides; type ids count from 1 in the order of the records.
 * Nothing in the data is trusted: a type is looked at only when all of it is inside the
 * section, a name only when it ends inside the string section. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/bpf_abi.h"
#include "host/btf.h"

#if defined(__has_include)
#if __has_include(<linux/btf.h>)
#include <linux/btf.h>
#define SAME(ours, theirs) _Static_assert((int)(ours) == (int)(theirs), #ours " is " #theirs)
SAME(BTF_K_INT, BTF_KIND_INT);
SAME(BTF_K_FUNC, BTF_KIND_FUNC);
SAME(BTF_K_DATASEC, BTF_KIND_DATASEC);
#undef SAME
#endif
#endif

/* What follows a type's record: a fixed part, and vlen entries of a size (struct btf_array,
 * btf_member, btf_enum, btf_param, btf_var, btf_var_secinfo, btf_decl_tag, btf_enum64) */
static const struct { unsigned char fixed, each; } trailing[BTF_K_MAX + 1] = {
	[BTF_K_INT] = {4, 0},        [BTF_K_ARRAY] = {12, 0},     [BTF_K_STRUCT] = {0, 12},
	[BTF_K_UNION] = {0, 12},     [BTF_K_ENUM] = {0, 8},       [BTF_K_FUNC_PROTO] = {0, 8},
	[BTF_K_VAR] = {4, 0},        [BTF_K_DATASEC] = {0, 12},   [BTF_K_DECL_TAG] = {4, 0},
	[BTF_K_ENUM64] = {0, 12},
	/* PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT, TYPE_TAG: nothing */
};

/* the name at off of the string section names[len] is name */
static int name_is(const char *names, uint64_t len, uint32_t off, const char *name, size_t nlen)
{
	return off < len && nlen < len - off && names[off + nlen] == '\0' &&
	       memcmp(names + off, name, nlen) == 0;
}

long btf_type_id(const void *data, size_t len, unsigned kind, const char *name, char *err,
                 size_t n)
{
	const unsigned char *d = data;
	struct st_btf_header h;
	if (len < sizeof h) {
		snprintf(err, n, "BTF cut short: %zu bytes, less than its header's %zu", len, sizeof h);
		return -1;
	}
	memcpy(&h, d, sizeof h);
	if (h.magic != ST_BTF_MAGIC || h.version != 1) {
		snprintf(err, n, "not BTF of this machine's byte order (magic 0x%04x, version %u)",
		         h.magic, h.version);
		return -1;
	}
	/* sections are relative to the header's end, whatever its length (u64: no wrap) */
	uint64_t types = (uint64_t)h.hdr_len + h.type_off, names = (uint64_t)h.hdr_len + h.str_off;
	if (h.hdr_len < sizeof h || h.hdr_len > len || types + h.type_len > len ||
	    names + h.str_len > len) {
		snprintf(err, n, "BTF header out of bounds: hdr_len %u, types %u+%u, names %u+%u in "
		         "%zu bytes", h.hdr_len, h.type_off, h.type_len, h.str_off, h.str_len, len);
		return -1;
	}
	const char *str = (const char *)d + names;
	size_t nlen = strlen(name);
	uint64_t at = 0;
	for (long id = 1; at < h.type_len; id++) {
		struct st_btf_type t;
		if (h.type_len - at < sizeof t) {
			snprintf(err, n, "BTF type %ld cut short at byte %llu of the type section", id,
			         (unsigned long long)at);
			return -1;
		}
		memcpy(&t, d + types + at, sizeof t);
		unsigned k = t.info >> 24 & 0x1f, vlen = t.info & 0xffff;
		if (k == 0 || k > BTF_K_MAX) {
			snprintf(err, n, "BTF type %ld is of kind %u, which this reader does not know "
			         "(a newer kernel's): its size is unknown, the types after it unreachable",
			         id, k);
			return -1;
		}
		uint64_t size = sizeof t + trailing[k].fixed + (uint64_t)trailing[k].each * vlen;
		if (h.type_len - at < size) {
			snprintf(err, n, "BTF type %ld (kind %u, vlen %u) runs past the type section",
			         id, k, vlen);
			return -1;
		}
		if (k == kind && name_is(str, h.str_len, t.name_off, name, nlen))
			return id;
		at += size;
	}
	return 0;
}

long btf_file_type_id(const char *path, unsigned kind, const char *name, char *err, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(err, n, "%s: %s", path, strerror(e));
		errno = e;
		return -1;
	}
	/* sysfs gives the blob's size.  Mapped (Linux 6.15 lets /sys/kernel/btf/vmlinux be
	 * mapped read-only): no copy.  Else read to the end, bounded: sysfs gives a page per
	 * read, some 1,300 reads for a 5 MB blob (tens of ms). */
	struct stat st;
	int sized = fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size < BTF_MAX_FILE;
	if (sized) {
		void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map != MAP_FAILED) {
			close(fd);
			long id = btf_type_id(map, (size_t)st.st_size, kind, name, err, n);
			munmap(map, (size_t)st.st_size);
			errno = 0;
			return id;
		}
	}
	size_t cap = sized ? (size_t)st.st_size + 1 : 8u << 20;
	size_t len = 0;
	unsigned char *buf = malloc(cap);
	long r = -1;
	int e = 0;
	while (buf) {
		if (len == cap) {
			unsigned char *more = cap >= (size_t)BTF_MAX_FILE ? NULL : realloc(buf, cap * 2);
			if (!more) {
				e = cap >= (size_t)BTF_MAX_FILE ? EFBIG : ENOMEM;
				break;
			}
			buf = more;
			cap *= 2;
		}
		ssize_t got = read(fd, buf + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			e = errno;
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	if (!buf)
		e = ENOMEM;
	if (e)
		snprintf(err, n, "%s: %s", path, strerror(e));
	else
		r = btf_type_id(buf, len, kind, name, err, n);
	free(buf);
	close(fd);
	errno = e;
	return r;
}
