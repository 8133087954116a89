/* Session keypairs and the per-peer current/previous/next slots with the
 * responder's confirmation rule (whitepaper §5.4.6, §6.1). */
#ifndef WEFT_WG_KEYPAIR_H
#define WEFT_WG_KEYPAIR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "wg/index.h"
#include "wg/noise.h"
#include "wg/replay.h"

/* Immutable after creation except the atomics and the replay window.
 * Lives in sodium_malloc memory (guarded, wiped, out of core dumps). */
struct wg_keypair {
	_Atomic int refcount;
	struct wg_index_entry entry;   /* entry.peer is the owner */
	struct wg_index_table *table;
	struct wg_noise_session keys;
	uint64_t birthdate;            /* protocol clock */
	_Atomic uint64_t send_counter; /* next nonce */
	_Atomic bool send_valid;       /* cleared when keys are zeroed */
	pthread_spinlock_t replay_lock; /* guards replay */
	struct wg_replay replay;
};

/* Slots guarded by the peer's lock; each slot holds one reference. */
struct wg_keypairs {
	struct wg_keypair *current;
	struct wg_keypair *previous;
	struct wg_keypair *next;
};

/* A new keypair (refcount 1). The caller hashes kp->entry, normally with
 * wg_index_replace over the handshake's entry, whose index it inherits. */
struct wg_keypair *wg_keypair_new(struct wg_index_table *t, struct wg_peer *peer,
				  const struct wg_noise_session *keys, uint64_t now);
bool wg_keypair_get_unless_zero(struct wg_keypair *kp);
void wg_keypair_get(struct wg_keypair *kp);
/* Drops a reference; the last one unhashes, wipes and frees. NULL is fine. */
void wg_keypair_put(struct wg_keypair *kp);

/* Installs a new keypair: the initiator makes it current at once, the
 * responder keeps it as next until the initiator's first data message. */
void wg_keypairs_add(struct wg_keypairs *kps, struct wg_keypair *kp);
/* Called when data arrived on kp: promotes next to current when kp is next.
 * True when that happened (the handshake is now confirmed). */
bool wg_keypairs_received_with(struct wg_keypairs *kps, struct wg_keypair *kp);
/* Drops all three (key expiry, peer removal, key change). */
void wg_keypairs_clear(struct wg_keypairs *kps);

/* The current keypair if it may still seal, with a reference; else NULL. */
struct wg_keypair *wg_keypairs_get_sending(struct wg_keypairs *kps, uint64_t now);
bool wg_keypair_expired(const struct wg_keypair *kp, uint64_t now);

#endif
