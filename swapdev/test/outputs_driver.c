/*
 * sd-outputs-driver: the device's two output files, SWAPDEV_TRACE (the rmem trace, "%p" =
 * pid) and SWAPDEV_HIST (the delay histograms), written by sd_user.c with no device around
 * it (no root, no userfaultfd), for tests/test_swapdev_outputs.py.
 *
 * It reads its standard input to the end first, so a caller can create targets named by
 * the driver's pid ("%p") before the outputs are opened; then sd_run_init from the
 * environment (SWAPDEV_MODEL=fixed SWAPDEV_LATENCY_NS=1000 gives the test its expected
 * histogram), serves and logs the three requests below as the FUSE backend does (each a
 * batch of its own), and sd_run_finish. Exit status: 0, 1 if sd_run_init failed, 2 if
 * sd_run_finish failed (each with its message on stderr).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "../src/sd_user.h"

/* The requests and the trace lines they give ("<batch> <time_us> <±page> <npages>"). */
static const struct {
	int op;
	uint64_t pos_bytes, size_bytes;
} requests[] = {
	{SD_OP_READ, 0, 4096},      /* "0 T -0 1": page 0 */
	{SD_OP_WRITE, 8192, 8192},  /* "1 T 2 2": pages 2-3 */
	{SD_OP_READ, 40960, 12288}, /* "2 T -10 3": pages 10-12 */
};

int main(void)
{
	struct sd_run *run = malloc(sizeof(*run));
	char buf[256];
	size_t i;

	while (fread(buf, 1, sizeof(buf), stdin) > 0)
		;
	if (!run || sd_run_init(run))
		return 1;
	for (i = 0; i < sizeof(requests) / sizeof(requests[0]); i++) {
		struct sd_req r = sd_req_bytes(requests[i].op, requests[i].pos_bytes,
					       requests[i].size_bytes, sd_now_ns());

		sd_run_serve(run, &r);
		sd_run_log_request(run, &r);
	}
	return sd_run_finish(run, "outputs-driver") ? 2 : 0;
}
