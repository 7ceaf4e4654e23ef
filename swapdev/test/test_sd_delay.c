/*
 * Tests of the delay core (core/sd_delay.c) on hand-made tables with hand-computed values:
 * parsing, rmem.c's fct-mean semantics, the fixed model, fct-sample's inverse CDF and its
 * sampling frequencies, the histogram buckets and the rmem trace line writer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/sd_delay.h"

#include "check.h"

static int parse(const char *s, int fmt, struct sd_line *l, int *field)
{
	return sd_parse_line(s, strlen(s), fmt, l, field);
}

/* The delay of a read of size_bytes arriving at 0, asked through the model's interface. */
static sd_u64 size_delay(struct sd_model *m, sd_u64 size_bytes)
{
	struct sd_delay_model dm = sd_model_interface(m);
	struct sd_req r = sd_req_bytes(SD_OP_READ, 0, size_bytes, 0);

	return sd_delay(&dm, &r);
}

static void test_parse(void)
{
	struct sd_line l;
	int f;

	/* The artifact's fcts_*.txt lines (Python 2 str(float)), truncated to whole ns. */
	CHECK_EQ(parse("4096 2.99671096504\n", SD_FMT_BYTES_US, &l, &f), SD_OK);
	CHECK_EQ(l.size, 4096);
	CHECK_EQ(l.fct_ns, 2996);
	CHECK_EQ(parse("12288 1024.0", SD_FMT_BYTES_US, &l, &f), SD_OK);
	CHECK_EQ(l.fct_ns, 1024000);
	CHECK_EQ(parse("  8192 \t 5 \r\n", SD_FMT_BYTES_US, &l, &f), SD_OK);
	CHECK_EQ(l.fct_ns, 5000);
	CHECK_EQ(parse("4096 1.9999", SD_FMT_BYTES_US, &l, &f), SD_OK);
	CHECK_EQ(l.fct_ns, 1999);
	CHECK_EQ(parse("4096 0.0005", SD_FMT_BYTES_US, &l, &f), SD_OK);
	CHECK_EQ(l.fct_ns, 0);
	CHECK_EQ(parse("4096 .5", SD_FMT_BYTES_US, &l, &f), SD_OK);
	CHECK_EQ(l.fct_ns, 500);
	CHECK_EQ(parse("\n", SD_FMT_BYTES_US, &l, &f), SD_OK);
	CHECK_EQ(l.empty, 1);
	/* Errors name the field. */
	CHECK_EQ(parse("4096", SD_FMT_BYTES_US, &l, &f), SD_ERR_FIELDS);
	CHECK_EQ(f, 2);
	CHECK_EQ(parse("4096 3 4", SD_FMT_BYTES_US, &l, &f), SD_ERR_FIELDS);
	CHECK_EQ(f, 3);
	CHECK_EQ(parse("4096 1e-05", SD_FMT_BYTES_US, &l, &f), SD_ERR_SYNTAX);
	CHECK_EQ(f, 2);
	CHECK_EQ(parse("-4096 3", SD_FMT_BYTES_US, &l, &f), SD_ERR_SYNTAX);
	CHECK_EQ(f, 1);
	CHECK_EQ(parse("4096 .", SD_FMT_BYTES_US, &l, &f), SD_ERR_SYNTAX);
	CHECK_EQ(parse("99999999999999999999 1", SD_FMT_BYTES_US, &l, &f), SD_ERR_RANGE);
	CHECK_EQ(parse("1 99999999999999999", SD_FMT_BYTES_US, &l, &f), SD_ERR_RANGE);
	/* /proc/rmem_cdf lines: "<pages> <fct_ns>", integers only. */
	CHECK_EQ(parse("3 500000", SD_FMT_PAGES_NS, &l, &f), SD_OK);
	CHECK_EQ(l.size, 3);
	CHECK_EQ(l.fct_ns, 500000);
	CHECK_EQ(parse("3 5.5", SD_FMT_PAGES_NS, &l, &f), SD_ERR_SYNTAX);
	/* Distribution lines: cum_prob in ppb. */
	CHECK_EQ(parse("4096 0.5 3.25", SD_FMT_DIST, &l, &f), SD_OK);
	CHECK_EQ(l.cum_ppb, 500000000);
	CHECK_EQ(l.fct_ns, 3250);
	CHECK_EQ(parse("4096 1 3", SD_FMT_DIST, &l, &f), SD_OK);
	CHECK_EQ(l.cum_ppb, 1000000000);
	CHECK_EQ(parse("4096 0.000000001 3", SD_FMT_DIST, &l, &f), SD_OK);
	CHECK_EQ(l.cum_ppb, 1);
	CHECK_EQ(parse("4096 1.5 3", SD_FMT_DIST, &l, &f), SD_ERR_RANGE);
	CHECK_EQ(f, 2);
	CHECK_EQ(parse("4096 0 3", SD_FMT_DIST, &l, &f), SD_ERR_RANGE);
	CHECK_EQ(parse("4096 0.5", SD_FMT_DIST, &l, &f), SD_ERR_FIELDS);
	CHECK_EQ(f, 3);
}

static void add(struct sd_model *m, int fmt, const char *s, int want)
{
	struct sd_line l;
	int f;

	CHECK_EQ(parse(s, fmt, &l, &f), SD_OK);
	CHECK_EQ(sd_model_add(m, fmt, &l), want);
}

static struct sd_model m; /* 32 KiB: static, as a kernel module would hold it */

static void test_fct_mean(void)
{
	/* rmem.c get_fct(): the entry at the largest page count <= the request's, clamped to
	 * FCT_MAX_SIZE-1 = 4095 pages, 0 below the smallest. */
	sd_model_init(&m, SD_MODEL_FCT_MEAN);
	CHECK_EQ(sd_model_finalize(&m), SD_ERR_INCOMPLETE);
	add(&m, SD_FMT_PAGES_NS, "1 3000", SD_OK);
	add(&m, SD_FMT_PAGES_NS, "4 5000", SD_OK);
	add(&m, SD_FMT_PAGES_NS, "64 20000", SD_OK);
	add(&m, SD_FMT_PAGES_NS, "0 77", SD_ERR_SKIPPED);    /* rmem.c: sz > 0 */
	add(&m, SD_FMT_PAGES_NS, "4096 77", SD_ERR_SKIPPED); /* rmem.c: sz < FCT_MAX_SIZE */
	CHECK_EQ(sd_model_finalize(&m), SD_OK);
	CHECK_EQ(size_delay(&m, 4096), 3000);
	CHECK_EQ(size_delay(&m, 2 * 4096), 3000);
	CHECK_EQ(size_delay(&m, 4 * 4096), 5000);
	CHECK_EQ(size_delay(&m, 5 * 4096), 5000);
	CHECK_EQ(size_delay(&m, 63 * 4096), 5000);
	CHECK_EQ(size_delay(&m, 64 * 4096), 20000);
	CHECK_EQ(size_delay(&m, 4095ull * 4096), 20000);
	CHECK_EQ(size_delay(&m, 100000ull * 4096), 20000); /* clamped to 4095 pages */
	CHECK_EQ(size_delay(&m, 4095), 0);                 /* 0 pages: no entry */
	CHECK_EQ(size_delay(&m, 0), 0);
	add(&m, SD_FMT_PAGES_NS, "4095 90000", SD_OK);
	CHECK_EQ(size_delay(&m, 100000ull * 4096), 90000);
	CHECK_EQ(size_delay(&m, 4094ull * 4096), 20000);

	/* "<bytes> <fct_us>" goes through convert_fct_to_ns.py: pages = bytes / 4096 (floor),
	 * ns = int(us * 1000); the last line for a page count wins (cdf_write overwrites). */
	sd_model_init(&m, SD_MODEL_FCT_MEAN);
	add(&m, SD_FMT_BYTES_US, "100 9.0", SD_ERR_SKIPPED); /* 0 pages */
	add(&m, SD_FMT_BYTES_US, "4096 2.5", SD_OK);
	add(&m, SD_FMT_BYTES_US, "6000 3.0", SD_OK); /* also page 1: overrides 2.5 */
	add(&m, SD_FMT_BYTES_US, "12288 4.0", SD_OK);
	add(&m, SD_FMT_BYTES_US, "16777216 99.0", SD_ERR_SKIPPED); /* 4096 pages */
	CHECK_EQ(size_delay(&m, 4096), 3000);
	CHECK_EQ(size_delay(&m, 8192), 3000);
	CHECK_EQ(size_delay(&m, 12288), 4000);
	CHECK_EQ(size_delay(&m, 1ull << 30), 4000);
	/* A table without a 1-page entry gives single-page swap-ins no delay, as rmem.c. */
	sd_model_init(&m, SD_MODEL_FCT_MEAN);
	add(&m, SD_FMT_PAGES_NS, "4 5000", SD_OK);
	CHECK_EQ(size_delay(&m, 4096), 0);
	CHECK_EQ(size_delay(&m, 4 * 4096), 5000);
}

static void test_fixed(void)
{
	sd_model_init(&m, SD_MODEL_FIXED);
	sd_model_set_fixed(&m, 5000, 40000000000ull);
	/* 5 us + 4096 B * 8 / 40 Gbps = 5000 + 819.2 -> 5819 (integer ns, truncated). */
	CHECK_EQ(size_delay(&m, 4096), 5819);
	CHECK_EQ(size_delay(&m, 0), 5000);
	sd_model_set_fixed(&m, 3000, 100000000000ull);
	/* 1 MiB at 100 Gbps: 8388608 bits / 100 = 83886.08 ns. */
	CHECK_EQ(size_delay(&m, 1 << 20), 3000 + 83886);
	/* 4 GiB at 40 Gbps in 1 GiB steps: 4 * floor(2^33 / 40) = 4 * 214748364. */
	sd_model_set_fixed(&m, 0, 40000000000ull);
	CHECK_EQ(size_delay(&m, 4ull << 30), 4ull * 214748364);
	sd_model_set_fixed(&m, 1234, 0); /* no bandwidth term */
	CHECK_EQ(size_delay(&m, 1 << 20), 1234);
	sd_model_init(&m, SD_MODEL_NONE);
	sd_model_set_fixed(&m, 1234, 0);
	CHECK_EQ(size_delay(&m, 4096), 0);
}

static void test_fct_sample(void)
{
	struct sd_fct_point pts[8];
	unsigned long long count[3] = {0, 0, 0}, sum = 0;
	int i;

	sd_model_init(&m, SD_MODEL_FCT_SAMPLE);
	sd_model_set_points(&m, pts, 4);
	CHECK_EQ(sd_model_finalize(&m), SD_ERR_INCOMPLETE);
	add(&m, SD_FMT_DIST, "4096 0.25 1", SD_OK);
	add(&m, SD_FMT_DIST, "4096 0.5 2", SD_OK);
	add(&m, SD_FMT_DIST, "4096 0.4 3", SD_ERR_ORDER);  /* cum must increase */
	add(&m, SD_FMT_DIST, "4096 0.6 1.5", SD_ERR_ORDER); /* fct must not decrease */
	add(&m, SD_FMT_DIST, "65536 1 9", SD_ERR_INCOMPLETE); /* 4096's CDF not at 1 yet */
	add(&m, SD_FMT_DIST, "4096 1 4", SD_OK);
	add(&m, SD_FMT_DIST, "2048 1 4", SD_ERR_ORDER);      /* sizes must not decrease */
	add(&m, SD_FMT_DIST, "65536 1 9", SD_OK);
	CHECK_EQ(sd_model_finalize(&m), SD_OK);
	/* Inverse CDF: first point with cum >= u. */
	CHECK_EQ(sd_fct_sample_ns(&m, 4096, 1), 1000);
	CHECK_EQ(sd_fct_sample_ns(&m, 4096, 250000000), 1000);
	CHECK_EQ(sd_fct_sample_ns(&m, 4096, 250000001), 2000);
	CHECK_EQ(sd_fct_sample_ns(&m, 4096, 500000000), 2000);
	CHECK_EQ(sd_fct_sample_ns(&m, 4096, 500000001), 4000);
	CHECK_EQ(sd_fct_sample_ns(&m, 4096, 1000000000), 4000);
	CHECK_EQ(sd_fct_sample_ns(&m, 65535, 1), 1000);        /* largest size <= request */
	CHECK_EQ(sd_fct_sample_ns(&m, 65536, 1), 9000);
	CHECK_EQ(sd_fct_sample_ns(&m, 1 << 30, 999999999), 9000);
	CHECK_EQ(sd_fct_sample_ns(&m, 4095, 1), 0);            /* below the smallest, as fct-mean */
	add(&m, SD_FMT_DIST, "131072 1 10", SD_ERR_FULL);
	/* Sampling: 1e6 draws give 1 us, 2 us, 4 us with p = .25, .25, .5 (binomial sd 4.3e-4,
	 * tolerance 0.004 = 9 sd) and a mean of 2750 ns (sd 1.2 ns; tolerance 10 ns). */
	sd_model_seed(&m, 42);
	for (i = 0; i < 1000000; i++) {
		sd_u64 d = size_delay(&m, 4096);

		sum += d;
		count[d == 1000 ? 0 : d == 2000 ? 1 : 2]++;
	}
	CHECK_EQ(count[0] + count[1] + count[2], 1000000);
	CHECK_EQ(llabs((long long)count[0] - 250000) <= 4000, 1);
	CHECK_EQ(llabs((long long)count[1] - 250000) <= 4000, 1);
	CHECK_EQ(llabs((long long)count[2] - 500000) <= 4000, 1);
	CHECK_EQ(llabs((long long)(sum / 1000) - 2750000) <= 10000, 1);
}

static void test_hist(void)
{
	static struct sd_hist h;
	const sd_u64 vals[] = {0, 1, 127, 128, 129, 1000, 10000, 20123, (1ull << 40) + 123,
			       ~0ull};
	unsigned i;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		sd_u32 idx = sd_hist_index(vals[i]);

		CHECK_EQ(idx < SD_HIST_BUCKETS, 1);
		CHECK_EQ(sd_hist_lower(idx) <= vals[i], 1);
		CHECK_EQ(vals[i] < sd_hist_upper(idx) || idx == SD_HIST_BUCKETS - 1, 1);
	}
	for (i = 0; i + 1 < SD_HIST_BUCKETS; i++) {
		CHECK_EQ(sd_hist_upper(i), sd_hist_lower(i + 1));
		if (i >= SD_HIST_EXACT)
			CHECK_EQ((sd_hist_upper(i) - sd_hist_lower(i)) * 64 <= sd_hist_lower(i), 1);
	}
	/* 10000 ns: 2^13 = 8192 <= v < 16384, width 128: bucket [9984, 10112). */
	CHECK_EQ(sd_hist_lower(sd_hist_index(10000)), 9984);
	CHECK_EQ(sd_hist_upper(sd_hist_index(10000)), 10112);
	sd_hist_init(&h);
	sd_hist_add(&h, 10000);
	sd_hist_add(&h, 10050);
	sd_hist_add(&h, 3);
	CHECK_EQ(h.n, 3);
	CHECK_EQ(h.sum_ns, 20053);
	CHECK_EQ(h.min_ns, 3);
	CHECK_EQ(h.max_ns, 10050);
	CHECK_EQ(h.counts[sd_hist_index(10000)], 2);
	CHECK_EQ(h.counts[3], 1);
}

static void test_rmem_format(void)
{
	char buf[128];
	sd_u64 n;

	n = sd_rmem_format(buf, sizeof(buf), 7, 1700000000000000ull, 1, 0, 1);
	CHECK_EQ(n, strlen("7 1700000000000000 -0 1\n"));
	CHECK_EQ(memcmp(buf, "7 1700000000000000 -0 1\n", n), 0);
	n = sd_rmem_format(buf, sizeof(buf), 8, 5, 0, 123, 8);
	CHECK_EQ(memcmp(buf, "8 5 123 8\n", n), 0);
	CHECK_EQ(n, 10);
	n = sd_rmem_format(buf, sizeof(buf), ~0ull, ~0ull, 1, ~0ull, ~0ull);
	CHECK_EQ(memcmp(buf, "18446744073709551615 18446744073709551615 -18446744073709551615 "
			     "18446744073709551615\n", n), 0);
	CHECK_EQ(sd_rmem_format(buf, 10, 1, 1, 1, 1, 1), 0);
}

/*
 * The link model on hand-derived timelines: latency 1000 ns, 8.192 Gbit/s, so a 4 KiB
 * transfer holds the link 32768 bit / 8.192 bit/ns = 4000 ns.
 *   A (4 KiB at 0):       link free, transfer 0..4000, done 5000: delay 5000.
 *   B (4 KiB at 1000):    waits for A, transfer 4000..8000, done 9000: delay 8000.
 *   C (8 KiB at 2000):    waits for B, transfer 8000..16000, done 17000: delay 15000.
 *   D (4 KiB at 30000):   link idle since 16000, transfer 30000..34000: delay 5000.
 *   E (0 B at 30500):     waits for D (34000), no transfer: done 35000, delay 4500.
 */
static void test_link(void)
{
	struct sd_model m;
	struct sd_delay_model dm;
	static const sd_u64 arrive[] = {0, 1000, 2000, 30000, 30500};
	static const sd_u64 bytes[] = {4096, 4096, 8192, 4096, 0};
	static const sd_u64 want[] = {5000, 8000, 15000, 5000, 4500};
	unsigned i;

	sd_model_init(&m, SD_MODEL_LINK);
	sd_model_set_fixed(&m, 1000, 8192000000ull);
	dm = sd_model_interface(&m);
	for (i = 0; i < 5; i++) {
		struct sd_req r = sd_req_bytes(i % 2 ? SD_OP_WRITE : SD_OP_READ, 4096 * i, bytes[i],
					       arrive[i]);

		CHECK_EQ(sd_delay(&dm, &r), want[i]);
	}
	CHECK_EQ(m.link_free_ns, 34000);
	/* Without a bandwidth the link never holds a request: the fixed latency alone. */
	sd_model_init(&m, SD_MODEL_LINK);
	sd_model_set_fixed(&m, 700, 0);
	CHECK_EQ(size_delay(&m, 1 << 20), 700);
	CHECK_EQ(size_delay(&m, 1 << 20), 700);
}

/* The request constructors and the name lookup. */
static void test_request_and_names(void)
{
	struct sd_req r = sd_req_bytes(SD_OP_WRITE, 3 * 4096 + 512, 4096, 7);

	/* bytes 12800..16895 touch pages 3 and 4 */
	CHECK_EQ(r.first_page, 3);
	CHECK_EQ(r.npages, 2);
	CHECK_EQ(r.size_bytes, 4096);
	CHECK_EQ(r.now_ns, 7);
	r = sd_req_pages(SD_OP_READ, 10, 16, 9);
	CHECK_EQ(r.size_bytes, 65536);
	CHECK_EQ(r.op, SD_OP_READ);
	CHECK_EQ(sd_model_kind_of("fct-sample", 10), SD_MODEL_FCT_SAMPLE);
	CHECK_EQ(sd_model_kind_of("fct-samplex", 10), SD_MODEL_FCT_SAMPLE); /* len-bounded */
	CHECK_EQ(sd_model_kind_of("fct", 3), (sd_u64)-1);
	CHECK_EQ(sd_model_kind_of("link", 4), SD_MODEL_LINK);
	CHECK_EQ(sd_model_kind_of("", 0), (sd_u64)-1);
}

int main(void)
{
	test_link();
	test_request_and_names();
	test_parse();
	test_fct_mean();
	test_fixed();
	test_fct_sample();
	test_hist();
	test_rmem_format();
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("all delay-core checks passed\n");
	return 0;
}
