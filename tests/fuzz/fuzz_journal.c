/* journal_field (cli/journal.c), the reader of the journal's lines that socktune revert
 * trusts: any bytes as a line never read past it and always give a terminated value that
 * fits; and a value the record layer wrote (printable ASCII, quotes and backslashes escaped
 * by the writer) is read back as it was, among other keys.  journal_read on any bytes after
 * a journal's first line (a memfd): a change it does not call unusable has every field
 * revert checks (pid, its start, fd, inode, before, after, change, option). */
#include <sys/mman.h>
#include <unistd.h>

#include "journal.h"
#include "record.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = fuzz_str(data, size);
	static const char *const keys[] = {"event", "change", "pid", "before", "addr", ""};
	char out[64];
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
		memset(out, 'x', sizeof out);
		if (journal_field(in, keys[k], out, sizeof out) && !memchr(out, '\0', sizeof out))
			abort();
	}
	int ascii = 1;
	for (const char *c = in; *c; c++)
		ascii &= *c >= 0x20 && *c < 0x7f;
	if (ascii && strlen(in) < 200) {
		struct rec *r = rec_new();
		rec_str(r, K_EVENT, "apply");
		rec_str(r, K_ADDR, in);
		rec_int(r, K_PID, 7);
		char *line = NULL;
		size_t n = 0;
		FILE *f = open_memstream(&line, &n);
		if (!f)
			abort();
		rec_write_json_line(f, r);
		fclose(f);
		rec_free(r);
		char got[256], pid[16];
		if (!journal_field(line, "addr", got, sizeof got) || strcmp(got, in) != 0 ||
		    !journal_field(line, "pid", pid, sizeof pid) || strcmp(pid, "7") != 0)
			abort();
		free(line);
	}
	free(in);
	int fd = memfd_create("journal", 0);
	static const char head[] = "{\"schema\": 1, \"event\": \"journal\"}\n";
	if (fd < 0 || write(fd, head, sizeof head - 1) != (ssize_t)(sizeof head - 1) ||
	    (size && write(fd, data, size) != (ssize_t)size))
		abort();
	struct journal_change *c;
	char err[256];
	int n = journal_read(fd, &c, err, sizeof err);
	for (int k = 0; k < n; k++)
		if (!c[k].unusable && (c[k].pid <= 0 || !c[k].start || c[k].fd < 0 || !c[k].inode ||
		                       c[k].before < 0 || c[k].after < 0 || !c[k].change[0] ||
		                       !c[k].option[0]))
			abort();
	if (n >= 0)
		free(c);
	close(fd);
	return 0;
}
