/* socktune [OPTIONS] PROGRAM (run.c): the library found and preloaded, the program's file
 * looked at, exec.  Internal to cli/. */
#ifndef SOCKTUNE_RUN_H
#define SOCKTUNE_RUN_H

#include "socktune.h"
#include "cli.h"

/* Where make install puts the library, seen from the command's directory (the Makefile sets
 * it from LIBDIR): run.c looks there after the command's own directory. */
#ifndef ST_LIBDIR_FROM_BIN
#define ST_LIBDIR_FROM_BIN "../lib"
#endif

int run_main(const struct cli *c, const struct st_policy *p, const char *argv0);
int print_library(const char *argv0); /* the library run_main would preload, on stdout */
/* 1, with the one line said, when the congestion control asked for is missing here. */
int congestion_missing(const struct cli *c, const struct st_policy *p);

#endif
