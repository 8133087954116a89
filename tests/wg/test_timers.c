/* The per-peer timer rules, driven with a fake clock. */
#include <stdio.h>
#include <stdlib.h>

#include "wg/clock.h"
#include "wg/messages.h"
#include "wg/timers.h"

#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #c);                                 \
			exit(1);                                               \
		}                                                              \
	} while (0)

static const uint64_t S = NSEC_PER_SEC;
static const uint64_t T0 = 1000 * NSEC_PER_SEC;

/* Runs the timers from `from` to `to` in 10 ms steps, OR-ing the actions. */
static unsigned int run(struct wg_timers *t, uint64_t from, uint64_t to)
{
	unsigned int all = 0;

	for (uint64_t now = from; now <= to; now += 10 * NSEC_PER_MSEC)
		all |= wg_timers_due(t, now);
	return all;
}

static void retransmit_and_give_up(void)
{
	struct wg_timers t = { 0 };
	uint64_t now = T0;
	int retries = 0;

	wg_timers_init(&t);
	wg_timers_handshake_initiated(&t, now);
	/* No retry before REKEY_TIMEOUT, one within the jitter after it. */
	CHECK(!(run(&t, now, now + WG_REKEY_TIMEOUT * S - 10 * NSEC_PER_MSEC) & WG_TIMER_SEND_INITIATION));
	for (;;) {
		unsigned int a = 0;
		uint64_t until = now + (WG_REKEY_TIMEOUT + 1) * S;

		for (; now <= until && !a; now += 10 * NSEC_PER_MSEC)
			a = wg_timers_due(&t, now);
		CHECK(a);
		if (a & WG_TIMER_GIVE_UP)
			break;
		CHECK(a == WG_TIMER_SEND_INITIATION);
		retries++;
		wg_timers_handshake_initiated(&t, now);
	}
	/* REKEY_ATTEMPT_TIME / REKEY_TIMEOUT = 18 retries, then give up. */
	CHECK(retries == WG_MAX_TIMER_HANDSHAKES + 1);
	CHECK(t.zero_key_material);
	CHECK(!t.retransmit_handshake);
}

static void complete_stops_retries(void)
{
	struct wg_timers t = { 0 };

	wg_timers_handshake_initiated(&t, T0);
	wg_timers_handshake_complete(&t);
	CHECK(!run(&t, T0, T0 + 30 * S));
	CHECK(t.handshake_attempts == 0);
}

static void keepalive_after_receive(void)
{
	struct wg_timers t = { 0 };

	wg_timers_data_received(&t, T0);
	CHECK(!(run(&t, T0, T0 + WG_KEEPALIVE_TIMEOUT * S - 10 * NSEC_PER_MSEC) & WG_TIMER_SEND_KEEPALIVE));
	CHECK(wg_timers_due(&t, T0 + WG_KEEPALIVE_TIMEOUT * S) & WG_TIMER_SEND_KEEPALIVE);
	/* Sending anything authenticated cancels the pending keepalive. */
	wg_timers_data_received(&t, T0 + 20 * S);
	wg_timers_any_authenticated_packet_sent(&t);
	CHECK(!run(&t, T0 + 20 * S, T0 + 40 * S));
	/* A second receive while one is pending asks for another keepalive. */
	wg_timers_data_received(&t, T0 + 50 * S);
	wg_timers_data_received(&t, T0 + 51 * S);
	CHECK(wg_timers_due(&t, T0 + 60 * S) & WG_TIMER_SEND_KEEPALIVE);
	CHECK(wg_timers_due(&t, T0 + 70 * S) & WG_TIMER_SEND_KEEPALIVE);
	CHECK(!run(&t, T0 + 70 * S, T0 + 90 * S));
}

static void new_handshake_when_unanswered(void)
{
	struct wg_timers t = { 0 };
	uint64_t due = (WG_KEEPALIVE_TIMEOUT + WG_REKEY_TIMEOUT) * S;

	wg_timers_data_sent(&t, T0);
	CHECK(!(run(&t, T0, T0 + due - 10 * NSEC_PER_MSEC) & WG_TIMER_NEW_HANDSHAKE));
	CHECK(run(&t, T0 + due, T0 + due + S) & WG_TIMER_NEW_HANDSHAKE);
	/* An answer in time disarms it. */
	wg_timers_data_sent(&t, T0 + 100 * S);
	wg_timers_any_authenticated_packet_received(&t);
	CHECK(!run(&t, T0 + 100 * S, T0 + 130 * S));
}

static void zero_keys_after_three_reject_times(void)
{
	struct wg_timers t = { 0 };
	uint64_t due = 3 * WG_REJECT_AFTER_TIME * S;

	wg_timers_session_derived(&t, T0);
	CHECK(!wg_timers_due(&t, T0 + due - 1));
	CHECK(wg_timers_due(&t, T0 + due) == WG_TIMER_ZERO_KEYS);
	CHECK(wg_timers_next(&t) == 0);
}

static void persistent_keepalive(void)
{
	struct wg_timers t = { 0 };

	wg_timers_any_authenticated_packet_traversal(&t, T0);
	CHECK(!t.persistent_keepalive); /* off by default */
	t.persistent_keepalive_interval = 25;
	wg_timers_any_authenticated_packet_traversal(&t, T0);
	CHECK(wg_timers_next(&t) == T0 + 25 * S);
	CHECK(!wg_timers_due(&t, T0 + 25 * S - 1));
	CHECK(wg_timers_due(&t, T0 + 25 * S) == WG_TIMER_SEND_KEEPALIVE);
	/* init keeps the configured interval. */
	wg_timers_init(&t);
	CHECK(t.persistent_keepalive_interval == 25);
}

int main(void)
{
	retransmit_and_give_up();
	complete_stops_retries();
	keepalive_after_receive();
	new_handshake_when_unanswered();
	zero_keys_after_three_reject_times();
	persistent_keepalive();
	puts("test_timers: ok");
	return 0;
}
