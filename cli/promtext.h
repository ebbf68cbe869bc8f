/* The Prometheus text exposition format (version 0.0.4), written once for stats and watch:
 * a family's HELP and TYPE lines, and label values escaped as the format says.  The names
 * are the callers' (their family tables; labels from record.h's key table). */
#ifndef SOCKTUNE_PROMTEXT_H
#define SOCKTUNE_PROMTEXT_H

#include <stdio.h>

/* One metric family: key and scope are the caller's enums (which value, which labels). */
struct prom_family {
	int key;
	int scope;
	const char *name, *type, *help;
};

/* The families both stats and watch write, each with one name, type and help: an operator
 * may give both outputs to node_exporter's textfile directory, and its collector drops a
 * family whose help differs between two files (seen: watch's socktune_listener_backlog
 * gone, "has help ... but should have ..."); the label sets may differ. */
#define PROM_LISTENER_BACKLOG "socktune_listener_backlog", "gauge", \
	"the listen backlog in force, read back from the kernel: the accept queue's room " \
	"(after the net.core.somaxconn cut)"
#define PROM_LISTENER_QUEUE_LENGTH "socktune_listener_queue_length", "gauge", \
	"connections waiting in the accept queue now, read from the kernel (sock_diag; " \
	"socktune watch: summed over the sockets of the address and port); " \
	"socktune stats: the latest sample when the kernel cannot be read " \
	"(socktune_listener_queue_length_from_kernel 0)"
#define PROM_LISTENER_RCVBUF "socktune_listener_receive_buffer_bytes", "gauge", \
	"SO_RCVBUF of the listener as the kernel reports it, twice the request (accepted " \
	"connections inherit it); socktune stats: absent when the policy does not set it"
#define PROM_LISTENER_SNDBUF "socktune_listener_send_buffer_bytes", "gauge", \
	"SO_SNDBUF of the listener as the kernel reports it (accepted connections inherit " \
	"it); socktune stats: absent when the policy does not set it"

/* "# HELP name help" and "# TYPE name type" */
void prom_head(FILE *out, const struct prom_family *f);

/* name="value", with a comma before it unless first: backslash, double quote and newline
 * escaped; a byte that starts no valid UTF-8 character written as U+FFFD (the format is
 * UTF-8). */
void prom_label(FILE *out, int first, const char *name, const char *value);

#endif
