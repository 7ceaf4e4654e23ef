/* swapdev delay core; see sd_delay.h for the models and their sources. */
#include "sd_delay.h"

#define SD_U64_MAX (~(sd_u64)0)

void sd_model_init(struct sd_model *m, int kind)
{
	sd_u32 i;

	m->kind = kind;
	m->latency_ns = 0;
	m->bandwidth_bps = 0;
	for (i = 0; i < SD_FCT_MAX_PAGES; i++)
		m->fct_by_pages[i] = 0;
	m->mean_entries = 0;
	m->points = 0;
	m->npoints = 0;
	m->cap_points = 0;
	m->rng_state = 0x853c49e6748fea9bull;
	m->link_free_ns = 0;
}

void sd_model_set_fixed(struct sd_model *m, sd_u64 latency_ns, sd_u64 bandwidth_bps)
{
	m->latency_ns = latency_ns;
	m->bandwidth_bps = bandwidth_bps;
}

void sd_model_set_points(struct sd_model *m, struct sd_fct_point *storage, sd_u32 cap)
{
	m->points = storage;
	m->cap_points = cap;
	m->npoints = 0;
}

void sd_model_seed(struct sd_model *m, sd_u64 seed)
{
	m->rng_state = seed;
}

/* splitmix64 (Steele, Lea, Flood, OOPSLA'14): one 64-bit state, full period. */
sd_u64 sd_rng_next(sd_u64 *state)
{
	sd_u64 z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* Unsigned decimal integer; no sign. */
static int parse_uint(const char *s, sd_u64 n, sd_u64 *out)
{
	sd_u64 v = 0, i;

	if (n == 0)
		return SD_ERR_SYNTAX;
	for (i = 0; i < n; i++) {
		sd_u64 d;

		if (s[i] < '0' || s[i] > '9')
			return SD_ERR_SYNTAX;
		d = (sd_u64)(s[i] - '0');
		if (v > (SD_U64_MAX - d) / 10)
			return SD_ERR_RANGE;
		v = v * 10 + d;
	}
	*out = v;
	return SD_OK;
}

/*
 * Non-negative decimal "123", "123.", "123.456", ".5" times 10^scale_digits, truncated:
 * floor(x * 10^k) is the integer part followed by the first k fraction digits, so the
 * result is exact (no binary floating point in between).
 */
static int parse_fixed(const char *s, sd_u64 n, unsigned scale_digits, sd_u64 *out)
{
	sd_u64 ip = 0, i = 0, scale = 1, v;
	unsigned k;
	int digits = 0;

	for (k = 0; k < scale_digits; k++)
		scale *= 10;
	while (i < n && s[i] >= '0' && s[i] <= '9') {
		sd_u64 d = (sd_u64)(s[i] - '0');

		if (ip > (SD_U64_MAX - d) / 10)
			return SD_ERR_RANGE;
		ip = ip * 10 + d;
		i++;
		digits++;
	}
	if (ip > SD_U64_MAX / scale)
		return SD_ERR_RANGE;
	v = ip * scale;
	if (i < n && s[i] == '.') {
		sd_u64 place = scale, frac = 0;

		i++;
		while (i < n && s[i] >= '0' && s[i] <= '9') {
			place /= 10; /* digits past 10^-scale_digits add 0: truncation */
			frac += (sd_u64)(s[i] - '0') * place;
			i++;
			digits++;
		}
		if (v > SD_U64_MAX - frac)
			return SD_ERR_RANGE;
		v += frac;
	}
	if (i != n || digits == 0)
		return SD_ERR_SYNTAX; /* includes exponents ("1e-05"), signs, junk */
	*out = v;
	return SD_OK;
}

int sd_parse_line(const char *line, sd_u64 len, int fmt, struct sd_line *out, int *field)
{
	const char *start[3];
	sd_u64 flen[3];
	sd_u64 i = 0;
	int nf = 0, want, rc;
	sd_u64 prob;

	*field = 0;
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	out->size = 0;
	out->fct_ns = 0;
	out->cum_ppb = 0;
	out->empty = 0;
	while (i < len) {
		while (i < len && is_space(line[i]))
			i++;
		if (i >= len)
			break;
		if (nf == 3) {
			*field = 4;
			return SD_ERR_FIELDS;
		}
		start[nf] = line + i;
		while (i < len && !is_space(line[i]))
			i++;
		flen[nf] = (sd_u64)(line + i - start[nf]);
		nf++;
	}
	if (nf == 0) {
		out->empty = 1;
		return SD_OK;
	}
	want = fmt == SD_FMT_DIST ? 3 : 2;
	if (nf != want) {
		*field = nf < want ? nf + 1 : want + 1;
		return SD_ERR_FIELDS;
	}
	*field = 1;
	rc = parse_uint(start[0], flen[0], &out->size);
	if (rc)
		return rc;
	if (fmt == SD_FMT_DIST) {
		*field = 2;
		rc = parse_fixed(start[1], flen[1], 9, &prob);
		if (rc)
			return rc;
		if (prob == 0 || prob > SD_PPB)
			return SD_ERR_RANGE;
		out->cum_ppb = (sd_u32)prob;
		*field = 3;
		return parse_fixed(start[2], flen[2], 3, &out->fct_ns);
	}
	*field = 2;
	if (fmt == SD_FMT_PAGES_NS)
		return parse_uint(start[1], flen[1], &out->fct_ns);
	return parse_fixed(start[1], flen[1], 3, &out->fct_ns);
}

int sd_model_add(struct sd_model *m, int fmt, const struct sd_line *l)
{
	sd_u64 pages;

	if (l->empty)
		return SD_OK;
	if (fmt == SD_FMT_DIST) {
		struct sd_fct_point *prev;

		if (l->size == 0)
			return SD_ERR_RANGE;
		if (m->npoints >= m->cap_points)
			return SD_ERR_FULL;
		prev = m->npoints ? &m->points[m->npoints - 1] : 0;
		if (prev) {
			if (l->size < prev->size_bytes)
				return SD_ERR_ORDER;
			if (l->size == prev->size_bytes &&
			    (l->cum_ppb <= prev->cum_ppb || l->fct_ns < prev->fct_ns))
				return SD_ERR_ORDER;
			if (l->size > prev->size_bytes && prev->cum_ppb != SD_PPB)
				return SD_ERR_INCOMPLETE;
		}
		m->points[m->npoints].size_bytes = l->size;
		m->points[m->npoints].fct_ns = l->fct_ns;
		m->points[m->npoints].cum_ppb = l->cum_ppb;
		m->npoints++;
		return SD_OK;
	}
	/* rmem/convert_fct_to_ns.py: pages = int(bytes) / 4096 (Python 2 floor division). */
	pages = fmt == SD_FMT_BYTES_US ? l->size / SD_PAGE_BYTES : l->size;
	/* rmem.c cdf_write: "if(sz < FCT_MAX_SIZE && sz > 0)" else "Wrong size", ignored. */
	if (pages == 0 || pages >= SD_FCT_MAX_PAGES)
		return SD_ERR_SKIPPED;
	if (m->fct_by_pages[pages] == 0 && l->fct_ns != 0)
		m->mean_entries++;
	else if (m->fct_by_pages[pages] != 0 && l->fct_ns == 0)
		m->mean_entries--;
	m->fct_by_pages[pages] = l->fct_ns; /* a later line for the same page count wins */
	return SD_OK;
}

int sd_model_finalize(const struct sd_model *m)
{
	if (m->kind == SD_MODEL_FCT_MEAN)
		return m->mean_entries ? SD_OK : SD_ERR_INCOMPLETE;
	if (m->kind == SD_MODEL_FCT_SAMPLE) {
		if (m->npoints == 0 || m->points[m->npoints - 1].cum_ppb != SD_PPB)
			return SD_ERR_INCOMPLETE;
	}
	return SD_OK;
}

sd_u64 sd_fixed_ns(const struct sd_model *m, sd_u64 size_bytes)
{
	sd_u64 ns = m->latency_ns;
	/* Split so that bits * 1e9 never overflows: at most 2^30 bytes per step. */
	const sd_u64 step = 1ull << 30;

	if (m->bandwidth_bps == 0)
		return ns;
	while (size_bytes > step) {
		ns += (step * 8ull * 1000000000ull) / m->bandwidth_bps;
		size_bytes -= step;
	}
	return ns + (size_bytes * 8ull * 1000000000ull) / m->bandwidth_bps;
}

sd_u64 sd_fct_mean_ns(const struct sd_model *m, sd_u64 size_bytes)
{
	/* rmem.c get_fct(): start at min(pages, FCT_MAX_SIZE-1), walk down to the first set. */
	sd_u64 pages = size_bytes / SD_PAGE_BYTES;
	sd_u64 i = pages < SD_FCT_MAX_PAGES ? pages : SD_FCT_MAX_PAGES - 1;

	for (;; i--) {
		if (m->fct_by_pages[i])
			return m->fct_by_pages[i];
		if (i == 0)
			return 0;
	}
}

sd_u64 sd_fct_sample_ns(const struct sd_model *m, sd_u64 size_bytes, sd_u32 u_ppb)
{
	sd_u32 lo = 0, hi = m->npoints, first;
	sd_u64 size;

	/* Last point with size_bytes <= size_bytes: binary search for the upper bound. */
	while (lo < hi) {
		sd_u32 mid = lo + (hi - lo) / 2;

		if (m->points[mid].size_bytes <= size_bytes)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 0; /* below the smallest listed size, as fct-mean */
	size = m->points[lo - 1].size_bytes;
	/* First point of that size. */
	hi = lo;
	lo = 0;
	while (lo < hi) {
		sd_u32 mid = lo + (hi - lo) / 2;

		if (m->points[mid].size_bytes < size)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	/* Inverse CDF: the first point whose cumulative probability reaches u. */
	while (m->points[first].cum_ppb < u_ppb && m->points[first].cum_ppb != SD_PPB)
		first++;
	return m->points[first].fct_ns;
}

sd_u64 sd_link_ns(struct sd_model *m, sd_u64 size_bytes, sd_u64 now_ns)
{
	sd_u64 start = m->link_free_ns > now_ns ? m->link_free_ns : now_ns;
	sd_u64 transfer_ns = 0;

	if (m->bandwidth_bps) {
		struct sd_model wire = *m;

		wire.latency_ns = 0; /* the fixed model's transmission term alone */
		transfer_ns = sd_fixed_ns(&wire, size_bytes);
	}
	m->link_free_ns = start + transfer_ns;
	return m->link_free_ns + m->latency_ns - now_ns;
}

/* The operations of each model of sd_models.def: delay_<ENUM_SUFFIX>, state a struct sd_model. */
static sd_u64 delay_NONE(void *st, const struct sd_req *req)
{
	(void)st;
	(void)req;
	return 0;
}

static sd_u64 delay_FIXED(void *st, const struct sd_req *req)
{
	return sd_fixed_ns(st, req->size_bytes);
}

static sd_u64 delay_FCT_MEAN(void *st, const struct sd_req *req)
{
	return sd_fct_mean_ns(st, req->size_bytes);
}

static sd_u64 delay_FCT_SAMPLE(void *st, const struct sd_req *req)
{
	struct sd_model *m = st;
	/* u uniform on 1..1e9 from the top 32 bits (multiply-shift, no modulo bias). */
	sd_u64 r = sd_rng_next(&m->rng_state) >> 32;

	return sd_fct_sample_ns(m, req->size_bytes, (sd_u32)((r * SD_PPB) >> 32) + 1);
}

static sd_u64 delay_LINK(void *st, const struct sd_req *req)
{
	return sd_link_ns(st, req->size_bytes, req->now_ns);
}

const struct sd_model_ops sd_model_table[SD_MODEL_COUNT] = {
#define SD_MODEL(e, n, p, what) [SD_MODEL_##e] = {n, SD_PARAMS_##p, delay_##e},
#include "sd_models.def"
#undef SD_MODEL
};

int sd_model_kind_of(const char *name, sd_u64 len)
{
	int k;

	for (k = 0; k < SD_MODEL_COUNT; k++) {
		const char *t = sd_model_table[k].name;
		sd_u64 i = 0;

		while (i < len && t[i] && t[i] == name[i])
			i++;
		if (i == len && !t[i])
			return k;
	}
	return -1;
}

struct sd_delay_model sd_model_interface(struct sd_model *m)
{
	struct sd_delay_model dm = {&sd_model_table[m->kind], m};

	return dm;
}

sd_u64 sd_model_delay(struct sd_model *m, const struct sd_req *req)
{
	if (m->kind < 0 || m->kind >= SD_MODEL_COUNT)
		return 0;
	return sd_model_table[m->kind].delay_ns(m, req);
}

struct sd_req sd_req_bytes(int op, sd_u64 pos_bytes, sd_u64 size_bytes, sd_u64 now_ns)
{
	struct sd_req r;

	r.op = op;
	r.first_page = pos_bytes / SD_PAGE_BYTES;
	r.npages = (pos_bytes + size_bytes + SD_PAGE_BYTES - 1) / SD_PAGE_BYTES - r.first_page;
	r.size_bytes = size_bytes;
	r.now_ns = now_ns;
	return r;
}

struct sd_req sd_req_pages(int op, sd_u64 first_page, sd_u64 npages, sd_u64 now_ns)
{
	struct sd_req r;

	r.op = op;
	r.first_page = first_page;
	r.npages = npages;
	r.size_bytes = npages * SD_PAGE_BYTES;
	r.now_ns = now_ns;
	return r;
}

void sd_hist_init(struct sd_hist *h)
{
	sd_u32 i;

	for (i = 0; i < SD_HIST_BUCKETS; i++)
		h->counts[i] = 0;
	h->n = 0;
	h->sum_ns = 0;
	h->min_ns = SD_U64_MAX;
	h->max_ns = 0;
}

static unsigned log2_floor(sd_u64 v)
{
	unsigned e = 0;

	while (v >>= 1)
		e++;
	return e;
}

sd_u32 sd_hist_index(sd_u64 ns)
{
	unsigned e;

	if (ns < SD_HIST_EXACT)
		return (sd_u32)ns;
	e = log2_floor(ns); /* >= 7 */
	return SD_HIST_EXACT + (e - 7) * 64 + (sd_u32)((ns >> (e - SD_HIST_SUB_BITS)) & 63);
}

sd_u64 sd_hist_lower(sd_u32 idx)
{
	sd_u32 e, sub;

	if (idx < SD_HIST_EXACT)
		return idx;
	e = (idx - SD_HIST_EXACT) / 64 + 7;
	sub = (idx - SD_HIST_EXACT) % 64;
	return (64ull + sub) << (e - SD_HIST_SUB_BITS);
}

sd_u64 sd_hist_upper(sd_u32 idx)
{
	sd_u32 e;

	if (idx < SD_HIST_EXACT)
		return (sd_u64)idx + 1;
	e = (idx - SD_HIST_EXACT) / 64 + 7;
	if (idx == SD_HIST_BUCKETS - 1)
		return SD_U64_MAX;
	return sd_hist_lower(idx) + (1ull << (e - SD_HIST_SUB_BITS));
}

void sd_hist_add(struct sd_hist *h, sd_u64 ns)
{
	h->counts[sd_hist_index(ns)]++;
	h->n++;
	h->sum_ns += ns;
	if (ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
}

sd_u64 sd_u64_to_dec(char *buf, sd_u64 v)
{
	char tmp[20];
	sd_u64 n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	return n;
}

sd_u64 sd_rmem_format(char *buf, sd_u64 cap, sd_u64 batch_id, sd_u64 time_us, int is_read,
		      sd_u64 start_page, sd_u64 npages)
{
	sd_u64 n = 0;

	if (cap < 4 * 20 + 5)
		return 0;
	n += sd_u64_to_dec(buf + n, batch_id);
	buf[n++] = ' ';
	n += sd_u64_to_dec(buf + n, time_us);
	buf[n++] = ' ';
	if (is_read)
		buf[n++] = '-';
	n += sd_u64_to_dec(buf + n, start_page);
	buf[n++] = ' ';
	n += sd_u64_to_dec(buf + n, npages);
	buf[n++] = '\n';
	return n;
}
