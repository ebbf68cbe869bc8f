/* One growing array, written once: the tables of sockets, holders, pids and connections that
 * the host view and its users build from sock_diag and /proc grow by doubling. */
#ifndef SOCKTUNE_GROW_H
#define SOCKTUNE_GROW_H

#include <stddef.h>

/* The most elements any such table holds: past it, what is not taken is not counted. */
#define GROW_MAX ((size_t)1 << 26)

/* Room for element n of the array *arrayp (a pointer to the array's pointer) of *cap
 * elements of size bytes: when full it doubles (first elements at the start).  0 with room,
 * -1 when memory ran out or GROW_MAX was reached (the array and *cap unchanged). */
int grow(void *arrayp, size_t *cap, size_t n, size_t size, size_t first);

#endif
