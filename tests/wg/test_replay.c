/* The replay window against the kernel's self-test sequence
 * (drivers/net/wireguard/selftest/counter.c) and against a naive model: a
 * plain set of accepted counters plus counter_validate()'s window rule. */
#include "wg/messages.h"
#include "wg/replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond) do {                                                      \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: check failed: %s\n",         \
				__FILE__, __LINE__, #cond);                   \
			exit(1);                                              \
		}                                                             \
	} while (0)

/* The kernel's REJECT_AFTER_MESSAGES, which its self-test uses. */
#define LIMIT WG_REJECT_AFTER_MESSAGES

static struct wg_replay r;
static unsigned int test_num;

static void t(uint64_t n, bool want)
{
	test_num++;
	if (wg_replay_check(&r, n, LIMIT) != want) {
		fprintf(stderr, "kernel sequence test %u: counter %llu should be %s\n",
			test_num, (unsigned long long)n, want ? "accepted" : "rejected");
		exit(1);
	}
}

static void test_kernel_sequence(void)
{
	const uint64_t lim = WG_REPLAY_WINDOW + 1; /* the kernel's T_LIM */
	uint64_t i;

	wg_replay_init(&r);
	t(0, true);
	t(1, true);
	t(1, false);
	t(9, true);
	t(8, true);
	t(7, true);
	t(7, false);
	t(lim, true);
	t(lim - 1, true);
	t(lim - 1, false);
	t(lim - 2, true);
	t(2, true);
	t(2, false);
	t(lim + 16, true);
	t(3, false);
	t(lim + 16, false);
	t(lim * 4, true);
	t(lim * 4 - (lim - 1), true);
	t(10, false);
	t(lim * 4 - lim, false);
	t(lim * 4 - (lim + 1), false);
	t(lim * 4 - (lim - 2), true);
	t(lim * 4 + 1 - lim, false);
	t(0, false);
	t(LIMIT, false);
	t(LIMIT - 1, true);
	t(LIMIT, false);
	t(LIMIT - 1, false);
	t(LIMIT - 2, true);
	t(LIMIT + 1, false);
	t(LIMIT + 2, false);
	t(LIMIT - 2, false);
	t(LIMIT - 3, true);
	t(0, false);

	wg_replay_init(&r);
	for (i = 1; i <= WG_REPLAY_WINDOW; i++)
		t(i, true);
	t(0, true);
	t(0, false);

	wg_replay_init(&r);
	for (i = 2; i <= WG_REPLAY_WINDOW + 1; i++)
		t(i, true);
	t(1, true);
	t(0, false);

	wg_replay_init(&r);
	for (i = WG_REPLAY_WINDOW + 1; i-- > 0;)
		t(i, true);

	wg_replay_init(&r);
	for (i = WG_REPLAY_WINDOW + 2; i-- > 1;)
		t(i, true);
	t(0, false);

	wg_replay_init(&r);
	for (i = WG_REPLAY_WINDOW + 1; i-- > 1;)
		t(i, true);
	t(WG_REPLAY_WINDOW + 1, true);
	t(0, false);

	wg_replay_init(&r);
	for (i = WG_REPLAY_WINDOW + 1; i-- > 1;)
		t(i, true);
	t(0, true);
	t(WG_REPLAY_WINDOW + 1, true);
}

/* The model: every accepted counter in an open-addressing set. */
enum { SET_BITS = 18, SET_SIZE = 1 << SET_BITS, MAX_OPS = SET_SIZE / 2 };

struct model {
	uint64_t slot[SET_SIZE];
	bool used[SET_SIZE];
	bool any;
	uint64_t largest;
	size_t n;
};

static struct model m;

static void model_init(void)
{
	memset(&m, 0, sizeof(m));
}

static bool *model_slot(uint64_t c, size_t *at)
{
	size_t i = (size_t)((c * 0x9e3779b97f4a7c15ull) >> (64 - SET_BITS));

	while (m.used[i] && m.slot[i] != c)
		i = (i + 1) & (SET_SIZE - 1);
	*at = i;
	return &m.used[i];
}

/* counter_validate(): below the limit, not seen, and no older than the
 * window behind the largest accepted (the difference form cannot wrap). */
static bool model_check(uint64_t c, uint64_t limit)
{
	size_t at;
	bool *used;

	if (c >= limit)
		return false;
	if (m.any && c < m.largest && m.largest - c > WG_REPLAY_WINDOW)
		return false;
	used = model_slot(c, &at);
	if (*used)
		return false;
	CHECK(m.n < MAX_OPS);
	*used = true;
	m.slot[at] = c;
	m.n++;
	if (!m.any || c > m.largest)
		m.largest = c;
	m.any = true;
	return true;
}

static uint64_t rng_state = 0x853c49e6748fea9bull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static size_t accepted;

static void both(uint64_t c, uint64_t limit)
{
	bool want = model_check(c, limit), got = wg_replay_check(&r, c, limit);

	if (want != got) {
		fprintf(stderr, "counter %llu (limit %llu): got %d want %d\n",
			(unsigned long long)c, (unsigned long long)limit, got, want);
		exit(1);
	}
	accepted += got;
	/* The header documents greatest as one more than the largest accepted. */
	CHECK(r.greatest == (m.any ? m.largest + 1 : 0));
}

/* Offsets that sit on the window's edges and on word boundaries. */
static const int64_t edges[] = {
	0, 1, -1, 63, 64, 65, -63, -64, -65,
	WG_REPLAY_WINDOW - 1, WG_REPLAY_WINDOW, WG_REPLAY_WINDOW + 1,
	-(WG_REPLAY_WINDOW - 1), -WG_REPLAY_WINDOW, -(WG_REPLAY_WINDOW + 1),
	WG_REPLAY_BITS_TOTAL - 1, WG_REPLAY_BITS_TOTAL, WG_REPLAY_BITS_TOTAL + 1,
	-(WG_REPLAY_BITS_TOTAL - 1), -WG_REPLAY_BITS_TOTAL, -(WG_REPLAY_BITS_TOTAL + 1),
	2 * WG_REPLAY_BITS_TOTAL, 3 * WG_REPLAY_WINDOW + 7,
};

/* One sequence of n counters starting near base, in one of several shapes. */
static void run_sequence(int shape, uint64_t base, uint64_t limit, size_t n)
{
	uint64_t head = base;

	wg_replay_init(&r);
	model_init();
	for (size_t i = 0; i < n; i++) {
		uint64_t c;

		switch (shape) {
		case 0: /* in order */
			c = base + i;
			break;
		case 1: /* reversed */
			c = base + n - 1 - i;
			break;
		case 2: /* every counter twice, the copy a little late */
			c = base + i / 2 - (i % 2) * (rnd() % 8);
			break;
		case 3: /* a moving head with reordering up to 1.5 windows back */
			head += rnd() % 4;
			c = head - rnd() % (WG_REPLAY_WINDOW * 3 / 2);
			break;
		case 4: /* jumps onto the window's edges from the largest so far */
			c = (m.any ? m.largest : base) + (uint64_t)edges[rnd() % (sizeof(edges) / sizeof(edges[0]))];
			break;
		default: /* big jumps forward with stragglers */
			if (rnd() % 16 == 0)
				head += rnd() % (4 * WG_REPLAY_BITS_TOTAL);
			c = head - rnd() % 64;
			break;
		}
		both(c, limit);
	}
}

static void test_model(void)
{
	const uint64_t bases[] = { 0, 1, 63, 64, WG_REPLAY_WINDOW, 1ull << 40,
				   LIMIT - 20000, UINT64_MAX - 20000 };
	const uint64_t limits[] = { LIMIT, UINT64_MAX, 30000 };

	for (int shape = 0; shape < 6; shape++)
		for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++)
			for (size_t l = 0; l < sizeof(limits) / sizeof(limits[0]); l++)
				run_sequence(shape, bases[b], limits[l], 30000);
	/* Wrapping at 2^64 in the generators only produces rejections; make
	 * sure the runs also accepted plenty. */
	CHECK(accepted > 100000);

	/* A full reset by a far jump: everything behind is now too old. */
	wg_replay_init(&r);
	for (uint64_t i = 0; i < 100; i++)
		CHECK(wg_replay_check(&r, i, LIMIT));
	CHECK(wg_replay_check(&r, 1ull << 50, LIMIT));
	CHECK(!wg_replay_check(&r, 99, LIMIT));
	CHECK(wg_replay_check(&r, (1ull << 50) - 1, LIMIT));
	CHECK(wg_replay_check(&r, (1ull << 50) - WG_REPLAY_WINDOW, LIMIT));
	CHECK(!wg_replay_check(&r, (1ull << 50) - WG_REPLAY_WINDOW - 1, LIMIT));

	/* The last counters below 2^64 - 1 with no limit to speak of. */
	wg_replay_init(&r);
	CHECK(!wg_replay_check(&r, UINT64_MAX, UINT64_MAX));
	CHECK(wg_replay_check(&r, UINT64_MAX - 1, UINT64_MAX));
	CHECK(!wg_replay_check(&r, UINT64_MAX - 1, UINT64_MAX));
	CHECK(wg_replay_check(&r, UINT64_MAX - 1 - WG_REPLAY_WINDOW, UINT64_MAX));
	CHECK(!wg_replay_check(&r, UINT64_MAX - 2 - WG_REPLAY_WINDOW, UINT64_MAX));
}

int main(void)
{
	test_kernel_sequence();
	test_model();
	printf("test_replay: ok\n");
	return 0;
}
