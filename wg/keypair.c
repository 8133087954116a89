/* Keypairs: reference counting and the three slots. */
#include "wg/keypair.h"

#include <sodium.h>
#include <string.h>

#include "wg/clock.h"

struct wg_keypair *wg_keypair_new(struct wg_index_table *t, struct wg_peer *peer,
				  const struct wg_noise_session *keys, uint64_t now)
{
	/* sodium_malloc places the object against a guard page; keep the size
	 * a multiple of 64 so the struct stays aligned. */
	size_t size = (sizeof(struct wg_keypair) + 63) & ~(size_t)63;
	struct wg_keypair *kp = sodium_malloc(size);

	if (!kp)
		return NULL;
	memset(kp, 0, size);
	atomic_init(&kp->refcount, 1);
	kp->keys = *keys;
	kp->birthdate = now;
	atomic_init(&kp->send_counter, 0);
	atomic_init(&kp->send_valid, true);
	pthread_spin_init(&kp->replay_lock, PTHREAD_PROCESS_PRIVATE);
	wg_replay_init(&kp->replay);
	kp->table = t;
	kp->entry.kind = WG_INDEX_KEYPAIR;
	kp->entry.peer = peer;
	kp->entry.keypair = kp;
	return kp;
}

bool wg_keypair_get_unless_zero(struct wg_keypair *kp)
{
	int v = atomic_load(&kp->refcount);

	while (v > 0)
		if (atomic_compare_exchange_weak(&kp->refcount, &v, v + 1))
			return true;
	return false;
}

void wg_keypair_get(struct wg_keypair *kp)
{
	atomic_fetch_add(&kp->refcount, 1);
}

void wg_keypair_put(struct wg_keypair *kp)
{
	if (!kp || atomic_fetch_sub(&kp->refcount, 1) != 1)
		return;
	/* wg_index_get_keypair refuses a zero count, and removal waits for
	 * any lookup holding the table's read lock: after this nobody can
	 * reach kp. */
	wg_index_remove(kp->table, &kp->entry);
	pthread_spin_destroy(&kp->replay_lock);
	sodium_free(kp); /* wipes */
}

void wg_keypairs_add(struct wg_keypairs *kps, struct wg_keypair *kp)
{
	if (kp->keys.initiator) {
		/* An unconfirmed next (we were responder a moment ago) becomes
		 * previous so its in-flight packets still open. */
		if (kps->next) {
			wg_keypair_put(kps->previous);
			kps->previous = kps->next;
			kps->next = NULL;
			wg_keypair_put(kps->current);
		} else {
			wg_keypair_put(kps->previous);
			kps->previous = kps->current;
		}
		kps->current = kp;
	} else {
		wg_keypair_put(kps->next);
		kps->next = kp;
		wg_keypair_put(kps->previous);
		kps->previous = NULL;
	}
}

bool wg_keypairs_received_with(struct wg_keypairs *kps, struct wg_keypair *kp)
{
	if (!kp || kps->next != kp)
		return false;
	wg_keypair_put(kps->previous);
	kps->previous = kps->current;
	kps->current = kps->next;
	kps->next = NULL;
	return true;
}

void wg_keypairs_clear(struct wg_keypairs *kps)
{
	struct wg_keypair *slots[3] = { kps->current, kps->previous, kps->next };

	kps->current = kps->previous = kps->next = NULL;
	for (int i = 0; i < 3; i++) {
		if (slots[i])
			atomic_store(&slots[i]->send_valid, false);
		wg_keypair_put(slots[i]);
	}
}

bool wg_keypair_expired(const struct wg_keypair *kp, uint64_t now)
{
	return wg_clock_after(now, kp->birthdate, (uint64_t)WG_REJECT_AFTER_TIME * NSEC_PER_SEC);
}

struct wg_keypair *wg_keypairs_get_sending(struct wg_keypairs *kps, uint64_t now)
{
	struct wg_keypair *kp = kps->current;

	if (!kp || !atomic_load_explicit(&kp->send_valid, memory_order_relaxed) ||
	    wg_keypair_expired(kp, now) ||
	    atomic_load_explicit(&kp->send_counter, memory_order_relaxed) >= WG_REJECT_AFTER_MESSAGES)
		return NULL;
	wg_keypair_get(kp);
	return kp;
}
