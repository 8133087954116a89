/* Writes the seed corpora of the fuzz targets: real messages made by the
 * production functions (handshake messages from the remote of hs_fixture,
 * data-message plaintexts, UAPI set requests, signed leases), and TUN reads
 * and received packets as Linux makes them (built here field by field,
 * checksums by a naive sum, not by the offload code under test), each
 * behind the target's mode byte. Usage: gen_corpus DIR (normally
 * fuzz/corpus); it writes DIR/<target>/<name>, overwriting files of the
 * same name. */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <sodium.h>

#include "crypto/tai64n.h"
#include "fuzz/hs_fixture.h"
#include "mesh/lease.h"
#include "tun/offload.h"
#include "wg/clock.h"

/* The modes and flag bits of the targets (fuzz_handshake.c, fuzz_receive.c). */
enum {
	HS_MESSAGE = 0,
	HS_BUILD = 1,
	HS_INITIATE = 2,
	HS_INITIATE_TWICE = 3,
	HS_RECENT_LOAD = 1 << 2, /* in the mode byte */
	HS_NO_ENDPOINT = 1 << 3,
	HS_FIX_MACS = 1 << 0,
	HS_SRC_V6 = 1 << 1,
	HS_HAS_COOKIE = 1 << 2,
	HS_LIVE_INDEX = 1 << 3,
	HS_PENDING = 1 << 4,
	HS_FLOOD = 1 << 5,
	HS_RL_SPENT = 1 << 6,
	HS_IDLE = 0,           /* queued values: nothing else waiting */
	HS_LOAD = 128,         /* WG_HSQ_UNDER_LOAD */
	HS_FULL = 1024,        /* WG_HSQ_CAPACITY */
	OFF_SPLIT = 0,         /* fuzz_offload.c */
	OFF_GRO = 1,
	OFF_COPY = 1 << 1,
	OFF_VERIFY = 1 << 1,
	RX_RAW = 0,
	RX_INDEX = 1,
	RX_SEAL = 2,
	RX_RESPONDER = 1 << 2,
	RX_SRC_V6 = 1 << 3,
};

static const char *out_dir;

static void make_dir(const char *path)
{
	if (mkdir(path, 0755) && errno != EEXIST) {
		perror(path);
		exit(1);
	}
}

/* mode < 0: the target takes no mode byte. */
static void seed(const char *target, const char *name, int mode, const void *body, size_t len)
{
	char path[4096];
	uint8_t m = (uint8_t)mode;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", out_dir, target);
	make_dir(path);
	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, target, name);
	f = fopen(path, "wb");
	if (!f || (mode >= 0 && fwrite(&m, 1, 1, f) != 1) ||
	    (len && fwrite(body, 1, len, f) != len) || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* ---- fuzz_handshake ---------------------------------------------------- */

static struct hs_fixture fx;

/* The target's header (mode, flags, queued little-endian), then body. */
static void hs_seed(const char *name, uint8_t mode, uint8_t flags, uint16_t queued,
		    const void *body, size_t len)
{
	uint8_t buf[4 + 256];

	if (len > sizeof(buf) - 4)
		abort();
	buf[0] = flags;
	buf[1] = (uint8_t)queued;
	buf[2] = (uint8_t)(queued >> 8);
	memcpy(buf + 3, body, len);
	seed("fuzz_handshake", name, mode, buf, 3 + len);
}

static void handshake_seeds(uint64_t now)
{
	struct wg_noise_handshake rhs = { 0 };
	struct wg_noise_identity stranger;
	struct wg_noise_initiation in;
	struct wg_msg_initiation init;
	struct wg_msg_response resp;
	struct wg_msg_cookie cookie;
	struct wg_cookie_maker m;
	uint8_t key[WG_KEY_LEN], mask[sizeof(resp)];
	struct {
		uint8_t private_key[WG_KEY_LEN];
		uint8_t ephemeral[WG_KEY_LEN];
		uint8_t timestamp[2][WG_TIMESTAMP_LEN];
	} b;
	struct timespec t1 = { .tv_sec = 1700000000, .tv_nsec = 1 << 24 };
	struct timespec t2 = { .tv_sec = 1700000100, .tv_nsec = 0 };

	/* An initiation from the remote, by wg_noise_create_initiation, with
	 * the mac1 it computes (mac1 depends on the device's key alone, so it
	 * holds in every process; a mac2 needs HS_FIX_MACS, being bound to the
	 * harness's source port). */
	wg_noise_handshake_init(&rhs, &fx.remote, fx.local.static_public, fx.psk);
	if (!wg_noise_create_initiation(&init, &rhs, &fx.remote, HS_IDX_REMOTE))
		abort();
	m = fx.remote_maker;
	wg_cookie_add_macs(&m, (uint8_t *)&init, sizeof(init), now);
	hs_seed("init_valid", HS_MESSAGE, 0, HS_IDLE, &init, sizeof(init));
	hs_seed("init_valid_v6", HS_MESSAGE, HS_SRC_V6, 1, &init, sizeof(init));
	hs_seed("init_fixmacs", HS_MESSAGE, HS_FIX_MACS, HS_LOAD - 1, &init, sizeof(init));
	hs_seed("init_load_needs_cookie", HS_MESSAGE, 0, HS_LOAD, &init, sizeof(init));
	hs_seed("init_load_cookie_dance", HS_MESSAGE, HS_FIX_MACS, HS_FULL, &init, sizeof(init));
	hs_seed("init_load_has_cookie_v6", HS_MESSAGE, HS_FIX_MACS | HS_HAS_COOKIE | HS_SRC_V6,
		HS_LOAD, &init, sizeof(init));
	hs_seed("init_load_ratelimited", HS_MESSAGE, HS_FIX_MACS | HS_HAS_COOKIE | HS_RL_SPENT,
		HS_LOAD + 1, &init, sizeof(init));
	hs_seed("init_flood", HS_MESSAGE, HS_FLOOD, HS_IDLE, &init, sizeof(init));
	hs_seed("init_while_pending", HS_MESSAGE, HS_PENDING, HS_IDLE, &init, sizeof(init));
	hs_seed("init_load_tail_dance", HS_MESSAGE | HS_RECENT_LOAD, HS_FIX_MACS, HS_IDLE, &init,
		sizeof(init));
	hs_seed("init_no_endpoint_v6", HS_MESSAGE | HS_NO_ENDPOINT, HS_SRC_V6, HS_IDLE, &init,
		sizeof(init));
	init.header.type = WG_MSG_HANDSHAKE_RESPONSE;
	hs_seed("init_wrong_type", HS_MESSAGE, 0, HS_IDLE, &init, sizeof(init));
	init.header.type = WG_MSG_HANDSHAKE_INITIATION;
	hs_seed("init_short", HS_MESSAGE, 0, HS_IDLE, &init, sizeof(init) - 1);
	init.macs.mac1[0] ^= 1;
	hs_seed("init_bad_mac1", HS_MESSAGE, 0, HS_IDLE, &init, sizeof(init));
	init.macs.mac1[0] ^= 1;
	init.encrypted_static[0] ^= 1;
	hs_seed("init_garbled_static", HS_MESSAGE, HS_FIX_MACS, HS_IDLE, &init, sizeof(init));

	/* One from a key that is not our peer's. */
	memset(key, 0x77, sizeof(key));
	wg_noise_identity_set(&stranger, key);
	memset(&rhs, 0, sizeof(rhs));
	wg_noise_handshake_init(&rhs, &stranger, fx.local.static_public, NULL);
	if (!wg_noise_create_initiation(&init, &rhs, &stranger, HS_IDX_REMOTE))
		abort();
	m = fx.remote_maker;
	wg_cookie_add_macs(&m, (uint8_t *)&init, sizeof(init), now);
	hs_seed("init_unknown_peer", HS_MESSAGE, 0, HS_IDLE, &init, sizeof(init));

	/* The remote's response to the fixture's pending initiation. Its
	 * receiver index is the fixture's; HS_LIVE_INDEX puts the device's
	 * over it, and mac1 (which covers it) is then the harness's. */
	memset(&rhs, 0, sizeof(rhs));
	wg_noise_handshake_init(&rhs, &fx.remote, fx.local.static_public, fx.psk);
	if (!wg_noise_open_initiation(&in, &fx.pending, &fx.remote) ||
	    !wg_noise_accept_initiation(&rhs, &in) ||
	    !wg_noise_create_response(&resp, &rhs, &fx.remote, HS_IDX_REMOTE))
		abort();
	m = fx.remote_maker;
	wg_cookie_add_macs(&m, (uint8_t *)&resp, sizeof(resp), now);
	hs_seed("resp_pending", HS_MESSAGE, HS_PENDING | HS_LIVE_INDEX | HS_FIX_MACS, HS_IDLE,
		&resp, sizeof(resp));
	hs_seed("resp_pending_v6", HS_MESSAGE, HS_PENDING | HS_LIVE_INDEX | HS_FIX_MACS | HS_SRC_V6,
		HS_IDLE, &resp, sizeof(resp));
	hs_seed("resp_pending_load_dance", HS_MESSAGE,
		HS_PENDING | HS_LIVE_INDEX | HS_FIX_MACS | HS_SRC_V6, HS_LOAD, &resp, sizeof(resp));
	hs_seed("resp_pending_load_cookie", HS_MESSAGE,
		HS_PENDING | HS_LIVE_INDEX | HS_FIX_MACS | HS_HAS_COOKIE, HS_FULL, &resp, sizeof(resp));
	hs_seed("resp_not_pending", HS_MESSAGE, HS_LIVE_INDEX | HS_FIX_MACS, HS_IDLE, &resp,
		sizeof(resp));
	hs_seed("resp_stale_index", HS_MESSAGE, HS_PENDING, HS_IDLE, &resp, sizeof(resp));
	resp.encrypted_nothing[3] ^= 0x80;
	hs_seed("resp_bad_tag", HS_MESSAGE, HS_PENDING | HS_LIVE_INDEX | HS_FIX_MACS, HS_IDLE,
		&resp, sizeof(resp));

	/* The remote's cookie reply to the fixture's pending initiation. */
	if (!wg_cookie_create_reply(&cookie, &fx.remote_checker, (const uint8_t *)&fx.pending,
				    sizeof(fx.pending), HS_IDX_LOCAL_PENDING, &fx.local_addr, now))
		abort();
	hs_seed("cookie_pending", HS_MESSAGE, HS_PENDING | HS_LIVE_INDEX, HS_IDLE, &cookie,
		sizeof(cookie));
	hs_seed("cookie_pending_load", HS_MESSAGE, HS_PENDING | HS_LIVE_INDEX | HS_SRC_V6, HS_FULL,
		&cookie, sizeof(cookie));
	hs_seed("cookie_not_pending", HS_MESSAGE, HS_LIVE_INDEX, HS_IDLE, &cookie, sizeof(cookie));
	hs_seed("cookie_stale_index", HS_MESSAGE, HS_PENDING, HS_IDLE, &cookie, sizeof(cookie));

	/* Harness-built initiation pairs. */
	memcpy(b.private_key, fx.remote.static_private, WG_KEY_LEN);
	memset(b.ephemeral, 0x5e, sizeof(b.ephemeral));
	tai64n_encode(b.timestamp[0], &t1);
	tai64n_encode(b.timestamp[1], &t2);
	hs_seed("build_peer_newer", HS_BUILD, 0, HS_IDLE, &b, sizeof(b));
	hs_seed("build_peer_newer_load_cookie", HS_BUILD, HS_HAS_COOKIE, HS_LOAD, &b, sizeof(b));
	hs_seed("build_peer_load_dance_v6", HS_BUILD, HS_SRC_V6, HS_FULL, &b, sizeof(b));
	hs_seed("build_peer_flood", HS_BUILD, HS_FLOOD, HS_IDLE, &b, sizeof(b));
	tai64n_encode(b.timestamp[0], &t2);
	tai64n_encode(b.timestamp[1], &t1);
	hs_seed("build_peer_older", HS_BUILD, 0, HS_IDLE, &b, sizeof(b));
	memcpy(b.timestamp[1], b.timestamp[0], WG_TIMESTAMP_LEN);
	hs_seed("build_peer_same", HS_BUILD, 0, HS_IDLE, &b, sizeof(b));
	memset(b.timestamp[0], 0, WG_TIMESTAMP_LEN);
	hs_seed("build_peer_zero_first", HS_BUILD, 0, HS_IDLE, &b, sizeof(b));
	memcpy(b.private_key, key, WG_KEY_LEN);
	hs_seed("build_unknown", HS_BUILD, 0, HS_IDLE, &b, sizeof(b));
	memcpy(b.private_key, fx.local.static_private, WG_KEY_LEN);
	hs_seed("build_from_self", HS_BUILD, 0, HS_IDLE, &b, sizeof(b));

	/* The device initiates to the remote, which answers. */
	hs_seed("initiate", HS_INITIATE, 0, HS_IDLE, fx.remote.static_public, WG_KEY_LEN);
	hs_seed("initiate_answer_v6", HS_INITIATE, HS_SRC_V6, HS_IDLE, fx.remote.static_public,
		WG_KEY_LEN);
	hs_seed("initiate_over_pending", HS_INITIATE, HS_PENDING, HS_IDLE, fx.remote.static_public,
		WG_KEY_LEN);
	hs_seed("initiate_load_dance", HS_INITIATE, 0, HS_LOAD, fx.remote.static_public, WG_KEY_LEN);
	hs_seed("initiate_load_cookie", HS_INITIATE, HS_HAS_COOKIE | HS_FIX_MACS, HS_FULL,
		fx.remote.static_public, WG_KEY_LEN);
	hs_seed("initiate_twice", HS_INITIATE_TWICE, 0, HS_IDLE, fx.remote.static_public,
		WG_KEY_LEN);
	hs_seed("initiate_too_soon", HS_INITIATE, HS_FLOOD, HS_IDLE, fx.remote.static_public,
		WG_KEY_LEN);
	hs_seed("initiate_unknown_key", HS_INITIATE, 0, HS_IDLE, stranger.static_public, WG_KEY_LEN);
	hs_seed("initiate_no_endpoint", HS_INITIATE | HS_NO_ENDPOINT, 0, HS_IDLE,
		fx.remote.static_public, WG_KEY_LEN);
	hs_seed("initiate_load_tail", HS_INITIATE | HS_RECENT_LOAD, HS_SRC_V6, HS_IDLE,
		fx.remote.static_public, WG_KEY_LEN);
	memset(mask, 0, sizeof(mask));
	memcpy(mask, fx.remote.static_public, WG_KEY_LEN);
	mask[WG_KEY_LEN + offsetof(struct wg_msg_response, encrypted_nothing)] = 1;
	hs_seed("initiate_answer_bad_tag", HS_INITIATE, HS_FIX_MACS, HS_IDLE, mask,
		WG_KEY_LEN + offsetof(struct wg_msg_response, encrypted_nothing) + 1);
	memset(mask + WG_KEY_LEN, 0, sizeof(mask) - WG_KEY_LEN);
	mask[WG_KEY_LEN + offsetof(struct wg_msg_response, sender_index)] = 0x40;
	hs_seed("initiate_answer_other_index", HS_INITIATE, HS_FIX_MACS, HS_IDLE, mask,
		WG_KEY_LEN + offsetof(struct wg_msg_response, sender_index) + 1);

	sodium_memzero(&rhs, sizeof(rhs));
	sodium_memzero(&b, sizeof(b));
	sodium_memzero(key, sizeof(key));
}

/* ---- fuzz_receive ------------------------------------------------------ */

static void rx_seed(const char *name, uint8_t mode, const void *body, size_t len)
{
	seed("fuzz_receive", name, mode, body, len);
}

/* MODE_SEAL body: counter, then the plaintext. */
static void rx_sealed(const char *name, uint8_t flags, uint64_t counter, const void *plain,
		      size_t len)
{
	uint8_t body[8 + 256];
	uint64_t le = htole64(counter);
	char full[128];

	memcpy(body, &le, 8);
	memcpy(body + 8, plain, len);
	snprintf(full, sizeof(full), "%s%s", name, (flags & RX_RESPONDER) ? "_responder" : "");
	rx_seed(full, (uint8_t)(RX_SEAL | flags), body, 8 + len);
}

static size_t ipv4_packet(uint8_t *p, const char *src, const char *dst, size_t payload)
{
	size_t tot = 20 + payload;

	memset(p, 0, tot);
	p[0] = 0x45;
	p[2] = (uint8_t)(tot >> 8);
	p[3] = (uint8_t)tot;
	p[8] = 64;
	p[9] = 17;
	inet_pton(AF_INET, src, p + 12);
	inet_pton(AF_INET, dst, p + 16);
	for (size_t i = 0; i < payload; i++)
		p[20 + i] = (uint8_t)i;
	return tot;
}

static size_t ipv6_packet(uint8_t *p, const char *src, const char *dst, size_t payload)
{
	memset(p, 0, 40 + payload);
	p[0] = 0x60;
	p[4] = (uint8_t)(payload >> 8);
	p[5] = (uint8_t)payload;
	p[6] = 17;
	p[7] = 64;
	inet_pton(AF_INET6, src, p + 8);
	inet_pton(AF_INET6, dst, p + 24);
	for (size_t i = 0; i < payload; i++)
		p[40 + i] = (uint8_t)i;
	return 40 + payload;
}

static void receive_seeds(uint64_t now)
{
	uint8_t p[256], d[256];
	struct wg_noise_handshake rhs = { 0 };
	struct wg_msg_initiation init;
	struct wg_cookie_maker m = fx.remote_maker;
	size_t n;

	for (uint8_t k = 0; k <= RX_RESPONDER; k += RX_RESPONDER) {
		n = ipv4_packet(p, "10.1.2.3", "10.0.0.1", 8);
		rx_sealed("ipv4", k, 0, p, n);
		memset(p + n, 0, 4); /* padded as senders pad */
		rx_sealed("ipv4_padded", k, 7, p, n + 4);
		rx_sealed("ipv4_counter_last", k, WG_REJECT_AFTER_MESSAGES - 1, p, n);
		rx_sealed("ipv4_counter_limit", k, WG_REJECT_AFTER_MESSAGES, p, n);
		rx_sealed("ipv4_truncated", k, 1, p, 19);
		rx_sealed("keepalive", k, 2, p, 0);
		n = ipv4_packet(p, "192.168.1.1", "10.0.0.1", 8);
		rx_sealed("ipv4_disallowed", k, 3, p, n);
		n = ipv4_packet(p, "10.1.2.3", "10.0.0.1", 8);
		p[0] = 0x44;
		rx_sealed("ipv4_bad_ihl", k, 4, p, n);
		p[0] = 0x4f;
		rx_sealed("ipv4_ihl_past_total", k, 4, p, n);
		p[0] = 0x45;
		p[3] = (uint8_t)(n + 1);
		rx_sealed("ipv4_total_too_long", k, 5, p, n);
		p[0] = 0x55;
		rx_sealed("version5", k, 6, p, n);
		n = ipv6_packet(p, "fd00::1", "fd00::2", 8);
		rx_sealed("ipv6", k, 8, p, n);
		p[5]++;
		rx_sealed("ipv6_payload_too_long", k, 9, p, n);
		n = ipv6_packet(p, "2001:db8::1", "fd00::2", 8);
		rx_sealed("ipv6_disallowed", k, 10, p, n);
	}
	n = ipv6_packet(p, "fd12::1", "fd00::2", 0);
	rx_sealed("ipv6_src_v6", RX_SRC_V6, 11, p, n);

	/* Raw datagrams: a real initiation, the other handshake sizes, data. */
	wg_noise_handshake_init(&rhs, &fx.remote, fx.local.static_public, fx.psk);
	if (!wg_noise_create_initiation(&init, &rhs, &fx.remote, HS_IDX_REMOTE))
		abort();
	wg_cookie_add_macs(&m, (uint8_t *)&init, sizeof(init), now);
	rx_seed("raw_initiation", RX_RAW, &init, sizeof(init));
	memset(d, 0, sizeof(d));
	d[0] = WG_MSG_HANDSHAKE_RESPONSE;
	rx_seed("raw_response", RX_RAW, d, sizeof(struct wg_msg_response));
	d[0] = WG_MSG_HANDSHAKE_COOKIE;
	rx_seed("raw_cookie", RX_RAW | RX_SRC_V6, d, sizeof(struct wg_msg_cookie));
	rx_seed("raw_cookie_long", RX_RAW, d, sizeof(struct wg_msg_cookie) + 1);
	d[0] = WG_MSG_DATA;
	rx_seed("raw_data", RX_RAW, d, 64);
	rx_seed("raw_data_short", RX_RAW, d, 31);
	rx_seed("index_data", RX_INDEX, d, 64);
	rx_seed("index_data_responder", RX_INDEX | RX_RESPONDER, d, 32);
	d[0] = 5;
	rx_seed("raw_type5", RX_RAW, d, 40);
	rx_seed("raw_tiny", RX_RAW, d, 3);
	sodium_memzero(&rhs, sizeof(rhs));
}

/* ---- fuzz_offload ------------------------------------------------------ */

/* A TCP or UDP packet to build. */
struct spec {
	bool v6, udp, df;
	uint8_t tos, ttl, flags, ip_opt_len, opt_len;
	uint16_t id, sport, dport, window;
	uint32_t seq, ack, flow_label, payload, payload_off;
};

static uint8_t off_frame[TUN_VNET_HDR_LEN + 40 + 65535];

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static uint16_t sum16(const uint8_t *p, size_t n, uint32_t acc)
{
	for (size_t i = 0; i < n; i += 2) {
		acc += (uint32_t)(p[i] << 8 | (i + 1 < n ? p[i + 1] : 0));
		acc = (acc & 0xffff) + (acc >> 16);
	}
	return (uint16_t)acc;
}

static void spec_default(struct spec *s, bool v6, bool udp)
{
	memset(s, 0, sizeof(*s));
	s->v6 = v6;
	s->udp = udp;
	s->df = true;
	s->tos = 0x10;
	s->ttl = 64;
	s->flags = 0x10; /* ACK */
	s->id = 0x4d2;
	s->sport = 40000;
	s->dport = 5201;
	s->window = 502;
	s->seq = 0xfffff000u; /* wraps inside a big super-packet */
	s->ack = 0x01020304;
	s->flow_label = 0xabcde;
	s->opt_len = 12; /* NOP NOP timestamp */
}

static uint32_t spec_l3(const struct spec *s)
{
	return s->v6 ? 40 : 20u + s->ip_opt_len;
}

static uint32_t spec_hdrs(const struct spec *s)
{
	return spec_l3(s) + (s->udp ? 8u : 20u + s->opt_len);
}

/* Writes the packet; partial: the L4 checksum field holds the folded
 * pseudo-header sum, as Linux leaves it for CHECKSUM_PARTIAL; otherwise the
 * whole checksum. Payload byte k of a flow is (k * 7 + 3), k counted from
 * the flow's start, so segments cut from one stream agree. */
static uint32_t build(uint8_t *out, const struct spec *s, bool partial)
{
	uint32_t l3 = spec_l3(s), hdrs = spec_hdrs(s), len = hdrs + s->payload;
	uint8_t *l4 = out + l3, proto = s->udp ? 17 : 6, ph[40] = { 0 };
	uint16_t pseudo;

	memset(out, 0, hdrs);
	if (s->v6) {
		put32(out, 6u << 28 | (uint32_t)s->tos << 20 | (s->flow_label & 0xfffff));
		put16(out + 4, len - 40);
		out[6] = proto;
		out[7] = s->ttl;
		for (int i = 0; i < 16; i++) {
			out[8 + i] = (uint8_t)(i ? 0x10 + i : 0xfd);
			out[24 + i] = (uint8_t)(i ? 0x30 + i : 0xfd);
		}
		memcpy(ph, out + 8, 32);
		put32(ph + 32, len - l3);
		ph[39] = proto;
		pseudo = sum16(ph, 40, 0);
	} else {
		out[0] = (uint8_t)(0x40 | l3 / 4);
		out[1] = s->tos;
		put16(out + 2, len);
		put16(out + 4, s->id);
		put16(out + 6, s->df ? 0x4000 : 0);
		out[8] = s->ttl;
		out[9] = proto;
		out[12] = 10;
		out[15] = 2;
		out[16] = 10;
		out[19] = 1;
		for (uint32_t i = 20; i < l3; i++)
			out[i] = 1; /* NOP options */
		put16(out + 10, (uint16_t)~sum16(out, l3, 0));
		memcpy(ph, out + 12, 8);
		ph[9] = proto;
		put16(ph + 10, len - l3);
		pseudo = sum16(ph, 12, 0);
	}
	put16(l4, s->sport);
	put16(l4 + 2, s->dport);
	if (s->udp) {
		put16(l4 + 4, len - l3);
	} else {
		put32(l4 + 4, s->seq);
		put32(l4 + 8, s->ack);
		l4[12] = (uint8_t)((20 + s->opt_len) / 4 << 4);
		l4[13] = s->flags;
		put16(l4 + 14, s->window);
		for (uint32_t i = 0; i < s->opt_len; i++)
			l4[20 + i] = i < 2 ? 1 : i == 2 ? 8 : i == 3 ? 10 : (uint8_t)(0x40 + i);
	}
	for (uint32_t k = 0; k < s->payload; k++)
		out[hdrs + k] = (uint8_t)((s->payload_off + k) * 7 + 3);
	if (partial) {
		put16(l4 + (s->udp ? 6 : 16), pseudo);
	} else {
		uint16_t c = (uint16_t)~sum16(l4, len - l3, pseudo);

		put16(l4 + (s->udp ? 6 : 16), s->udp && !c ? 0xffff : c);
	}
	return len;
}

/* A TUN read: the virtio-net header Linux writes for s, then the packet. */
static void read_seed(const char *name, uint8_t mode, const struct spec *s, uint16_t gso_size,
		      uint8_t vflags, uint8_t gso_type)
{
	struct tun_vnet_hdr h = { 0 };
	uint32_t len;

	h.flags = vflags;
	h.gso_type = gso_type;
	if (gso_type != VIRTIO_NET_HDR_GSO_NONE) {
		h.hdr_len = htole16((uint16_t)spec_hdrs(s));
		h.gso_size = htole16(gso_size);
	}
	if (vflags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
		h.csum_start = htole16((uint16_t)spec_l3(s));
		h.csum_offset = htole16(s->udp ? 6 : 16);
	}
	memcpy(off_frame, &h, sizeof(h));
	len = build(off_frame + TUN_VNET_HDR_LEN, s, vflags & VIRTIO_NET_HDR_F_NEEDS_CSUM);
	seed("fuzz_offload", name, mode, off_frame, TUN_VNET_HDR_LEN + len);
}

static void tso_seed(const char *name, uint8_t mode, const struct spec *s, uint16_t mss)
{
	uint8_t type = s->udp ? VIRTIO_NET_HDR_GSO_UDP_L4 :
		       s->v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;

	read_seed(name, mode, s, mss, VIRTIO_NET_HDR_F_NEEDS_CSUM, type);
}

/* MODE_GRO input: records of (length, room from the packet on, bytes). */
static uint8_t gro_buf[65536];
static size_t gro_len;

/* extra: the buffer's room behind the packet. */
static void gro_record(const struct spec *s, uint16_t extra, bool bad_csum)
{
	uint8_t *r = gro_buf + gro_len;
	uint32_t len = build(r + 4, s, false), room = len + extra;

	if (bad_csum)
		r[4 + len - 1] ^= 0x20;
	if (room > 65535)
		abort();
	r[0] = (uint8_t)len;
	r[1] = (uint8_t)(len >> 8);
	r[2] = (uint8_t)room;
	r[3] = (uint8_t)(room >> 8);
	gro_len += 4 + len;
}

/* n segments of one flow, mss payload each (the last may be short). */
static void gro_flow(struct spec *s, unsigned int n, uint32_t mss, uint32_t last, uint16_t extra,
		     uint8_t last_flags)
{
	uint8_t flags = s->flags;

	for (unsigned int i = 0; i < n; i++) {
		s->payload = i + 1 == n ? last : mss;
		if (i + 1 == n)
			s->flags = last_flags;
		gro_record(s, i ? 0 : extra, false);
		s->seq += s->payload;
		s->payload_off += s->payload;
		s->id++;
	}
	s->flags = flags;
}

static void offload_seeds(void)
{
	struct spec s, t;

	spec_default(&s, false, false);
	s.flags = 0x18; /* ACK PSH */
	s.payload = 4 * 1448 + 100;
	tso_seed("tso4", OFF_SPLIT, &s, 1448);
	tso_seed("tso4_copy", OFF_SPLIT | OFF_COPY, &s, 1448);
	s.flags = 0x10;
	s.payload = 65535 - spec_hdrs(&s);
	tso_seed("tso4_64k", OFF_SPLIT, &s, 1448);
	s.df = false;
	s.id = 0xfffe;
	s.payload = 3 * 536;
	s.opt_len = 0;
	tso_seed("tso4_nodf_id_wraps", OFF_SPLIT, &s, 536);
	spec_default(&s, false, false);
	s.flags = 0x90; /* CWR ACK: ECN, CWR on the first only */
	s.payload = 3000;
	read_seed("tso4_cwr_ecn", OFF_SPLIT, &s, 1000, VIRTIO_NET_HDR_F_NEEDS_CSUM,
		  VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ECN);
	s.flags = 0x19; /* FIN PSH ACK: on the last only */
	tso_seed("tso4_fin", OFF_SPLIT | OFF_COPY, &s, 1000);
	s.flags = 0x10;
	s.ip_opt_len = 8;
	tso_seed("tso4_ip_options", OFF_SPLIT, &s, 1200);
	s.ip_opt_len = 0;
	s.payload = 700;
	tso_seed("tso4_one_segment", OFF_SPLIT, &s, 1448);
	s.payload = 0;
	tso_seed("tso4_no_payload", OFF_SPLIT, &s, 1448);
	s.payload = 3000;
	s.flags = 0x12; /* SYN */
	tso_seed("bad_tso4_syn", OFF_SPLIT, &s, 1000);
	s.flags = 0x10;
	tso_seed("bad_gso_size_47", OFF_SPLIT, &s, TUN_OFFLOAD_MIN_GSO_SIZE - 1);
	s.udp = true;
	read_seed("bad_ufo", OFF_SPLIT, &s, 1000, VIRTIO_NET_HDR_F_NEEDS_CSUM, VIRTIO_NET_HDR_GSO_UDP);

	spec_default(&s, true, false);
	s.payload = 5000;
	tso_seed("tso6", OFF_SPLIT, &s, 1220);
	s.payload = 65535 + 40 - spec_hdrs(&s);
	tso_seed("tso6_max", OFF_SPLIT | OFF_COPY, &s, 1428);
	spec_default(&s, false, true);
	s.payload = 3000;
	tso_seed("uso4", OFF_SPLIT, &s, 1200);
	spec_default(&s, true, true);
	s.payload = 4 * 1232;
	tso_seed("uso6_exact", OFF_SPLIT | OFF_COPY, &s, 1232);
	/* More segments than a GRO batch takes, none of which merge. */
	spec_default(&s, false, true);
	s.payload = 300 * TUN_OFFLOAD_MIN_GSO_SIZE - 1;
	tso_seed("uso4_300_tiny", OFF_SPLIT, &s, TUN_OFFLOAD_MIN_GSO_SIZE);
	spec_default(&s, true, false);
	s.flags = 0x50; /* ECE ACK: never coalesced */
	s.payload = 40000;
	tso_seed("tso6_ece_400", OFF_SPLIT | OFF_COPY, &s, 100);

	spec_default(&s, false, false);
	s.payload = 900;
	read_seed("csum4_tcp", OFF_SPLIT, &s, 0, VIRTIO_NET_HDR_F_NEEDS_CSUM, VIRTIO_NET_HDR_GSO_NONE);
	read_seed("plain4_tcp", OFF_SPLIT, &s, 0, 0, VIRTIO_NET_HDR_GSO_NONE);
	spec_default(&s, true, true);
	s.payload = 333;
	read_seed("csum6_udp", OFF_SPLIT | OFF_COPY, &s, 0, VIRTIO_NET_HDR_F_NEEDS_CSUM,
		  VIRTIO_NET_HDR_GSO_NONE);
	read_seed("data_valid6_udp", OFF_SPLIT, &s, 0, VIRTIO_NET_HDR_F_DATA_VALID,
		  VIRTIO_NET_HDR_GSO_NONE);
	{
		/* A partial checksum at odd offsets (any protocol may ask). */
		struct tun_vnet_hdr *h = (struct tun_vnet_hdr *)off_frame;

		h->csum_start = htole16(41);
		h->csum_offset = htole16(3);
		h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		seed("fuzz_offload", "csum_odd_offsets", OFF_SPLIT, off_frame,
		     TUN_VNET_HDR_LEN + spec_hdrs(&s) + s.payload);
	}

	/* Received packets for GRO. */
	spec_default(&s, false, false);
	gro_len = 0;
	gro_flow(&s, 4, 1448, 1000, 8000, 0x18);
	seed("fuzz_offload", "gro_flow4_psh", OFF_GRO, gro_buf, gro_len);

	spec_default(&s, true, false);
	spec_default(&t, false, false);
	t.sport = 1000;
	gro_len = 0;
	for (int i = 0; i < 3; i++) {
		s.payload = t.payload = 1200;
		gro_record(&s, i ? 0 : 6000, false);
		gro_record(&t, i ? 0 : 6000, false);
		s.seq += 1200;
		t.seq += 1200;
		s.payload_off += 1200;
		t.payload_off += 1200;
		t.id++;
		if (i == 1) {
			/* A pure ACK of the first flow keeps its place. */
			t.payload = 0;
			gro_record(&t, 0, false);
		}
	}
	seed("fuzz_offload", "gro_interleaved", OFF_GRO, gro_buf, gro_len);

	spec_default(&s, false, false);
	s.df = false;
	gro_len = 0;
	gro_flow(&s, 3, 536, 536, 2000, 0x10);
	s.seq += 1; /* a gap */
	gro_flow(&s, 2, 536, 100, 2000, 0x10);
	seed("fuzz_offload", "gro_nodf_gap", OFF_GRO, gro_buf, gro_len);

	spec_default(&s, true, false);
	gro_len = 0;
	s.payload = 1000;
	gro_record(&s, 3000, false);
	s.seq += 1000;
	s.payload_off += 1000;
	gro_record(&s, 0, true);
	seed("fuzz_offload", "gro_bad_csum_verified", OFF_GRO | OFF_VERIFY, gro_buf, gro_len);
	seed("fuzz_offload", "gro_bad_csum_trusted", OFF_GRO, gro_buf, gro_len);

	spec_default(&s, false, true);
	gro_len = 0;
	s.payload = 200;
	gro_record(&s, 1000, false);
	gro_record(&s, 0, false);
	memcpy(gro_buf + gro_len, "\x05\x00\x00\x00\x60\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 13);
	gro_len += 13; /* 5 bytes that are no IP packet, then an empty record */
	seed("fuzz_offload", "gro_udp_garbage", OFF_GRO, gro_buf, gro_len);
}

/* ---- fuzz_uapi --------------------------------------------------------- */

static void uapi_seed(const char *name, const char *text)
{
	seed("fuzz_uapi", name, -1, text, strlen(text));
}

static void uapi_seeds(void)
{
	char hex1[65], hex2[65], hex3[65], buf[2048];
	uint8_t key[WG_KEY_LEN];

	memset(key, 0xa1, sizeof(key));
	sodium_bin2hex(hex1, sizeof(hex1), key, sizeof(key));
	memset(key, 0xb2, sizeof(key));
	sodium_bin2hex(hex2, sizeof(hex2), key, sizeof(key));
	memset(key, 0xc3, sizeof(key));
	sodium_bin2hex(hex3, sizeof(hex3), key, sizeof(key));

	snprintf(buf, sizeof(buf),
		 "private_key=%s\nlisten_port=51820\nfwmark=4660\nreplace_peers=true\n"
		 "public_key=%s\npreshared_key=%s\nendpoint=192.0.2.1:51820\n"
		 "persistent_keepalive_interval=25\nreplace_allowed_ips=true\n"
		 "allowed_ip=10.0.0.0/8\nallowed_ip=fd00::/8\nprotocol_version=1\n",
		 hex1, hex2, hex3);
	uapi_seed("full", buf);
	snprintf(buf, sizeof(buf),
		 "public_key=%s\nendpoint=[2001:db8::1]:65535\nallowed_ip=192.168.0.1/24\n"
		 "allowed_ip=-10.1.0.0/16\nallowed_ip=::ffff:1.2.3.4/128\nallowed_ip=0.0.0.0/0\n"
		 "allowed_ip=::/0\npublic_key=%s\nendpoint=[fe80::1%%lo]:1\n"
		 "persistent_keepalive_interval=0\nallowed_ip=2001:db8:0:0:1::/80\n",
		 hex2, hex3);
	uapi_seed("two_peers_v6", buf);
	snprintf(buf, sizeof(buf), "public_key=%s\nendpoint=[fe80::1%%7]:51820\nupdate_only=true\n",
		 hex2);
	uapi_seed("zone_number_update_only", buf);
	snprintf(buf, sizeof(buf), "public_key=%s\nremove=true\n", hex2);
	uapi_seed("remove", buf);
	snprintf(buf, sizeof(buf),
		 "private_key=%s\r\nlisten_port=0\r\npublic_key=%s\r\nallowed_ip=10.0.0.0/8\r\n"
		 "replace_allowed_ips=true\r\nallowed_ip=10.2.0.0/16",
		 "0000000000000000000000000000000000000000000000000000000000000000", hex2);
	uapi_seed("crlf_zero_key_no_final_newline", buf);
	uapi_seed("bad_no_equals", "listen_port\n");
	uapi_seed("bad_port", "listen_port=65536\n");
	uapi_seed("bad_key_hex", "private_key=zz\n");
	uapi_seed("bad_peer_key_at_device", "endpoint=1.2.3.4:5\n");
	snprintf(buf, sizeof(buf), "public_key=%s\nlisten_port=1\n", hex2);
	uapi_seed("bad_device_key_at_peer", buf);
	snprintf(buf, sizeof(buf), "public_key=%s\nallowed_ip=10.0.0.1\n", hex2);
	uapi_seed("bad_prefix_no_cidr", buf);
	snprintf(buf, sizeof(buf), "public_key=%s\nendpoint=[1.2.3.4]:5\n", hex2);
	uapi_seed("bad_bracketed_v4", buf);
	uapi_seed("bad_empty_line", "fwmark=1\n\nlisten_port=2\n");
	uapi_seed("empty", "");
}

/* ---- fuzz_mesh_lease -------------------------------------------------- */

/* Leases signed with the target's fixture key (a seed of 32 bytes of 0x5a):
 * a valid one of each family in each form, keys, and broken ones. */
static void lease_seeds(void)
{
	enum { WIRE = 0, TEXT = 1, KEY = 2 };
	uint8_t seed_key[ED25519_SEED_SIZE], pub[ED25519_PUBLIC_SIZE], w[MESH_LEASE_SIZE];
	char text[MESH_LEASE_TEXT_LEN + 4], key[64];
	struct mesh_lease l = {
		.family = AF_INET6,
		.addr = { 0x20, 0x01, 0x0d, 0xb8, [15] = 7 },
		.issued = 1796000000ull * 1000000000ull,
		.expires = 1796003600ull * 1000000000ull,
	};

	memset(seed_key, 0x5a, sizeof(seed_key));
	memset(l.holder, 0x42, sizeof(l.holder));
	mesh_lease_sign(&l, seed_key);
	mesh_lease_encode(&l, w);
	seed("fuzz_mesh_lease", "wire_v6", WIRE, w, sizeof(w));
	mesh_lease_format(&l, text);
	seed("fuzz_mesh_lease", "text_v6", TEXT, text, strlen(text));
	strcat(text, "\n");
	seed("fuzz_mesh_lease", "text_v6_newline", TEXT, text, strlen(text));

	l.family = AF_INET;
	memset(l.addr, 0, sizeof(l.addr));
	memcpy(l.addr, (uint8_t[]){ 10, 9, 8, 7 }, 4);
	mesh_lease_sign(&l, seed_key);
	mesh_lease_encode(&l, w);
	seed("fuzz_mesh_lease", "wire_v4", WIRE, w, sizeof(w));
	mesh_lease_format(&l, text);
	seed("fuzz_mesh_lease", "text_v4", TEXT, text, strlen(text));
	w[80] ^= 1;
	seed("fuzz_mesh_lease", "wire_v4_forged", WIRE, w, sizeof(w));
	w[80] ^= 1;
	w[28] = 1;
	seed("fuzz_mesh_lease", "bad_v4_tail", WIRE, w, sizeof(w));

	ed25519_public(pub, seed_key);
	sodium_bin2base64(key, sizeof(key), pub, sizeof(pub), sodium_base64_VARIANT_ORIGINAL);
	seed("fuzz_mesh_lease", "key", KEY, key, strlen(key));
	seed("fuzz_mesh_lease", "bad_key_short", KEY, key, 43);
}

int main(int argc, char **argv)
{
	uint64_t now;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	out_dir = argv[1];
	make_dir(out_dir);
	wg_clock_init();
	now = wg_clock_now();
	hs_fixture_init(&fx, now);
	handshake_seeds(now);
	receive_seeds(now);
	uapi_seeds();
	offload_seeds();
	lease_seeds();
	return 0;
}
