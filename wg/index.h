/* The receiver-index table: maps the 32-bit index we hand to peers onto the
 * handshake or keypair it names. Indices are random, so a plain mask of the
 * index is a fair hash. lock guards the buckets; lookups take it shared. */
#ifndef WEFT_WG_INDEX_H
#define WEFT_WG_INDEX_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct wg_peer;
struct wg_keypair;

enum wg_index_kind {
	WG_INDEX_HANDSHAKE,
	WG_INDEX_KEYPAIR,
};

/* Embedded in a peer (its pending handshake) or a keypair. */
struct wg_index_entry {
	struct wg_index_entry *next;
	uint32_t index;
	enum wg_index_kind kind;
	struct wg_peer *peer;
	struct wg_keypair *keypair; /* for WG_INDEX_KEYPAIR */
	int hashed;
};

enum { WG_INDEX_BUCKETS = 1 << 13 };

struct wg_index_table {
	pthread_rwlock_t lock;
	struct wg_index_entry *buckets[WG_INDEX_BUCKETS];
};

void wg_index_init(struct wg_index_table *t);
void wg_index_destroy(struct wg_index_table *t);
/* Gives e a fresh random index not in use and inserts it; returns it. */
uint32_t wg_index_insert(struct wg_index_table *t, struct wg_index_entry *e);
void wg_index_remove(struct wg_index_table *t, struct wg_index_entry *e);
/* Puts new in old's place under old's index (a handshake becoming a keypair). */
void wg_index_replace(struct wg_index_table *t, struct wg_index_entry *old, struct wg_index_entry *new_e);
/* The keypair with this index, with a reference taken; NULL when none. */
struct wg_keypair *wg_index_get_keypair(struct wg_index_table *t, uint32_t index);
/* The peer whose pending handshake has this index; valid while the caller
 * holds the device lock. */
struct wg_peer *wg_index_get_handshake(struct wg_index_table *t, uint32_t index);

#endif
