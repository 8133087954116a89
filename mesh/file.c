/* weftd --mesh FILE: the mesh's mode and prefixes from a file, so a host
 * comes back into its mesh after a restart, and a reload moves it to a new
 * configuration without a restart (tunnels and ports untouched). */
#include "mesh/file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mesh/mesh.h"
#include "mesh/text.h"
#include "wg/device.h"
#include "wg/log.h"

/* Same mode and the same prefixes, in any order. */
static bool same_config(const struct mesh_config *a, const struct mesh_config *b)
{
	if (a->mode != b->mode || a->n_prefixes != b->n_prefixes)
		return false;
	for (size_t i = 0; i < a->n_prefixes; i++) {
		bool found = false;

		for (size_t j = 0; j < b->n_prefixes && !found; j++)
			found = ip_prefix_equal(&a->prefixes[i], &b->prefixes[j]);
		if (!found)
			return false;
	}
	return true;
}

int mesh_file_apply(const char *path, struct wg_device *dev, char *summary, size_t summary_len)
{
	struct mesh_config want, have;
	const char *why = NULL;
	char *text = NULL;
	size_t cap = 0;
	ssize_t n = -1;
	int line = 0, err;
	FILE *f = fopen(path, "re");

	if (f) {
		n = getdelim(&text, &cap, '\0', f);
		err = n < 0 && ferror(f) ? -EIO : 0;
		fclose(f);
	} else {
		err = -errno;
	}
	if (err) {
		log_error("mesh file %s: %s", path, strerror(-err));
		snprintf(summary, summary_len, "mesh file %s: %s", path, strerror(-err));
		goto out;
	}
	err = mesh_text_parse_config(text ? text : "", n < 0 ? 0 : (size_t)n, &want, &line, &why);
	if (err) {
		log_error("mesh file %s:%d: %s", path, line, why ? why : strerror(-err));
		snprintf(summary, summary_len, "mesh file %s:%d: %s", path, line,
			 why ? why : strerror(-err));
		goto out;
	}
	mesh_get(dev, &have, NULL);
	if (same_config(&want, &have)) {
		snprintf(summary, summary_len, "mesh unchanged");
		goto out;
	}
	err = mesh_set(dev, &want);
	if (err) {
		log_error("mesh file %s: %s", path, strerror(-err));
		snprintf(summary, summary_len, "mesh file %s: %s", path, strerror(-err));
		goto out;
	}
	snprintf(summary, summary_len, "mesh %s, %zu prefix%s", mesh_text_mode_name(want.mode),
		 want.n_prefixes, want.n_prefixes == 1 ? "" : "es");
	log_info("mesh file %s: %s", path, summary);
out:
	free(text);
	return err;
}
