/* Keypair slots: the initiator's immediate rotation, the responder's
 * confirmation rule, reference counting and the index table. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>

#include "wg/index.h"
#include "wg/keypair.h"

#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #c);                                 \
			exit(1);                                               \
		}                                                              \
	} while (0)

static struct wg_index_table table;
static struct wg_peer *const PEER = (struct wg_peer *)0x1000;

static struct wg_keypair *make(bool initiator)
{
	struct wg_noise_session s = { .initiator = initiator };
	struct wg_index_entry hs = { .kind = WG_INDEX_HANDSHAKE, .peer = PEER };
	struct wg_keypair *kp;

	wg_index_insert(&table, &hs);
	s.local_index = hs.index;
	kp = wg_keypair_new(&table, PEER, &s, 1);
	CHECK(kp);
	wg_index_replace(&table, &hs, &kp->entry);
	CHECK(kp->entry.index == s.local_index);
	CHECK(!wg_index_get_handshake(&table, s.local_index));
	return kp;
}

static bool findable(struct wg_keypair *kp, uint32_t index)
{
	struct wg_keypair *got = wg_index_get_keypair(&table, index);

	if (got)
		wg_keypair_put(got);
	return got == kp;
}

int main(void)
{
	struct wg_keypairs kps = { 0 };
	struct wg_keypair *a, *b, *c, *got;
	uint32_t ia, ib;

	CHECK(sodium_init() >= 0);
	wg_index_init(&table);

	/* Initiator: the new keypair is current at once. */
	a = make(true);
	ia = a->entry.index;
	wg_keypairs_add(&kps, a);
	CHECK(kps.current == a && !kps.previous && !kps.next);
	got = wg_keypairs_get_sending(&kps, 2);
	CHECK(got == a);
	wg_keypair_put(got);

	/* Responder: the new keypair waits as next; sending still uses a. */
	b = make(false);
	ib = b->entry.index;
	wg_keypairs_add(&kps, b);
	CHECK(kps.current == a && kps.next == b && !kps.previous);
	CHECK(!wg_keypairs_received_with(&kps, a));
	got = wg_keypairs_get_sending(&kps, 2);
	CHECK(got == a);
	wg_keypair_put(got);
	/* The initiator's first data message on b confirms it. */
	CHECK(wg_keypairs_received_with(&kps, b));
	CHECK(kps.current == b && kps.previous == a && !kps.next);
	CHECK(findable(a, ia) && findable(b, ib));

	/* Initiating again pushes b to previous and frees a. */
	c = make(true);
	wg_keypairs_add(&kps, c);
	CHECK(kps.current == c && kps.previous == b && !kps.next);
	CHECK(!findable(NULL, ia) || !wg_index_get_keypair(&table, ia));

	/* An expired keypair is not used for sending. */
	CHECK(!wg_keypairs_get_sending(&kps, 1 + (uint64_t)WG_REJECT_AFTER_TIME * 1000000000ull));

	/* A held reference keeps a cleared keypair alive until put. */
	got = wg_index_get_keypair(&table, c->entry.index);
	CHECK(got == c);
	wg_keypairs_clear(&kps);
	CHECK(!kps.current && !kps.previous && !kps.next);
	CHECK(!atomic_load(&got->send_valid));
	CHECK(!wg_index_get_keypair(&table, ib));
	wg_keypair_put(got);

	wg_index_destroy(&table);
	puts("test_keypairs: ok");
	return 0;
}
