/* A named type's id in the kernel's own type information (BTF): what a tracing program is
 * loaded against (its attach_btf_id: the FUNC bpf_iter_tcp for the TCP socket iterator).
 * The kernel's BTF is /sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF).  Internal to cli/. */
#ifndef SOCKTUNE_BTF_H
#define SOCKTUNE_BTF_H

#include <stddef.h>

#define BTF_VMLINUX "/sys/kernel/btf/vmlinux"

/* The kinds of BTF (linux/btf.h BTF_KIND_*), numbered as the kernel numbers them; each
 * type's record is followed by data of a size its kind decides (btf.c) */
enum { BTF_K_INT = 1, BTF_K_PTR, BTF_K_ARRAY, BTF_K_STRUCT, BTF_K_UNION, BTF_K_ENUM,
       BTF_K_FWD, BTF_K_TYPEDEF, BTF_K_VOLATILE, BTF_K_CONST, BTF_K_RESTRICT, BTF_K_FUNC,
       BTF_K_FUNC_PROTO, BTF_K_VAR, BTF_K_DATASEC, BTF_K_FLOAT, BTF_K_DECL_TAG,
       BTF_K_TYPE_TAG, BTF_K_ENUM64, BTF_K_MAX = BTF_K_ENUM64 };

/* The id of the first type of kind named name in the BTF data[len]: 1 or more; 0 when there
 * is none; -1 when data is not BTF this reader can walk to its end (cut short, a length or
 * offset out of bounds, another byte order, a kind it does not know), err saying what and
 * where.  Every read is checked against len: any bytes are safe to give it. */
long btf_type_id(const void *data, size_t len, unsigned kind, const char *name, char *err,
                 size_t n);

/* The same in the file at path (BTF_VMLINUX), read whole (at most BTF_MAX_FILE bytes): -1
 * also when it cannot be read, err saying why (errno kept: ENOENT when there is no file). */
#define BTF_MAX_FILE (256L << 20)
long btf_file_type_id(const char *path, unsigned kind, const char *name, char *err, size_t n);

#endif
