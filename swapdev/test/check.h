/* The C tests' one check: an exact unsigned value, reported with file, line and both
 * values; failures counts them (main returns non-zero if any). */
#ifndef SD_TEST_CHECK_H
#define SD_TEST_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK_EQ(got, want)                                                                    \
	do {                                                                                   \
		unsigned long long g_ = (unsigned long long)(got), w_ = (unsigned long long)(want); \
		if (g_ != w_) {                                                                \
			fprintf(stderr, "%s:%d: %s = %llu, expected %llu\n", __FILE__, __LINE__,  \
				#got, g_, w_);                                                 \
			failures++;                                                            \
		}                                                                              \
	} while (0)

#endif
