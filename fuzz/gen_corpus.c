/* Writes the seed corpora of the fuzz targets: real messages made by the
 * production functions (handshake messages from the remote of hs_fixture,
 * data-message plaintexts, UAPI set requests), each behind the target's mode
 * byte. Usage: gen_corpus DIR (normally fuzz/corpus); it writes
 * DIR/<target>/<name>, overwriting files of the same name. */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "crypto/tai64n.h"
#include "fuzz/hs_fixture.h"
#include "wg/clock.h"

/* The flag bits of the targets (fuzz_handshake.c, fuzz_receive.c). */
enum {
	HS_FIX_MACS = 1 << 0,
	HS_UNDER_LOAD = 1 << 1,
	HS_SRC_V6 = 1 << 2,
	HS_HAS_COOKIE = 1 << 3,
	HS_BUILD = 1 << 4,
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

static void hs_seed(const char *name, uint8_t flags, const void *msg, size_t len)
{
	seed("fuzz_handshake", name, flags, msg, len);
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
	uint8_t key[WG_KEY_LEN];
	struct {
		uint8_t private_key[WG_KEY_LEN];
		uint8_t ephemeral[WG_KEY_LEN];
		uint8_t timestamp[2][WG_TIMESTAMP_LEN];
	} b;
	struct timespec t1 = { .tv_sec = 1700000000, .tv_nsec = 1 << 24 };
	struct timespec t2 = { .tv_sec = 1700000100, .tv_nsec = 0 };

	/* Initiations from the remote, by wg_noise_create_initiation. */
	wg_noise_handshake_init(&rhs, &fx.remote, fx.local.static_public, fx.psk);
	if (!wg_noise_create_initiation(&init, &rhs, &fx.remote, HS_IDX_REMOTE))
		abort();
	m = fx.remote_maker;
	wg_cookie_add_macs(&m, (uint8_t *)&init, sizeof(init), now);
	hs_seed("init_valid", 0, &init, sizeof(init));
	hs_seed("init_valid_v6", HS_SRC_V6, &init, sizeof(init));
	hs_seed("init_load_needs_cookie", HS_UNDER_LOAD, &init, sizeof(init));
	hs_seed("init_fixmacs_load_cookie", HS_FIX_MACS | HS_UNDER_LOAD | HS_HAS_COOKIE, &init,
		sizeof(init));
	hs_seed("init_fixmacs_load_nocookie", HS_FIX_MACS | HS_UNDER_LOAD, &init, sizeof(init));
	init.header.type = WG_MSG_HANDSHAKE_RESPONSE;
	hs_seed("init_wrong_type", 0, &init, sizeof(init));
	init.header.type = WG_MSG_HANDSHAKE_INITIATION;
	hs_seed("init_short", 0, &init, sizeof(init) - 1);

	for (int v6 = 0; v6 < 2; v6++) {
		m = fx.remote_maker_cookie[v6];
		m.cookie_birthdate = now;
		wg_cookie_add_macs(&m, (uint8_t *)&init, sizeof(init), now);
		hs_seed(v6 ? "init_load_mac2_v6" : "init_load_mac2",
			HS_UNDER_LOAD | (v6 ? HS_SRC_V6 : 0), &init, sizeof(init));
	}

	/* One from a key that is not our peer's. */
	memset(key, 0x77, sizeof(key));
	wg_noise_identity_set(&stranger, key);
	memset(&rhs, 0, sizeof(rhs));
	wg_noise_handshake_init(&rhs, &stranger, fx.local.static_public, NULL);
	if (!wg_noise_create_initiation(&init, &rhs, &stranger, HS_IDX_REMOTE))
		abort();
	m = fx.remote_maker;
	wg_cookie_add_macs(&m, (uint8_t *)&init, sizeof(init), now);
	hs_seed("init_unknown_peer", 0, &init, sizeof(init));

	/* The remote's response to local's pending initiation. */
	memset(&rhs, 0, sizeof(rhs));
	wg_noise_handshake_init(&rhs, &fx.remote, fx.local.static_public, fx.psk);
	if (!wg_noise_open_initiation(&in, &fx.pending, &fx.remote) ||
	    !wg_noise_accept_initiation(&rhs, &in) ||
	    !wg_noise_create_response(&resp, &rhs, &fx.remote, HS_IDX_REMOTE))
		abort();
	m = fx.remote_maker;
	wg_cookie_add_macs(&m, (uint8_t *)&resp, sizeof(resp), now);
	hs_seed("resp_valid", 0, &resp, sizeof(resp));
	hs_seed("resp_load_needs_cookie", HS_UNDER_LOAD | HS_SRC_V6, &resp, sizeof(resp));
	hs_seed("resp_fixmacs", HS_FIX_MACS, &resp, sizeof(resp));
	m = fx.remote_maker_cookie[0];
	m.cookie_birthdate = now;
	wg_cookie_add_macs(&m, (uint8_t *)&resp, sizeof(resp), now);
	hs_seed("resp_load_mac2", HS_UNDER_LOAD, &resp, sizeof(resp));

	/* The remote's cookie reply to local's pending initiation. */
	if (!wg_cookie_create_reply(&cookie, &fx.remote_checker, (const uint8_t *)&fx.pending,
				    sizeof(fx.pending), HS_IDX_LOCAL_PENDING, &fx.local_addr, now))
		abort();
	hs_seed("cookie_valid", 0, &cookie, sizeof(cookie));
	cookie.receiver_index = htole32(HS_IDX_REMOTE);
	hs_seed("cookie_wrong_index", 0, &cookie, sizeof(cookie));

	/* Harness-built initiation pairs. */
	memcpy(b.private_key, fx.remote.static_private, WG_KEY_LEN);
	memset(b.ephemeral, 0x5e, sizeof(b.ephemeral));
	tai64n_encode(b.timestamp[0], &t1);
	tai64n_encode(b.timestamp[1], &t2);
	hs_seed("build_peer_newer", HS_BUILD, &b, sizeof(b));
	hs_seed("build_peer_newer_load_cookie", HS_BUILD | HS_UNDER_LOAD | HS_HAS_COOKIE, &b,
		sizeof(b));
	hs_seed("build_peer_load_nocookie", HS_BUILD | HS_UNDER_LOAD | HS_SRC_V6, &b, sizeof(b));
	tai64n_encode(b.timestamp[0], &t2);
	tai64n_encode(b.timestamp[1], &t1);
	hs_seed("build_peer_older", HS_BUILD, &b, sizeof(b));
	memcpy(b.timestamp[1], b.timestamp[0], WG_TIMESTAMP_LEN);
	hs_seed("build_peer_same", HS_BUILD, &b, sizeof(b));
	memset(b.timestamp[0], 0, WG_TIMESTAMP_LEN);
	hs_seed("build_peer_zero_first", HS_BUILD, &b, sizeof(b));
	memcpy(b.private_key, key, WG_KEY_LEN);
	hs_seed("build_unknown", HS_BUILD, &b, sizeof(b));

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
	return 0;
}
