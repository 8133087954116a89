/* weftd --ports FILE, at start and on reload: the plan of `weft port load`
 * (port/text.c) applied in the daemon, limited to the ports the file
 * owns so that a reload never removes a port someone added by hand. */
#include "port/file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "port/ports.h"
#include "port/text.h"
#include "wg/device.h"
#include "wg/log.h"

static bool named(const char (*names)[PORT_NAME_MAX], size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strncmp(names[i], name, PORT_NAME_MAX))
			return true;
	return false;
}

static bool in_file(const struct port_config *want, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strncmp(want[i].name, name, PORT_NAME_MAX))
			return true;
	return false;
}

static int read_whole(const char *path, char **text, size_t *len)
{
	FILE *f = fopen(path, "re");
	size_t cap = 0;
	ssize_t n;
	int err = 0;

	*text = NULL;
	if (!f)
		return -errno;
	n = getdelim(text, &cap, '\0', f);
	if (n < 0)
		err = ferror(f) ? -EIO : 0;
	*len = n < 0 ? 0 : (size_t)n;
	fclose(f);
	if (!err && !*text && !(*text = strdup("")))
		err = -ENOMEM;
	return err;
}

/* A wanted port that is already there keeps the addresses VM registration
 * gave it (port_text_keep_registered): a reload never replaces a port, nor
 * changes its addresses, for them. */
static void keep_registered(const char *path, struct port_config *want, size_t n_want,
			    const struct port_info *have, size_t n_have)
{
	for (size_t j = 0; j < n_want; j++)
		if (port_text_keep_registered(&want[j], have, n_have))
			log_info("ports file %s: port %s keeps its registered addresses "
				 "(weft vm changes them; the file's apply when it creates a port)",
				 path, want[j].name);
}

int ports_file_apply(struct ports_file *pf, struct wg_device *dev, char *summary,
		     size_t summary_len)
{
	struct port_config *want = NULL;
	struct port_info *have = NULL, *mine = NULL, *foreign = NULL;
	struct port_step *steps = NULL, *check = NULL;
	size_t n_want = 0, n_have = 0, n_mine = 0, n_foreign = 0, n_steps = 0, n_check = 0;
	size_t added = 0, replaced = 0, removed = 0;
	char (*owned)[PORT_NAME_MAX] = NULL;
	const char *why = NULL;
	char *text = NULL, own[128];
	size_t len = 0;
	int line = 0, err;

	if (!summary) {
		summary = own;
		summary_len = sizeof(own);
	}
	err = read_whole(pf->path, &text, &len);
	if (err) {
		log_error("ports file %s: %s", pf->path, strerror(-err));
		snprintf(summary, summary_len, "%s: %s", pf->path, strerror(-err));
		goto out;
	}
	err = port_text_parse_file(text, len, &want, &n_want, &line, &why);
	if (err) {
		log_error("ports file %s:%d: %s", pf->path, line, why ? why : strerror(-err));
		snprintf(summary, summary_len, "%s:%d: %s", pf->path, line,
			 why ? why : strerror(-err));
		goto out;
	}
	err = port_list(dev, &have, &n_have);
	if (err)
		goto fail_plain;
	if (n_have) {
		mine = calloc(n_have, sizeof(*mine));
		foreign = calloc(n_have, sizeof(*foreign));
		if (!mine || !foreign) {
			err = -ENOMEM;
			goto fail_plain;
		}
	}
	keep_registered(pf->path, want, n_want, have, n_have);
	/* The file's ports (now or last time) against the others. */
	for (size_t i = 0; i < n_have; i++) {
		if (named(pf->owned, pf->n_owned, have[i].cfg.name) ||
		    in_file(want, n_want, have[i].cfg.name))
			mine[n_mine++] = have[i];
		else
			foreign[n_foreign++] = have[i];
	}
	/* A port of the file must not take an address of a port it does not
	 * own; checked before anything changes. */
	err = port_text_plan(want, n_want, foreign, n_foreign, false, &check, &n_check, &why);
	if (!err)
		err = port_text_plan(want, n_want, mine, n_mine, true, &steps, &n_steps, &why);
	if (err) {
		log_error("ports file %s: %s", pf->path, why ? why : strerror(-err));
		snprintf(summary, summary_len, "%s: %s", pf->path, why ? why : strerror(-err));
		goto out;
	}
	if (n_want && !(owned = calloc(n_want, sizeof(*owned)))) {
		err = -ENOMEM;
		goto fail_plain;
	}
	for (size_t i = 0; i < n_steps; i++) {
		const struct port_step *s = &steps[i];
		const char *name = s->kind == PORT_STEP_DEL ? mine[s->index].cfg.name
							    : want[s->index].name;

		err = s->kind == PORT_STEP_DEL ? port_del(dev, name)
					       : port_add(dev, &want[s->index]);
		if (err) {
			log_error("ports file %s: %s port %s: %s", pf->path,
				  s->kind == PORT_STEP_DEL ? "removing" : "adding", name,
				  strerror(-err));
			snprintf(summary, summary_len, "%s: port %s: %s", pf->path, name,
				 strerror(-err));
			goto out;
		}
		if (s->kind == PORT_STEP_ADD)
			s->replace ? replaced++ : added++;
		else if (!s->replace)
			removed++;
		if (s->kind == PORT_STEP_ADD || !s->replace)
			log_info("ports file %s: %s port %s", pf->path,
				 s->kind == PORT_STEP_DEL ? "removed"
				 : s->replace		  ? "replaced"
							  : "added",
				 name);
	}
	/* What the file owns from now on. */
	for (size_t i = 0; i < n_want; i++)
		memcpy(owned[i], want[i].name, PORT_NAME_MAX);
	free(pf->owned);
	pf->owned = owned;
	pf->n_owned = n_want;
	owned = NULL;
	snprintf(summary, summary_len, "%zu added, %zu replaced, %zu removed, %zu unchanged", added,
		 replaced, removed, n_want - added - replaced);
	log_info("ports file %s: %s", pf->path, summary);
	goto out;
fail_plain:
	log_error("ports file %s: %s", pf->path, strerror(-err));
	snprintf(summary, summary_len, "%s: %s", pf->path, strerror(-err));
out:
	free(owned);
	free(steps);
	free(check);
	free(mine);
	free(foreign);
	free(have);
	free(want);
	free(text);
	return err;
}

void ports_file_free(struct ports_file *pf)
{
	free(pf->owned);
	pf->owned = NULL;
	pf->n_owned = 0;
}
