/* A type's id in BTF (cli/host/btf.c): found in a blob made here, its header longer than
 * today's (hdr_len honored) and a type of every kind that carries data after its record
 * ahead of the one looked for; nothing read out of bounds or misread from a blob cut short,
 * bent or hostile; and the kernel's own /sys/kernel/btf/vmlinux, where there is one. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/btf.c"
#include "unit.h"

/* ---- a blob, written the way the kernel lays one out ---- */

static unsigned char blob[4096];
static unsigned char types[2048], names[512];
static size_t ntypes, nnames, blob_len;
static long last_id;
enum { HDR_LEN = 32 }; /* 24 today: 8 more bytes, as a later kernel's header may have */

static uint32_t name_of(const char *s)
{
	if (!s)
		return 0;
	uint32_t off = (uint32_t)nnames;
	memcpy(names + nnames, s, strlen(s) + 1);
	nnames += strlen(s) + 1;
	return off;
}

static void put32(uint32_t v)
{
	memcpy(types + ntypes, &v, 4);
	ntypes += 4;
}

/* a type's record; then its kind's data is put with put32, tail words of it */
static long type(const char *name, unsigned kind, unsigned vlen, uint32_t size_or_type)
{
	put32(name_of(name));
	put32(kind << 24 | vlen);
	put32(size_or_type);
	return ++last_id;
}

static void tail(unsigned words)
{
	while (words--)
		put32(7); /* (what the data says does not matter to the walk) */
}

static long want_func, want_struct;

static void build(void)
{
	ntypes = nnames = 0;
	last_id = 0;
	names[nnames++] = '\0'; /* offset 0: the empty name */
	type("int", BTF_K_INT, 0, 4), tail(1);
	type(NULL, BTF_K_PTR, 0, 1);
	type(NULL, BTF_K_ARRAY, 0, 0), tail(3);
	want_struct = type("bpf_iter_tcp", BTF_K_STRUCT, 2, 16), tail(2 * 3); /* same name, */
	type("u", BTF_K_UNION, 1, 8), tail(3);                                /* another kind */
	type("e", BTF_K_ENUM, 3, 4), tail(3 * 2);
	type("fw", BTF_K_FWD, 0, 0);
	type("t", BTF_K_TYPEDEF, 0, 1);
	type(NULL, BTF_K_VOLATILE, 0, 1);
	type(NULL, BTF_K_CONST, 0, 1);
	type(NULL, BTF_K_RESTRICT, 0, 1);
	type(NULL, BTF_K_FUNC_PROTO, 2, 1), tail(2 * 2);
	type("bpf_iter_tcpX", BTF_K_FUNC, 0, 12); /* a longer name that begins with it */
	type("bpf_iter", BTF_K_FUNC, 0, 12);      /* a shorter one */
	type("v", BTF_K_VAR, 0, 1), tail(1);
	type(".data", BTF_K_DATASEC, 2, 8), tail(2 * 3);
	type(NULL, BTF_K_FLOAT, 0, 8);
	type("tag", BTF_K_DECL_TAG, 0, 1), tail(1);
	type("tt", BTF_K_TYPE_TAG, 0, 1);
	type("e64", BTF_K_ENUM64, 2, 8), tail(2 * 3);
	want_func = type("bpf_iter_tcp", BTF_K_FUNC, 0, 12);
	type("after", BTF_K_STRUCT, 1, 4), tail(3);

	struct st_btf_header h = {.magic = ST_BTF_MAGIC, .version = 1, .hdr_len = HDR_LEN,
	                          .type_off = 0, .type_len = (uint32_t)ntypes,
	                          .str_off = (uint32_t)ntypes, .str_len = (uint32_t)nnames};
	memset(blob, 0, sizeof blob);
	memcpy(blob, &h, sizeof h);
	memcpy(blob + HDR_LEN, types, ntypes);
	memcpy(blob + HDR_LEN + ntypes, names, nnames);
	blob_len = HDR_LEN + ntypes + nnames;
}

/* the header's field at off set to v */
static void header_set(size_t off, uint32_t v)
{
	memcpy(blob + off, &v, 4);
}

/* btf_type_id on a copy of exactly len bytes of the blob (a read past it is a read past a
 * heap block: the sanitizer builds see it) */
static long find_in(size_t len, unsigned kind, const char *name, char *err, size_t n)
{
	unsigned char *copy = malloc(len ? len : 1);
	memcpy(copy, blob, len);
	long id = btf_type_id(copy, len, kind, name, err, n);
	free(copy);
	return id;
}

int main(void)
{
	char err[256];
	build();

	/* found by kind and name, the id counted over every kind before it */
	err[0] = '\0';
	long id = find_in(blob_len, BTF_K_FUNC, "bpf_iter_tcp", err, sizeof err);
	if (id != want_func)
		CASE_FAIL("FUNC bpf_iter_tcp: %ld, want %ld (%s)", id, want_func, err);
	id = find_in(blob_len, BTF_K_STRUCT, "bpf_iter_tcp", err, sizeof err);
	if (id != want_struct)
		CASE_FAIL("STRUCT bpf_iter_tcp: %ld, want %ld", id, want_struct);
	id = find_in(blob_len, BTF_K_STRUCT, "after", err, sizeof err);
	if (id != want_func + 1)
		CASE_FAIL("the last type: %ld, want %ld (%s)", id, want_func + 1, err);
	static const struct { unsigned kind; const char *name; } absent[] = {
		{BTF_K_FUNC, "bpf_iter_tc"}, {BTF_K_FUNC, "bpf_iter_tcpXY"}, {BTF_K_FUNC, ""},
		{BTF_K_ENUM, "bpf_iter_tcp"}, {BTF_K_FUNC, "no_such_function"},
	};
	for (size_t k = 0; k < sizeof absent / sizeof *absent; k++) {
		id = find_in(blob_len, absent[k].kind, absent[k].name, err, sizeof err);
		if (id != 0)
			CASE_FAIL("kind %u '%s': %ld, want 0 (none)", absent[k].kind, absent[k].name, id);
	}
	end_group("btf.find");

	/* every blob cut short is refused, never read past its end */
	for (size_t len = 0; len < blob_len; len++) {
		err[0] = '\0';
		id = find_in(len, BTF_K_FUNC, "bpf_iter_tcp", err, sizeof err);
		if (id != -1 || !err[0])
			CASE_FAIL("cut at %zu of %zu bytes: %ld (%s), want -1 with a reason", len,
			          blob_len, id, err);
	}
	end_group("btf.cut_short");

	/* hostile headers and types: each refused with a reason (-1), or the name not found (0) */
	static const struct { const char *what; long want; } bent[] = {
		{"hdr_len shorter than the header", -1},
		{"hdr_len past the end", -1},
		{"type_len past the end", -1},
		{"type_off wrapping 32 bits", -1},
		{"str_off past the end", -1},
		{"str_len wrapping 32 bits", -1},
		{"a kind this reader does not know (25)", -1},
		{"kind 0 (the kernel's invalid one)", -1},
		{"a struct whose members run past the section", -1},
		{"the wanted name's offset past the strings", 0},
		{"the other byte order", -1},
	};
	/* the header's fields: hdr_len at 4, type_off 8, type_len 12, str_off 16, str_len 20;
	 * type 1's info at HDR_LEN + 4; the wanted FUNC's record is the 12 bytes before the last
	 * type's record and data (12 + 12) */
	size_t info1 = HDR_LEN + 4;
	for (size_t k = 0; k < sizeof bent / sizeof *bent; k++) {
		build();
		switch (k) {
		case 0: header_set(4, 16); break;
		case 1: header_set(4, (uint32_t)blob_len + 1); break;
		case 2: header_set(12, (uint32_t)(blob_len - HDR_LEN + 1)); break;
		case 3: header_set(8, 0xfffffff0u); break;
		case 4: header_set(16, (uint32_t)(ntypes + nnames)); break;
		case 5: header_set(20, 0xffffffffu); break;
		case 6: header_set(info1, 25u << 24); break;
		case 7: header_set(info1, 0); break;
		case 8: header_set(info1, (uint32_t)BTF_K_STRUCT << 24 | 0xffff); break;
		case 9: header_set(HDR_LEN + ntypes - 24 - 12, (uint32_t)nnames + 100); break;
		case 10: { uint16_t m = 0x9feb; memcpy(blob, &m, 2); break; }
		}
		err[0] = '\0';
		id = find_in(blob_len, BTF_K_FUNC, "bpf_iter_tcp", err, sizeof err);
		if (id != bent[k].want || (id == -1 && !err[0]))
			CASE_FAIL("%s: %ld (%s), want %ld", bent[k].what, id, err, bent[k].want);
	}
	/* a last name that is not terminated inside the string section: not a match */
	build();
	blob_len -= 1; /* the final NUL ("after"'s) gone */
	header_set(20, (uint32_t)nnames - 1);
	id = find_in(blob_len, BTF_K_STRUCT, "after", err, sizeof err);
	if (id != 0)
		CASE_FAIL("a name running off the strings: %ld, want 0", id);
	end_group("btf.hostile");

	/* random bytes over the blob, many times: an answer every time, never a read outside
	 * (the sanitizer builds would say), an id only within the types there are */
	srand(33);
	for (int round = 0; round < 20000; round++) {
		build();
		for (int flips = 1 + rand() % 4; flips--;)
			blob[rand() % blob_len] = (unsigned char)rand();
		id = find_in(blob_len, BTF_K_FUNC, "bpf_iter_tcp", err, sizeof err);
		if (id < -1 || id > last_id) {
			CASE_FAIL("round %d: %ld, outside -1..%ld", round, id, last_id);
			break;
		}
	}
	end_group("btf.random_bytes");

	/* the running kernel's own, when it has one: the iterator's FUNC and the socket type its
	 * context points to; an unknown name is not there */
	if (access(BTF_VMLINUX, R_OK) == 0) {
		long func = btf_file_type_id(BTF_VMLINUX, BTF_K_FUNC, "bpf_iter_tcp", err, sizeof err);
		long sk = btf_file_type_id(BTF_VMLINUX, BTF_K_STRUCT, "sock_common", err, sizeof err);
		long none = btf_file_type_id(BTF_VMLINUX, BTF_K_FUNC, "socktune_no_such_fn", err,
		                             sizeof err);
		if (func <= 0 || sk <= 0 || none != 0 || func == sk)
			CASE_FAIL("%s: FUNC bpf_iter_tcp %ld, STRUCT sock_common %ld, an unknown name "
			          "%ld (%s)", BTF_VMLINUX, func, sk, none, err);
		else
			printf("  %s: FUNC bpf_iter_tcp is type %ld\n", BTF_VMLINUX, func);
	} else {
		printf("  (no readable %s here: the running kernel's file not looked at)\n",
		       BTF_VMLINUX);
	}
	err[0] = '\0';
	if (btf_file_type_id("/nonexistent/btf", BTF_K_FUNC, "x", err, sizeof err) != -1 ||
	    !strstr(err, "No such file"))
		CASE_FAIL("a missing file: %s", err);
	end_group("btf.file");
	return failures != 0;
}
