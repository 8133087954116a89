/* Per-peer timers as deadlines. The rules and their reasons follow the
 * whitepaper §6 and the kernel's timers.c. */
#include "wg/timers.h"

#include <sodium.h>
#include <string.h>

#include "wg/clock.h"
#include "wg/messages.h"

static uint64_t secs(uint64_t s)
{
	return s * NSEC_PER_SEC;
}

/* Up to a third of a second of jitter keeps peers from retrying in lockstep. */
static uint64_t jitter(void)
{
	return (uint64_t)randombytes_uniform(WG_REKEY_TIMEOUT_JITTER_MAX_MS) * NSEC_PER_MSEC;
}

void wg_timers_init(struct wg_timers *t)
{
	uint16_t interval = t->persistent_keepalive_interval;

	memset(t, 0, sizeof(*t));
	t->persistent_keepalive_interval = interval;
}

void wg_timers_stop(struct wg_timers *t)
{
	wg_timers_init(t);
}

/* Sent data: if nothing authenticated comes back in time, start over. */
void wg_timers_data_sent(struct wg_timers *t, uint64_t now)
{
	if (!t->new_handshake)
		t->new_handshake = now + secs(WG_KEEPALIVE_TIMEOUT + WG_REKEY_TIMEOUT) + jitter();
}

/* Received data: answer with a keepalive if we send nothing ourselves. */
void wg_timers_data_received(struct wg_timers *t, uint64_t now)
{
	if (!t->send_keepalive)
		t->send_keepalive = now + secs(WG_KEEPALIVE_TIMEOUT);
	else
		t->need_another_keepalive = true;
}

void wg_timers_any_authenticated_packet_sent(struct wg_timers *t)
{
	t->send_keepalive = 0;
}

void wg_timers_any_authenticated_packet_received(struct wg_timers *t)
{
	t->new_handshake = 0;
}

void wg_timers_handshake_initiated(struct wg_timers *t, uint64_t now)
{
	t->retransmit_handshake = now + secs(WG_REKEY_TIMEOUT) + jitter();
}

void wg_timers_handshake_complete(struct wg_timers *t)
{
	t->retransmit_handshake = 0;
	t->handshake_attempts = 0;
}

/* Keys are wiped if no new session replaces them within three reject times. */
void wg_timers_session_derived(struct wg_timers *t, uint64_t now)
{
	t->zero_key_material = now + secs(3 * WG_REJECT_AFTER_TIME);
}

void wg_timers_any_authenticated_packet_traversal(struct wg_timers *t, uint64_t now)
{
	if (t->persistent_keepalive_interval)
		t->persistent_keepalive = now + secs(t->persistent_keepalive_interval);
}

static bool expired(uint64_t deadline, uint64_t now)
{
	return deadline && now >= deadline;
}

unsigned int wg_timers_due(struct wg_timers *t, uint64_t now)
{
	unsigned int actions = 0;

	if (expired(t->retransmit_handshake, now)) {
		t->retransmit_handshake = 0;
		if (t->handshake_attempts > WG_MAX_TIMER_HANDSHAKES) {
			actions |= WG_TIMER_GIVE_UP;
			t->send_keepalive = 0;
			/* Nothing will replace the old keys now: wipe them
			 * later unless something else arms the timer first. */
			if (!t->zero_key_material)
				t->zero_key_material = now + secs(3 * WG_REJECT_AFTER_TIME);
		} else {
			t->handshake_attempts++;
			actions |= WG_TIMER_SEND_INITIATION;
		}
	}
	if (expired(t->send_keepalive, now)) {
		t->send_keepalive = 0;
		actions |= WG_TIMER_SEND_KEEPALIVE;
		if (t->need_another_keepalive) {
			t->need_another_keepalive = false;
			t->send_keepalive = now + secs(WG_KEEPALIVE_TIMEOUT);
		}
	}
	if (expired(t->new_handshake, now)) {
		t->new_handshake = 0;
		actions |= WG_TIMER_NEW_HANDSHAKE;
	}
	if (expired(t->zero_key_material, now)) {
		t->zero_key_material = 0;
		actions |= WG_TIMER_ZERO_KEYS;
	}
	if (expired(t->persistent_keepalive, now)) {
		t->persistent_keepalive = 0;
		if (t->persistent_keepalive_interval)
			actions |= WG_TIMER_SEND_KEEPALIVE;
	}
	return actions;
}

uint64_t wg_timers_next(const struct wg_timers *t)
{
	const uint64_t d[] = { t->retransmit_handshake, t->send_keepalive, t->new_handshake,
			       t->zero_key_material, t->persistent_keepalive };
	uint64_t next = 0;

	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++)
		if (d[i] && (!next || d[i] < next))
			next = d[i];
	return next;
}
