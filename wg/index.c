/* The receiver-index table. */
#include "wg/index.h"

#include <sodium.h>
#include <string.h>

#include "wg/keypair.h"

static struct wg_index_entry **bucket(struct wg_index_table *t, uint32_t index)
{
	return &t->buckets[index & (WG_INDEX_BUCKETS - 1)];
}

static struct wg_index_entry *find(struct wg_index_table *t, uint32_t index)
{
	for (struct wg_index_entry *e = *bucket(t, index); e; e = e->next)
		if (e->index == index)
			return e;
	return NULL;
}

void wg_index_init(struct wg_index_table *t)
{
	memset(t->buckets, 0, sizeof(t->buckets));
	pthread_rwlock_init(&t->lock, NULL);
}

void wg_index_destroy(struct wg_index_table *t)
{
	pthread_rwlock_destroy(&t->lock);
}

uint32_t wg_index_insert(struct wg_index_table *t, struct wg_index_entry *e)
{
	uint32_t index;

	pthread_rwlock_wrlock(&t->lock);
	do
		index = randombytes_random();
	while (find(t, index));
	e->index = index;
	e->next = *bucket(t, index);
	*bucket(t, index) = e;
	e->hashed = 1;
	pthread_rwlock_unlock(&t->lock);
	return index;
}

void wg_index_remove(struct wg_index_table *t, struct wg_index_entry *e)
{
	pthread_rwlock_wrlock(&t->lock);
	if (e->hashed) {
		for (struct wg_index_entry **pp = bucket(t, e->index); *pp; pp = &(*pp)->next) {
			if (*pp == e) {
				*pp = e->next;
				break;
			}
		}
		e->hashed = 0;
		e->next = NULL;
	}
	pthread_rwlock_unlock(&t->lock);
}

void wg_index_replace(struct wg_index_table *t, struct wg_index_entry *old, struct wg_index_entry *new_e)
{
	pthread_rwlock_wrlock(&t->lock);
	new_e->index = old->index;
	new_e->hashed = 1;
	if (!old->hashed) {
		new_e->next = *bucket(t, new_e->index);
		*bucket(t, new_e->index) = new_e;
	} else {
		for (struct wg_index_entry **pp = bucket(t, old->index); *pp; pp = &(*pp)->next) {
			if (*pp == old) {
				new_e->next = old->next;
				*pp = new_e;
				break;
			}
		}
		old->hashed = 0;
		old->next = NULL;
	}
	pthread_rwlock_unlock(&t->lock);
}

struct wg_keypair *wg_index_get_keypair(struct wg_index_table *t, uint32_t index)
{
	struct wg_keypair *kp = NULL;
	struct wg_index_entry *e;

	pthread_rwlock_rdlock(&t->lock);
	e = find(t, index);
	/* A keypair whose last reference is being dropped is still hashed
	 * until its put() takes the write lock: only take live ones. */
	if (e && e->kind == WG_INDEX_KEYPAIR && wg_keypair_get_unless_zero(e->keypair))
		kp = e->keypair;
	pthread_rwlock_unlock(&t->lock);
	return kp;
}

struct wg_peer *wg_index_get_handshake(struct wg_index_table *t, uint32_t index)
{
	struct wg_peer *peer = NULL;
	struct wg_index_entry *e;

	pthread_rwlock_rdlock(&t->lock);
	e = find(t, index);
	if (e && e->kind == WG_INDEX_HANDSHAKE)
		peer = e->peer;
	pthread_rwlock_unlock(&t->lock);
	return peer;
}
