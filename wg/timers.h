/* WireGuard's per-peer timers (whitepaper §6; the kernel's timers.c is the
 * behavioural reference). Timers are deadlines on the protocol clock, 0 when
 * off; events arm and disarm them, and wg_timers_due() says what expired.
 * Everything here is guarded by the owning peer's lock. */
#ifndef WEFT_WG_TIMERS_H
#define WEFT_WG_TIMERS_H

#include <stdbool.h>
#include <stdint.h>

struct wg_timers {
	uint64_t retransmit_handshake;
	uint64_t send_keepalive;
	uint64_t new_handshake;
	uint64_t zero_key_material;
	uint64_t persistent_keepalive;
	unsigned int handshake_attempts;
	bool need_another_keepalive;
	uint16_t persistent_keepalive_interval; /* seconds, 0 = off */
};

/* What expired timers ask the caller to do. */
enum wg_timer_action {
	WG_TIMER_SEND_INITIATION = 1 << 0,  /* a retry of the handshake */
	WG_TIMER_GIVE_UP = 1 << 1,          /* stop retrying: drop staged packets */
	WG_TIMER_SEND_KEEPALIVE = 1 << 2,
	WG_TIMER_NEW_HANDSHAKE = 1 << 3,    /* sent data, heard nothing back */
	WG_TIMER_ZERO_KEYS = 1 << 4,
};

void wg_timers_init(struct wg_timers *t);
void wg_timers_stop(struct wg_timers *t);

void wg_timers_data_sent(struct wg_timers *t, uint64_t now);
void wg_timers_data_received(struct wg_timers *t, uint64_t now);
void wg_timers_any_authenticated_packet_sent(struct wg_timers *t);
void wg_timers_any_authenticated_packet_received(struct wg_timers *t);
void wg_timers_handshake_initiated(struct wg_timers *t, uint64_t now);
void wg_timers_handshake_complete(struct wg_timers *t);
void wg_timers_session_derived(struct wg_timers *t, uint64_t now);
void wg_timers_any_authenticated_packet_traversal(struct wg_timers *t, uint64_t now);

/* Fires every expired timer: disarms it (or rearms it where the rule says
 * so) and returns the wg_timer_action bits for the caller to carry out. */
unsigned int wg_timers_due(struct wg_timers *t, uint64_t now);
/* The earliest armed deadline, or 0. */
uint64_t wg_timers_next(const struct wg_timers *t);

#endif
