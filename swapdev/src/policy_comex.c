/*
 * The "comex" paging policy (policy.h): COMEX's remote-memory path (Srinuan, Yuan, Tzeng,
 * "Cooperative Memory Expansion via OS Kernel Support for Networked Computing Systems",
 * IEEE TPDS 2020; /work/shared/papers/002_*.txt), its timing and its remote requests, in
 * the device's page space. The data itself stays in the backend's store.
 *
 * Faults (§3.3.5, §4.4). A fault is served, in this order, from
 *   1. a write buffer still holding the page (a memcpy, no network request);
 *   2. the shared read buffer, if the page was prefetched and not yet used (a memcpy);
 *   3. else one RDMA READ of P frames, the faulting page's and its P - 1 successors, on
 *      the page's memory node: one request of P pages (64 KiB at P = 16), waited for.
 *      Every frame of the window that holds a remote page of that node (not in a write
 *      buffer, not buffered already) is kept, with the faulting page, in one read-buffer
 *      entry. The buffer holds B pages, B / P entries, replaced LRU by entry (a hit makes
 *      its entry the most recent). A page is used once: it is local afterwards.
 * Evictions (§3.3.1, §4.2, §4.3). A page leaving local memory goes into the write buffer of
 * its memory node; its local frame is free at once. A node's buffer gathers one contiguous
 * run of pages and writes it with one asynchronous RDMA WRITE when the run reaches
 * W_batch = 64 pages, when the next page is not contiguous with it, or when the buffer
 * (W_buf = 512 frames, in flight plus gathering) is full; a write's frames stay in the
 * buffer (and serve faults) until it completes. Only a full buffer puts the evicting
 * fault on the wait for the oldest write in flight (§4.3: "eviction is off the fault path
 * unless the free list runs dry").
 * Placement (§3.3.4): page frames are staged on the process's preferred memory node,
 * hash(NID, PID) mod M, rehashing hash(that node, PID) when the node is full. Frames keep
 * the page space's layout (page g at frame g of its node), so pages evicted in address
 * order are in contiguous frames, as COMEX's allocator gives contiguous frames to pages
 * reclaimed together (§3.3.3).
 * Costs (§3.3.3): each request pays the memory node's service time T_S plus the network
 * delay of the run's delay model (any of core/sd_models.def) for its size.
 *
 * Parameters (environment; defaults and their source):
 *   SWAPDEV_COMEX_PREFETCH_PAGES     P = 16     §5.2.2 ("based on P = 16")
 *   SWAPDEV_COMEX_READ_BUFFER_PAGES  B = 4096   §5.2.3 ("sized to 4096 pages")
 *   SWAPDEV_COMEX_WRITE_BATCH_PAGES  64         §4.3 ("set to 64 pages in the prototype")
 *   SWAPDEV_COMEX_WRITE_BUFFER_PAGES 512        §4.2 ("256-512 frames of 4 KB")
 *   SWAPDEV_COMEX_SERVICE_NS         T_S = 6000 §3.3.3 (4.0-6.0 us; Eq. (1) takes 6.0 us)
 *   SWAPDEV_COMEX_MEMORY_NODES       M = 12     §5.2.1 (Fig. 10: 12 memory nodes)
 *   SWAPDEV_COMEX_NODE_PAGES         12582912   §5.1.2 (48 GB contributed per memory node)
 *   SWAPDEV_COMEX_NODE_ID            0          this compute node's NID for the hash
 * Left out: the free-frame replenishing (threshold T = 1024, §3.3.3) and its verbs, the
 * release notifications of used frames (§4.4), the buddy allocator on the memory node
 * (§3.3.2): frames are always available here; see doc/swapdev.md, "comex".
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "policy.h"
#include "sd_user.h"

/* The largest page space the per-page tables cover (virtual, touched as used): 2^30 pages
 * = 4 TiB of registered memory. */
#define CX_MAX_PAGES (1ull << 30)
#define CX_MAX_NODES 65536u /* §4.1: 16 bits of node ID */
#define CX_NONE 0xffffffffu

struct cx_entry { /* one read-buffer entry: frames first..first+P-1 of one node */
	uint64_t first;
	uint64_t held;   /* bit i: page first+i is held and not yet used */
	uint64_t loaded; /* bit i: page first+i was loaded into the entry */
	uint32_t prev, next; /* LRU list (head: most recent) */
	int live;
};

struct cx_write { /* one RDMA WRITE in flight */
	uint64_t first, n, done_ns;
	uint32_t seq;
};

struct cx_node { /* per memory node: its write buffer and its staged pages */
	uint64_t run_first, run_n; /* the contiguous run being gathered */
	uint32_t run_seq;
	struct cx_write *inflight; /* FIFO ring of W_buf entries */
	uint64_t if_head, if_len, if_pages;
	uint64_t staged; /* remote pages on this node */
};

struct comex {
	struct sd_io io;
	struct sd_delay_model net; /* the run's model: the network delay of a request */
	uint64_t p, b, batch, wbuf, service_ns, m, node_pages, node_id, pid;
	uint32_t nentries, lru_head, lru_tail;
	struct cx_entry *rb;
	struct cx_node *nodes;
	uint32_t home; /* the preferred node, hash(NID, PID) mod M */
	/* per page g of the device's page space */
	uint16_t *node_of; /* memory node of a remote page */
	uint8_t *remote;   /* 1: staged remotely (or in a write buffer) */
	uint32_t *rb_of;   /* read-buffer entry holding it unused, or CX_NONE (stored + 1) */
	uint32_t *wb_seq;  /* the write (run) sequence holding it in a write buffer, 0: none */
	uint32_t next_seq;
	/* counters */
	uint64_t reads, read_hits, write_hits, prefetched, unused, writes, write_pages,
		full_waits, rehashes, overfull;
};

/* splitmix64's finalizer (Steele, Lea, Flood, OOPSLA'14) as the placement hash. */
static uint64_t cx_hash(uint64_t x)
{
	return sd_rng_next(&x);
}

static void *cx_table(size_t entry_bytes)
{
	void *p = mmap(NULL, CX_MAX_PAGES * entry_bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static uint64_t cx_delay(void *st, const struct sd_req *req)
{
	struct comex *c = st;

	return c->service_ns + sd_delay(&c->net, req);
}

static const struct sd_model_ops cx_model_ops = {"comex", SD_PARAMS_NONE, cx_delay};

static int env_param(const char *name, uint64_t dflt, uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (sd_env_u64(name, dflt, out))
		return -1;
	if (*out < lo || *out > hi) {
		fprintf(stderr, "swapdev: %s=%llu: expected %llu..%llu\n", name,
			(unsigned long long)*out, (unsigned long long)lo, (unsigned long long)hi);
		return -1;
	}
	return 0;
}

/* LRU list of read-buffer entries. */
static void lru_unlink(struct comex *c, uint32_t e)
{
	struct cx_entry *x = &c->rb[e];

	if (x->prev != CX_NONE)
		c->rb[x->prev].next = x->next;
	else
		c->lru_head = x->next;
	if (x->next != CX_NONE)
		c->rb[x->next].prev = x->prev;
	else
		c->lru_tail = x->prev;
}

static void lru_push_front(struct comex *c, uint32_t e)
{
	struct cx_entry *x = &c->rb[e];

	x->prev = CX_NONE;
	x->next = c->lru_head;
	if (c->lru_head != CX_NONE)
		c->rb[c->lru_head].prev = e;
	c->lru_head = e;
	if (c->lru_tail == CX_NONE)
		c->lru_tail = e;
}

/* Empty entry e: its held pages were prefetched and never used. */
static void rb_drop(struct comex *c, uint32_t e)
{
	struct cx_entry *x = &c->rb[e];
	uint64_t i;

	for (i = 0; i < c->p; i++)
		if (x->held >> i & 1) {
			c->unused++;
			c->rb_of[x->first + i] = 0;
		}
	x->held = 0;
	x->live = 0;
}

/* Writes of node n that completed by now_ns leave its buffer. */
static void wb_retire(struct comex *c, struct cx_node *n, uint64_t now_ns)
{
	while (n->if_len && n->inflight[n->if_head].done_ns <= now_ns) {
		struct cx_write *w = &n->inflight[n->if_head];
		uint64_t i;

		for (i = 0; i < w->n; i++)
			if (c->wb_seq[w->first + i] == w->seq)
				c->wb_seq[w->first + i] = 0;
		n->if_pages -= w->n;
		n->if_head = (n->if_head + 1) % c->wbuf;
		n->if_len--;
	}
}

/* One asynchronous RDMA WRITE of node n's gathered run. */
static void wb_flush(struct comex *c, struct cx_node *n, uint64_t now_ns)
{
	struct sd_req r;
	struct cx_write *w;
	uint64_t ns;

	if (!n->run_n)
		return;
	r = sd_req_pages(SD_OP_WRITE, n->run_first, n->run_n, now_ns);
	ns = c->io.request(c->io.ctx, &r, 0);
	c->io.end_batch(c->io.ctx);
	w = &n->inflight[(n->if_head + n->if_len) % c->wbuf];
	*w = (struct cx_write){n->run_first, n->run_n, now_ns + ns, n->run_seq};
	n->if_len++;
	n->if_pages += n->run_n;
	c->writes++;
	c->write_pages += n->run_n;
	n->run_n = 0;
}

/* The node for a page leaving local memory (§3.3.4): the preferred one unless full. */
static uint32_t cx_place(struct comex *c)
{
	uint32_t node = c->home;
	uint64_t tries;

	for (tries = 0; tries < c->m; tries++) {
		if (c->nodes[node].staged < c->node_pages)
			return node;
		c->rehashes++;
		node = (uint32_t)(cx_hash((uint64_t)node << 32 | c->pid) % c->m);
	}
	for (node = 0; node < c->m; node++)
		if (c->nodes[node].staged < c->node_pages)
			return node;
	c->overfull++; /* every node full: stage over capacity on the preferred node */
	return c->home;
}

static void *comex_create(const struct sd_io *io, uint64_t npages_hint)
{
	struct comex *c = calloc(1, sizeof(*c));
	uint32_t i;

	(void)npages_hint;
	if (!c)
		return NULL;
	if (env_param("SWAPDEV_COMEX_PREFETCH_PAGES", 16, 1, 64, &c->p) ||
	    env_param("SWAPDEV_COMEX_READ_BUFFER_PAGES", 4096, 1, 1u << 24, &c->b) ||
	    env_param("SWAPDEV_COMEX_WRITE_BATCH_PAGES", 64, 1, 1u << 20, &c->batch) ||
	    env_param("SWAPDEV_COMEX_WRITE_BUFFER_PAGES", 512, 1, 1u << 20, &c->wbuf) ||
	    env_param("SWAPDEV_COMEX_SERVICE_NS", 6000, 0, ~0ull, &c->service_ns) ||
	    env_param("SWAPDEV_COMEX_MEMORY_NODES", 12, 1, CX_MAX_NODES, &c->m) ||
	    env_param("SWAPDEV_COMEX_NODE_PAGES", 12582912, 1, ~0ull, &c->node_pages) ||
	    env_param("SWAPDEV_COMEX_NODE_ID", 0, 0, CX_MAX_NODES - 1, &c->node_id))
		return NULL;
	if (c->b < c->p || c->wbuf < c->batch) {
		fprintf(stderr, "swapdev: SWAPDEV_COMEX_READ_BUFFER_PAGES must be >= "
				"SWAPDEV_COMEX_PREFETCH_PAGES and SWAPDEV_COMEX_WRITE_BUFFER_PAGES >= "
				"SWAPDEV_COMEX_WRITE_BATCH_PAGES\n");
		return NULL;
	}
	c->io = *io;
	c->net = *io->delay;
	io->delay->ops = &cx_model_ops; /* every request: T_S + the network's delay */
	io->delay->state = c;
	c->pid = (uint64_t)getpid();
	c->home = (uint32_t)(cx_hash(c->node_id << 32 | c->pid) % c->m);
	c->nentries = (uint32_t)(c->b / c->p);
	c->rb = calloc(c->nentries, sizeof(*c->rb));
	c->nodes = calloc(c->m, sizeof(*c->nodes));
	c->node_of = cx_table(sizeof(uint16_t));
	c->remote = cx_table(1);
	c->rb_of = cx_table(sizeof(uint32_t));
	c->wb_seq = cx_table(sizeof(uint32_t));
	if (!c->rb || !c->nodes || !c->node_of || !c->remote || !c->rb_of || !c->wb_seq) {
		fprintf(stderr, "swapdev: comex: out of memory for its tables\n");
		return NULL;
	}
	c->lru_head = c->lru_tail = CX_NONE;
	for (i = 0; i < c->nentries; i++) {
		c->rb[i].prev = c->rb[i].next = CX_NONE;
		lru_push_front(c, i); /* all free; any order */
	}
	for (i = 0; i < c->m; i++) {
		c->nodes[i].inflight = calloc(c->wbuf, sizeof(struct cx_write));
		if (!c->nodes[i].inflight)
			return NULL;
	}
	return c;
}

/* Page g is local again (served from a buffer or fetched). */
static void cx_home(struct comex *c, uint64_t g)
{
	if (c->remote[g]) {
		c->remote[g] = 0;
		c->nodes[c->node_of[g]].staged--;
	}
}

static int comex_fetch(void *st, uint64_t g, uint64_t now_ns)
{
	struct comex *c = st;
	struct cx_node *n = &c->nodes[c->node_of[g]];
	struct cx_entry *x;
	struct sd_req r;
	uint32_t e;
	uint64_t i;

	if (g >= CX_MAX_PAGES)
		return 0;
	wb_retire(c, n, now_ns);
	if (c->wb_seq[g]) { /* 1. still in its node's write buffer */
		c->write_hits++;
		cx_home(c, g);
		return 0;
	}
	if (c->rb_of[g]) { /* 2. prefetched into the read buffer, unused so far */
		e = c->rb_of[g] - 1;
		x = &c->rb[e];
		x->held &= ~(1ull << (g - x->first));
		c->rb_of[g] = 0;
		c->read_hits++;
		lru_unlink(c, e);
		lru_push_front(c, e);
		cx_home(c, g);
		return 0;
	}
	/* 3. one RDMA READ of P frames from g into the least recently used entry */
	e = c->lru_tail;
	if (c->rb[e].live)
		rb_drop(c, e);
	x = &c->rb[e];
	x->first = g;
	x->held = x->loaded = 0;
	x->live = 1;
	for (i = 1; i < c->p && g + i < CX_MAX_PAGES; i++) {
		uint64_t h = g + i;

		if (c->remote[h] && c->node_of[h] == c->node_of[g] && !c->wb_seq[h] &&
		    !c->rb_of[h]) {
			x->held |= 1ull << i;
			c->rb_of[h] = e + 1;
			c->prefetched++;
		}
	}
	x->loaded = x->held | 1; /* the faulting page, used at once */
	lru_unlink(c, e);
	lru_push_front(c, e);
	r = sd_req_pages(SD_OP_READ, g, c->p, now_ns);
	c->io.request(c->io.ctx, &r, 1);
	c->io.end_batch(c->io.ctx);
	c->reads++;
	cx_home(c, g);
	return 1;
}

static void comex_write(void *st, uint64_t g, uint64_t npages, uint64_t now_ns)
{
	struct comex *c = st;
	uint64_t h;

	for (h = g; h < g + npages && h < CX_MAX_PAGES; h++) {
		uint32_t node = cx_place(c);
		struct cx_node *n = &c->nodes[node];

		wb_retire(c, n, now_ns);
		if (n->run_n && h != n->run_first + n->run_n)
			wb_flush(c, n, now_ns); /* (2) not contiguous */
		if (n->if_pages + n->run_n >= c->wbuf) {
			if (n->run_n) {
				wb_flush(c, n, now_ns); /* (3) the buffer is full */
			}
			if (n->if_pages >= c->wbuf) { /* no free frame: wait for a write */
				c->full_waits++;
				c->io.wait_until(c->io.ctx, n->inflight[n->if_head].done_ns);
				now_ns = n->inflight[n->if_head].done_ns;
				wb_retire(c, n, now_ns);
			}
		}
		if (!n->run_n) {
			n->run_first = h;
			n->run_seq = ++c->next_seq ? c->next_seq : ++c->next_seq;
		}
		n->run_n++;
		c->wb_seq[h] = n->run_seq;
		if (c->rb_of[h]) { /* a stale prefetched copy (cannot be: it was used) */
			c->rb[c->rb_of[h] - 1].held &= ~(1ull << (h - c->rb[c->rb_of[h] - 1].first));
			c->rb_of[h] = 0;
		}
		if (c->remote[h])
			c->nodes[c->node_of[h]].staged--;
		c->remote[h] = 1;
		c->node_of[h] = (uint16_t)node;
		n->staged++;
		if (n->run_n >= c->batch)
			wb_flush(c, n, now_ns); /* (1) the batch is complete */
	}
}

static void comex_end_evict(void *st, uint64_t now_ns)
{
	(void)st;
	(void)now_ns; /* runs keep gathering across eviction batches (§4.3) */
}

static void comex_forget(void *st, uint64_t g)
{
	struct comex *c = st;

	if (g >= CX_MAX_PAGES)
		return;
	if (c->rb_of[g]) {
		struct cx_entry *x = &c->rb[c->rb_of[g] - 1];

		x->held &= ~(1ull << (g - x->first));
		c->rb_of[g] = 0;
	}
	cx_home(c, g);
}

static void comex_finish(void *st, uint64_t now_ns, FILE *f)
{
	struct comex *c = st;
	uint32_t i;

	for (i = 0; i < c->m; i++)
		wb_flush(c, &c->nodes[i], now_ns);
	for (i = 0; i < c->nentries; i++)
		if (c->rb[i].live)
			rb_drop(c, i);
	if (c->reads + c->read_hits + c->write_hits + c->writes == 0)
		return;
	fprintf(f,
		"swapdev comex: %llu reads of %llu pages, %llu read-buffer hits, %llu "
		"write-buffer hits, %llu prefetched, %llu prefetched unused, %llu write batches "
		"(%llu pages), %llu write-buffer-full waits, node %u of %llu, %llu rehashes\n",
		(unsigned long long)c->reads, (unsigned long long)c->p,
		(unsigned long long)c->read_hits, (unsigned long long)c->write_hits,
		(unsigned long long)c->prefetched, (unsigned long long)c->unused,
		(unsigned long long)c->writes, (unsigned long long)c->write_pages,
		(unsigned long long)c->full_waits, c->home, (unsigned long long)c->m,
		(unsigned long long)c->rehashes);
}

const struct sd_paging_ops sd_paging_COMEX = {comex_create, comex_fetch, comex_write,
					      comex_end_evict, comex_forget, comex_finish};
