/* Stand-in for the kernel's <linux/types.h> (the integer types sd_delay.h uses), so the
 * delay core is compiled the way a kernel module would: -D__KERNEL__ -nostdinc. */
#ifndef SD_KSTUB_TYPES_H
#define SD_KSTUB_TYPES_H
typedef unsigned long long u64;
typedef unsigned int u32;
typedef long long s64;
#endif
