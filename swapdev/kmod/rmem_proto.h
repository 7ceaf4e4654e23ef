/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Wire format shared by the rmem driver (rmem_main.c) and the memory server
 * (rmem_server.c): the private data of the RDMA CM accept. The server registers one
 * buffer for remote READ and WRITE and tells the client where it is. All fields are
 * little-endian.
 */
#ifndef RMEM_PROTO_H
#define RMEM_PROTO_H

#define RMEM_PROTO_MAGIC 0x524d454dU /* "RMEM" */
#define RMEM_PROTO_VERSION 1U

struct rmem_accept_data {
	__le32 magic;
	__le32 version;
	__le64 addr;  /* remote virtual address of the buffer */
	__le64 size;  /* buffer size in bytes */
	__le32 rkey;  /* rkey of the buffer's memory region */
	__le32 pad;
};

#endif
