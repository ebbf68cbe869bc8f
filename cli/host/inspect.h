/* What LD_PRELOAD can reach (inspect.c): a look at the file the program would be (its ELF
 * headers and sections, a #! interpreter, setuid/setgid bits, file capabilities), before it
 * runs: the wrapper's warning, doctor's start commands and their findings.  Internal to
 * cli/. */
#ifndef SOCKTUNE_INSPECT_H
#define SOCKTUNE_INSPECT_H

/* What inspect_program finds in the file: each a reason LD_PRELOAD does not reach it. */
enum { P_STATIC = 1, P_GO = 2, P_SETID = 4, P_CAPS = 8 };
int resolve_program(const char *name, char *out);
int path_lookup(const char *name, const char *path, char *out); /* path: a PATH value */
unsigned inspect_program(const char *path, char *judged, int depth);

#endif
