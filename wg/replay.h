/* The receive replay window: RFC 6479's bitmap of 8192 bits in 64-bit words,
 * so that 8128 counters behind the greatest are tracked. Checked only after
 * a packet has been authenticated. */
#ifndef WEFT_WG_REPLAY_H
#define WEFT_WG_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

enum {
	WG_REPLAY_BITS_TOTAL = 8192,
	WG_REPLAY_WORD_BITS = 64,
	WG_REPLAY_WORDS = WG_REPLAY_BITS_TOTAL / WG_REPLAY_WORD_BITS,
	WG_REPLAY_WINDOW = WG_REPLAY_BITS_TOTAL - WG_REPLAY_WORD_BITS, /* 8128 */
};

/* Guarded by its keypair's receive lock (one writer at a time). */
struct wg_replay {
	uint64_t greatest; /* one more than the greatest counter accepted; 0 = none */
	uint64_t bitmap[WG_REPLAY_WORDS];
};

void wg_replay_init(struct wg_replay *r);
/* True when counter is new, below limit and inside the window; marks it seen. */
bool wg_replay_check(struct wg_replay *r, uint64_t counter, uint64_t limit);

#endif
