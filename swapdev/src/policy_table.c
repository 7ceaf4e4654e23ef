/* The uffd backend's policy tables, made from policies.def (the one list of names). */
#include <stdio.h>
#include <string.h>

#include "policy.h"

#define SD_PAGING(e, n, what) [SD_PAGING_##e] = &sd_paging_##e,
#define SD_EVICT(e, n, what)
const struct sd_paging_ops *const sd_paging_table[SD_PAGING_COUNT] = {
#include "policies.def"
};
#undef SD_PAGING
#undef SD_EVICT

#define SD_PAGING(e, n, what) [SD_PAGING_##e] = n,
#define SD_EVICT(e, n, what)
const char *const sd_paging_names[SD_PAGING_COUNT] = {
#include "policies.def"
};
#undef SD_PAGING
#undef SD_EVICT

#define SD_PAGING(e, n, what)
#define SD_EVICT(e, n, what) [SD_EVICT_##e] = &sd_evict_##e,
const struct sd_evict_ops *const sd_evict_table[SD_EVICT_COUNT] = {
#include "policies.def"
};
#undef SD_PAGING
#undef SD_EVICT

#define SD_PAGING(e, n, what)
#define SD_EVICT(e, n, what) [SD_EVICT_##e] = n,
const char *const sd_evict_names[SD_EVICT_COUNT] = {
#include "policies.def"
};
#undef SD_PAGING
#undef SD_EVICT

int sd_policy_lookup(const char *var, const char *name, const char *const *names, int n,
		     int default_index)
{
	int i;

	if (!name || !*name)
		return default_index;
	for (i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return i;
	fprintf(stderr, "swapdev: %s=%s: expected", var, name);
	for (i = 0; i < n; i++)
		fprintf(stderr, "%s %s", i ? (i == n - 1 ? " or" : ",") : "", names[i]);
	fputc('\n', stderr);
	return -1;
}
