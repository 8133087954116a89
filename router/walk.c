/* rt_walk_value (router/table.h): a value's prefixes in ascending order,
 * for listing allowed IPs. */
#include "router/table.h"
#include "router/table_internal.h"

#include <stdlib.h>

struct walk {
	const struct rt_family *f;
	const void *value;
	rt_walk_fn fn;
	void *ctx;
	unsigned int next_slot; /* slots below this one have been walked */
	const struct rt_host **hosts; /* the value's host routes, ascending */
	size_t n_hosts, next_host;
};

static int host_cmp(const void *a, const void *b)
{
	const struct rt_host *x = *(const struct rt_host *const *)a;
	const struct rt_host *y = *(const struct rt_host *const *)b;

	if (x->key[0] != y->key[0])
		return x->key[0] < y->key[0] ? -1 : 1;
	return x->key[1] < y->key[1] ? -1 : x->key[1] > y->key[1];
}

/* Reports the host routes below key (all of them with key NULL): a host
 * route comes after the shorter prefixes at its own address. */
static void walk_hosts(struct walk *w, const uint64_t *key)
{
	uint8_t addr[16];

	for (; w->next_host < w->n_hosts; w->next_host++) {
		const struct rt_host *e = w->hosts[w->next_host];

		if (key && (e->key[0] > key[0] || (e->key[0] == key[0] && e->key[1] >= key[1])))
			return;
		store_key(w->f, e->key, addr);
		w->fn(w->ctx, w->f->af, addr, w->f->bits);
	}
}

static void walk_emit(struct walk *w, const struct rt_node *n)
{
	uint8_t addr[16];

	walk_hosts(w, n->key);
	store_key(w->f, n->key, addr);
	w->fn(w->ctx, w->f->af, addr, n->cidr);
}

/* Pre-order, child 0 first: ascending address, then ascending cidr. */
static void walk_trie(struct walk *w, const struct rt_node *n)
{
	for (; n; n = n->child[1]) {
		if (n->value == w->value)
			walk_emit(w, n);
		walk_trie(w, n->child[0]);
	}
}

static void walk_slots(struct walk *w, unsigned int end)
{
	for (; w->next_slot < end; w->next_slot++)
		walk_trie(w, w->f->slots[w->next_slot].root);
}

/* A short prefix starts at a slot boundary: it comes after every slot
 * below its own and before the longer prefixes inside its first slot. */
static void walk_short(struct walk *w, const struct rt_node *n)
{
	for (; n; n = n->child[1]) {
		if (n->value == w->value) {
			walk_slots(w, slot_of(w->f, n->key));
			walk_emit(w, n);
		}
		walk_short(w, n->child[0]);
	}
}

void rt_walk_value(const struct rt_table *t, const void *value, rt_walk_fn fn, void *ctx)
{
	if (!value)
		return;
	for (int i = 0; i < 2; i++) {
		struct walk w = { .f = &t->fam[i], .value = value, .fn = fn, .ctx = ctx };
		const struct rt_hosts *h = &w.f->hosts;

		if (!w.f->slots || (!w.f->count && !h->count))
			continue;
		if (h->count) {
			w.hosts = malloc(h->count * sizeof(*w.hosts));
			for (size_t j = 0; w.hosts && j <= h->mask; j++)
				if (h->slots[j].value == value)
					w.hosts[w.n_hosts++] = &h->slots[j];
			if (w.n_hosts > 1)
				qsort(w.hosts, w.n_hosts, sizeof(*w.hosts), host_cmp);
		}
		walk_short(&w, w.f->short_root);
		walk_slots(&w, n_slots(w.f));
		walk_hosts(&w, NULL);
		free(w.hosts);
	}
}
