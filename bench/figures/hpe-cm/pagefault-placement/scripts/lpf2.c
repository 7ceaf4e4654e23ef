/* scratch: lat_pagefault over two block devices, faults alternating A, B, A, B ... */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/fs.h>
#include "bench_util.h"
#define PAGE 4096ull
int main(int argc, char **argv)
{
	uint64_t size, npages, i, s = strtoull(argv[3], NULL, 10), *order;
	uint32_t *lat[2];
	volatile const char *where[2];
	int fd[2], f;
	for (f = 0; f < 2; f++) {
		fd[f] = open(argv[1 + f], O_RDONLY);
		ioctl(fd[f], BLKGETSIZE64, &size);
		npages = size / PAGE;
		where[f] = mmap(NULL, npages * PAGE, PROT_READ, MAP_SHARED, fd[f], 0);
		madvise((void *)where[f], npages * PAGE, MADV_RANDOM);
		madvise((void *)where[f], npages * PAGE, MADV_DONTNEED);
		posix_fadvise(fd[f], 0, (off_t)(npages * PAGE), POSIX_FADV_DONTNEED);
		lat[f] = malloc(npages * sizeof(uint32_t));
	}
	order = malloc(npages * sizeof(*order));
	shuffle_u64(order, npages, &s);
	for (i = 0; i < npages; i++)
		for (f = 0; f < 2; f++) {
			uint64_t t1 = now_ns(), t2;
			(void)where[f][order[i] * PAGE];
			t2 = now_ns();
			lat[f][i] = (uint32_t)(t2 - t1);
		}
	printf("{");
	for (f = 0; f < 2; f++) {
		qsort(lat[f], npages, sizeof(uint32_t), cmp_u32);
		printf("\"p50_%d_ns\": %u%s", f, lat[f][npages / 2], f ? "}\n" : ", ");
	}
	return 0;
}
