/* Shared by the libFuzzer targets (make fuzz): the input as a NUL-terminated string, and a
 * check that aborts (a crash libFuzzer reports) when a parser accepts a value outside the
 * range it promises. */
#ifndef ST_FUZZ_H
#define ST_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "socktune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX 4096

/* The input up to its first NUL, at most FUZZ_MAX bytes, in a buffer of exactly that size
 * (so ASan sees any read past the terminator). */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	if (size > FUZZ_MAX)
		size = FUZZ_MAX;
	char *s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

#define FUZZ_ASSERT(cond)                                                       \
	do {                                                                        \
		if (!(cond)) {                                                          \
			fprintf(stderr, "fuzz: %s:%d: %s\n", __FILE__, __LINE__, #cond);    \
			abort();                                                            \
		}                                                                       \
	} while (0)

/* An error message must be a terminated string inside its buffer. */
static inline void fuzz_check_err(const char *err, size_t n)
{
	FUZZ_ASSERT(memchr(err, '\0', n) != NULL);
}

#endif
