/* grow.h: doubling a table. */
#include <stdlib.h>
#include <string.h>

#include "host/grow.h"

int grow(void *arrayp, size_t *cap, size_t n, size_t size, size_t first)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? 2 * *cap : first;
	if (c > GROW_MAX)
		return -1;
	void *old, *v;
	memcpy(&old, arrayp, sizeof old); /* the caller's pointer is of its own element type */
	v = realloc(old, c * size);
	if (!v)
		return -1;
	memcpy(arrayp, &v, sizeof v);
	*cap = c;
	return 0;
}
