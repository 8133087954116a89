/* The receive replay window (RFC 6479): a ring of 64-bit words where bit
 * ((counter + 1) mod 8192) records counter, so that sliding forward clears
 * whole words instead of shifting the bitmap.
 *
 * The acceptance rule is the kernel's counter_validate(): a counter is
 * accepted when it is below limit, not seen before, and
 * counter + WG_REPLAY_WINDOW >= the largest counter accepted so far. The
 * ring's newest word is only partly filled, which is why 8192 bits buy a
 * window of 8192 - 64. */
#include "wg/replay.h"

#include <string.h>

_Static_assert((WG_REPLAY_WORDS & (WG_REPLAY_WORDS - 1)) == 0,
	       "the ring index is taken with a mask");

void wg_replay_init(struct wg_replay *r)
{
	memset(r, 0, sizeof(*r));
}

bool wg_replay_check(struct wg_replay *r, uint64_t counter, uint64_t limit)
{
	uint64_t c, word, bit;

	/* counter < limit <= UINT64_MAX, so counter + 1 cannot wrap. */
	if (counter >= limit)
		return false;
	c = counter + 1;
	/* Too old: written as a difference so that nothing can overflow. */
	if (c < r->greatest && r->greatest - c > WG_REPLAY_WINDOW)
		return false;

	word = c / WG_REPLAY_WORD_BITS;
	if (c > r->greatest) {
		uint64_t current = r->greatest / WG_REPLAY_WORD_BITS;
		uint64_t advance = word - current;

		/* Clear the words the window slides onto; beyond a full turn
		 * of the ring, every word. */
		if (advance > WG_REPLAY_WORDS)
			advance = WG_REPLAY_WORDS;
		for (uint64_t i = 1; i <= advance; i++)
			r->bitmap[(current + i) & (WG_REPLAY_WORDS - 1)] = 0;
		r->greatest = c;
	}
	word &= WG_REPLAY_WORDS - 1;
	bit = 1ull << (c & (WG_REPLAY_WORD_BITS - 1));
	if (r->bitmap[word] & bit)
		return false;
	r->bitmap[word] |= bit;
	return true;
}
