/*
 * sd-tool: the delay core from the command line, for tests and for checking a table.
 *   sd-tool delay SIZE_BYTES...   print "<size_bytes> <delay_ns>" per size under the model
 *                                 configured by SWAPDEV_* (src/sd_user.h); each a read
 *                                 arriving at time 0
 *   sd-tool requests R|W POS_BYTES SIZE_BYTES NOW_NS ...   print "<delay_ns> <finish_ns>"
 *                                 per request (4 args each), in the order given
 *   sd-tool trace BATCH TIME_US R|W PAGE NPAGES ...   print rmem trace lines (5 args each)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/sd_user.h"

int main(int argc, char **argv)
{
	int i;

	if (argc >= 2 && !strcmp(argv[1], "delay")) {
		struct sd_run *r = malloc(sizeof(*r));

		if (!r || sd_run_init(r))
			return 2;
		for (i = 2; i < argc; i++) {
			unsigned long long size = strtoull(argv[i], NULL, 10);

			struct sd_req q = sd_req_bytes(SD_OP_READ, 0, size, 0);

			printf("%llu %llu\n", size, (unsigned long long)sd_delay(&r->delay, &q));
		}
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "requests") && (argc - 2) % 4 == 0) {
		struct sd_run *r = malloc(sizeof(*r));

		if (!r || sd_run_init(r))
			return 2;
		for (i = 2; i < argc; i += 4) {
			struct sd_req q = sd_req_bytes(argv[i][0] == 'W' ? SD_OP_WRITE : SD_OP_READ,
						       strtoull(argv[i + 1], NULL, 10),
						       strtoull(argv[i + 2], NULL, 10),
						       strtoull(argv[i + 3], NULL, 10));
			sd_u64 ns = sd_delay(&r->delay, &q);

			printf("%llu %llu\n", (unsigned long long)ns,
			       (unsigned long long)(q.now_ns + ns));
		}
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "trace") && (argc - 2) % 5 == 0) {
		for (i = 2; i < argc; i += 5) {
			char buf[128];
			sd_u64 n = sd_rmem_format(buf, sizeof(buf), strtoull(argv[i], NULL, 10),
						  strtoull(argv[i + 1], NULL, 10),
						  argv[i + 2][0] == 'R', strtoull(argv[i + 3], NULL, 10),
						  strtoull(argv[i + 4], NULL, 10));
			fwrite(buf, 1, n, stdout);
		}
		return 0;
	}
	fprintf(stderr, "usage: sd-tool delay SIZE_BYTES... | sd-tool requests (R|W POS_BYTES "
			"SIZE_BYTES NOW_NS)... | sd-tool trace (BATCH TIME_US R|W PAGE NPAGES)...\n");
	return 2;
}
