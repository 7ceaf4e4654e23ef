// SPDX-License-Identifier: GPL-2.0
/*
 * rmem-server: the memory server of the rmem driver (rmem_main.c). It registers one
 * buffer of SIZE_MB MiB for remote READ and WRITE and accepts rdma_cm connections,
 * handing each client the buffer's address, size and rkey in the accept's private data
 * (rmem_proto.h). After that the server's CPU is not involved: the client moves pages
 * with one-sided RDMA READ/WRITE. The buffer outlives connections (a reconnecting
 * client finds its pages), and is mlocked so that it is never swapped itself.
 *
 *   rmem-server [-a ADDR] [-p PORT] [-s SIZE_MB]     (defaults 0.0.0.0, 7471, 1024)
 *
 * Prints "listening <addr>:<port> size_bytes <n>" once ready (for scripts), and one
 * line per connection event. Exits on SIGINT/SIGTERM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <endian.h>
#include <sys/mman.h>
#include <linux/types.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#include "rmem_proto.h"

#define MAX_PDS 8

static struct {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
} pds[MAX_PDS];

static void *buf;
static size_t buf_size;

static void die(const char *what)
{
	fprintf(stderr, "rmem-server: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* One PD and MR per RDMA device, made at the first connection through it. */
static int pd_for(struct ibv_context *verbs)
{
	int i;

	for (i = 0; i < MAX_PDS && pds[i].verbs; i++)
		if (pds[i].verbs == verbs)
			return i;
	if (i == MAX_PDS)
		return -1;
	pds[i].pd = ibv_alloc_pd(verbs);
	if (!pds[i].pd)
		return -1;
	pds[i].mr = ibv_reg_mr(pds[i].pd, buf, buf_size,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				       IBV_ACCESS_REMOTE_WRITE);
	if (!pds[i].mr) {
		ibv_dealloc_pd(pds[i].pd);
		return -1;
	}
	pds[i].verbs = verbs;
	return i;
}

static void on_connect_request(struct rdma_cm_id *id, const struct rdma_conn_param *req)
{
	struct ibv_qp_init_attr attr = { 0 };
	struct rdma_conn_param param = { 0 };
	struct rmem_accept_data ad = { 0 };
	struct ibv_device_attr dev;
	struct ibv_cq *cq;
	int i = pd_for(id->verbs);

	if (i < 0) {
		fprintf(stderr, "rmem-server: cannot register the buffer: %s\n", strerror(errno));
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	/* The client only issues one-sided operations: a minimal QP suffices. */
	cq = ibv_create_cq(id->verbs, 2, NULL, NULL, 0);
	if (!cq)
		goto reject;
	attr.send_cq = cq;
	attr.recv_cq = cq;
	attr.cap.max_send_wr = 1;
	attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_RC;
	if (rdma_create_qp(id, pds[i].pd, &attr))
		goto reject_cq;
	id->context = cq;
	ad.magic = htole32(RMEM_PROTO_MAGIC);
	ad.version = htole32(RMEM_PROTO_VERSION);
	ad.addr = htole64((uint64_t)(uintptr_t)buf);
	ad.size = htole64(buf_size);
	ad.rkey = htole32(pds[i].mr->rkey);
	param.private_data = &ad;
	param.private_data_len = sizeof(ad);
	/* Serve as many outstanding RDMA READs as the client initiates, up to the device's limit. */
	if (ibv_query_device(id->verbs, &dev))
		goto reject_qp;
	param.responder_resources = req->initiator_depth < dev.max_qp_rd_atom ?
					    req->initiator_depth : dev.max_qp_rd_atom;
	param.initiator_depth = req->responder_resources < dev.max_qp_init_rd_atom ?
					req->responder_resources : dev.max_qp_init_rd_atom;
	param.rnr_retry_count = 7;
	if (rdma_accept(id, &param))
		goto reject_qp;
	printf("accepted client, rkey 0x%x\n", pds[i].mr->rkey);
	fflush(stdout);
	return;
reject_qp:
	rdma_destroy_qp(id);
reject_cq:
	ibv_destroy_cq(cq);
reject:
	fprintf(stderr, "rmem-server: connect request failed: %s\n", strerror(errno));
	rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
}

static void on_disconnect(struct rdma_cm_id *id)
{
	struct ibv_cq *cq = id->context;

	printf("client disconnected\n");
	fflush(stdout);
	rdma_destroy_qp(id);
	if (cq)
		ibv_destroy_cq(cq);
	rdma_destroy_id(id);
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	const char *addr = "0.0.0.0";
	unsigned long port = 7471, size_mb = 1024;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listener;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct sigaction sa = { .sa_handler = on_signal };
	int opt;

	while ((opt = getopt(argc, argv, "a:p:s:")) != -1) {
		char *end;

		switch (opt) {
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = strtoul(optarg, &end, 10);
			if (*end || !port || port > 65535) {
				fprintf(stderr, "rmem-server: -p %s: expected a port 1..65535\n", optarg);
				return 2;
			}
			break;
		case 's':
			size_mb = strtoul(optarg, &end, 10);
			if (*end || !size_mb) {
				fprintf(stderr, "rmem-server: -s %s: expected a size in MiB > 0\n", optarg);
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: rmem-server [-a ADDR] [-p PORT] [-s SIZE_MB]\n");
			return 2;
		}
	}
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
		fprintf(stderr, "rmem-server: -a %s: expected an IPv4 address\n", addr);
		return 2;
	}
	sin.sin_port = htons(port);
	buf_size = size_mb << 20;
	buf = mmap(NULL, buf_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap");
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		die("mlockall");
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	if (rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_bind_addr(listener, (struct sockaddr *)&sin))
		die("rdma_bind_addr");
	if (rdma_listen(listener, 8))
		die("rdma_listen");
	printf("listening %s:%lu size_bytes %zu\n", addr, port, buf_size);
	fflush(stdout);

	while (!stop) {
		struct rdma_cm_event *ev;
		struct rdma_conn_param req;
		struct rdma_cm_id *id;
		enum rdma_cm_event_type type;

		if (rdma_get_cm_event(ch, &ev)) {
			if (errno == EINTR)
				continue;
			die("rdma_get_cm_event");
		}
		type = ev->event;
		id = ev->id;
		req = ev->param.conn;
		rdma_ack_cm_event(ev);
		switch (type) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			on_connect_request(id, &req);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			on_disconnect(id);
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			printf("client established\n");
			fflush(stdout);
			break;
		default:
			printf("event %s\n", rdma_event_str(type));
			fflush(stdout);
			break;
		}
	}
	printf("stopping\n");
	rdma_destroy_id(listener);
	rdma_destroy_event_channel(ch);
	return 0;
}
