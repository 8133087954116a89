/* libFuzzer target for wg_receive, the function the workers call for every
 * UDP datagram: the outer message gate, the data-message path (index lookup,
 * AEAD open, replay window) and, once a message authenticates, the inner
 * IPv4/IPv6 header check and the allowed-IPs source check.
 *
 * The device is real (wg_device_new, configured with wg_device_set, threads
 * not started) with one peer owning 10.0.0.0/8 and fd00::/8, and two
 * sessions from real handshakes against a second identity, installed as
 * begin_session does: one where we were the initiator (current) and one
 * where we were the responder (next, waiting for confirmation).
 *
 * Input: a mode byte, then
 *  - MODE_RAW: the datagram as is;
 *  - MODE_INDEX: the datagram with a live receiver index written over bytes 4..7;
 *  - MODE_SEAL: an 8-byte counter (little-endian) and a plaintext the harness
 *    seals as the peer would, so the inner packet checks are reached.
 * Before every input the keypair slots and replay windows are put back, so an
 * input always takes the same path. The result is checked against a naive
 * model of what must be accepted.
 *
 * With F_MESH the host mesh is on (unicast, prefixes 172.16.0.0/16 and
 * fc77::/64, outside the peer's allowed IPs) and the datagram goes where
 * the workers send it (datapath/rx.c dp_rx_udp): mesh_receive for mesh
 * messages, forwarded packets and foreign sources (held while looked up),
 * mesh_transit for an accepted packet to a mesh address. The model: mesh
 * messages and forwarded packets never reach the TUN (no VM of this host
 * can be their destination), a source in a mesh prefix is never accepted
 * (no record names the peer: the mesh thread, which would learn them, does
 * not run here, as its sends would leave the process). After the input the
 * mesh is turned off again and what it left for its thread thrown away. */
#include <endian.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "crypto/aead.h"
#include "mesh/internal.h"
#include "mesh/mesh.h"
#include "mesh/msg.h"
#include "port/ports.h"
#include "router/table.h"
#include "wg/clock.h"
#include "wg/device.h"
#include "wg/keypair.h"
#include "wg/log.h"
#include "wg/peer.h"
#include "wg/receive.h"
#include "wg/replay.h"
#include "wg/send.h"

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "fuzz_receive: check failed at %s:%d: %s\n", \
				__FILE__, __LINE__, #cond);                           \
			abort();                                                      \
		}                                                                     \
	} while (0)

enum {
	MODE_RAW = 0,
	MODE_INDEX = 1,
	MODE_SEAL = 2,       /* 2 and 3 */
	MODE_MASK = 3,
	F_RESPONDER = 1 << 2, /* use the session where we responded (slot next) */
	F_SRC_V6 = 1 << 3,
	F_MESH = 1 << 4,      /* the mesh on, the datagram as the workers take it */
	/* Sessions are re-installed well before they would expire. */
	SESSION_REFRESH_SEC = 60,
};

/* Set up once per process. */
static struct {
	struct wg_device *dev;
	struct wg_peer *peer;
	struct wg_noise_identity remote;
	/* [0]: we initiated, [1]: we responded. Ours and the remote's view. */
	struct wg_noise_session local_sess[2], remote_sess[2];
	struct wg_keypair *kp[2];
	uint64_t installed;
	union wg_sockaddr src[2];
	struct wg_tx tx;
	/* peer->mesh lives in the peer's sodium_malloc'd memory, which
	 * LeakSanitizer does not scan: kept reachable here. */
	struct mesh_peer *peer_mesh;
	bool trace; /* FUZZ_TRACE=1: print each input's result */
} g;

static void tx_free(struct wg_tx *tx, struct wg_pkt *pkt)
{
	free(pkt);
}

static void set_addr4(union wg_sockaddr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->in4.sin_family = AF_INET;
	a->in4.sin_port = htons(port);
	CHECK(inet_pton(AF_INET, ip, &a->in4.sin_addr) == 1);
}

static void configure(const uint8_t local_priv[WG_KEY_LEN])
{
	struct wg_device_config cfg = { 0 };
	struct wg_peer_config *pc;
	struct wg_allowed_ip *a;

	cfg.has_private_key = true;
	memcpy(cfg.private_key, local_priv, WG_KEY_LEN);
	pc = wg_config_add_peer(&cfg);
	CHECK(pc);
	memcpy(pc->public_key, g.remote.static_public, WG_KEY_LEN);
	pc->has_endpoint = true;
	set_addr4(&pc->endpoint, "192.0.2.2", 51820);
	a = wg_config_add_allowed_ip(pc);
	CHECK(a);
	a->prefix = (struct ip_prefix){ .family = AF_INET, .cidr = 8, .addr = { 10 } };
	a = wg_config_add_allowed_ip(pc);
	CHECK(a);
	a->prefix = (struct ip_prefix){ .family = AF_INET6, .cidr = 8, .addr = { 0xfd } };
	CHECK(wg_device_set(g.dev, &cfg) == 0);
	wg_config_clear(&cfg);
}

/* With the peer lock held: handshake.c's new_handshake_index. */
static uint32_t new_index(void)
{
	wg_index_remove(&g.dev->index, &g.peer->hs_entry);
	return wg_index_insert(&g.dev->index, &g.peer->hs_entry);
}

/* With the peer lock held: what begin_session does with a derived session. */
static struct wg_keypair *install(const struct wg_noise_session *sess, uint64_t now)
{
	struct wg_keypair *kp = wg_keypair_new(&g.dev->index, g.peer, sess, now);

	CHECK(kp);
	wg_index_replace(&g.dev->index, &g.peer->hs_entry, &kp->entry);
	wg_keypairs_add(&g.peer->keypairs, kp);
	return kp;
}

/* With the peer lock held: both sessions in their slots, as after the
 * handshakes. The keys are reused; the indices are fresh. */
static void reinstall(uint64_t now)
{
	wg_keypairs_clear(&g.peer->keypairs);
	new_index();
	g.kp[0] = install(&g.local_sess[0], now);
	new_index();
	g.kp[1] = install(&g.local_sess[1], now);
	g.installed = now;
	CHECK(g.peer->keypairs.current == g.kp[0] && g.peer->keypairs.next == g.kp[1] &&
	      !g.peer->keypairs.previous);
}

static void same_keys(const struct wg_noise_session *a, const struct wg_noise_session *b)
{
	CHECK(a->initiator != b->initiator);
	CHECK(!memcmp(a->send_key, b->recv_key, WG_KEY_LEN));
	CHECK(!memcmp(a->recv_key, b->send_key, WG_KEY_LEN));
}

/* Two real handshakes with the remote: we initiate, then it does. */
static void handshakes(void)
{
	struct wg_noise_handshake rhs = { 0 };
	struct wg_noise_initiation in;
	struct wg_msg_initiation init;
	struct wg_msg_response resp;
	struct wg_noise_handshake *hs = &g.peer->handshake;
	const struct wg_noise_identity *id = g.dev->identity;

	wg_noise_handshake_init(&rhs, &g.remote, id->static_public, NULL);

	CHECK(wg_noise_create_initiation(&init, hs, id, new_index()));
	CHECK(wg_noise_open_initiation(&in, &init, &g.remote));
	CHECK(wg_noise_accept_initiation(&rhs, &in));
	CHECK(wg_noise_create_response(&resp, &rhs, &g.remote, 0x1111));
	CHECK(wg_noise_consume_response(&resp, hs, id));
	CHECK(wg_noise_derive_session(&g.local_sess[0], hs));
	CHECK(wg_noise_derive_session(&g.remote_sess[0], &rhs));

	CHECK(wg_noise_create_initiation(&init, &rhs, &g.remote, 0x2222));
	CHECK(wg_noise_open_initiation(&in, &init, id));
	CHECK(!memcmp(in.remote_static, g.peer->public_key, WG_KEY_LEN));
	CHECK(wg_noise_accept_initiation(hs, &in));
	CHECK(wg_noise_create_response(&resp, hs, id, new_index()));
	CHECK(wg_noise_derive_session(&g.local_sess[1], hs));
	CHECK(wg_noise_consume_response(&resp, &rhs, &g.remote));
	CHECK(wg_noise_derive_session(&g.remote_sess[1], &rhs));

	CHECK(g.local_sess[0].initiator && !g.local_sess[1].initiator);
	same_keys(&g.local_sess[0], &g.remote_sess[0]);
	same_keys(&g.local_sess[1], &g.remote_sess[1]);
	sodium_memzero(&rhs, sizeof(rhs));
	sodium_memzero(&in, sizeof(in));
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	uint8_t key[WG_KEY_LEN];
	int fd;

	wg_log_set_level(WG_LOG_SILENT);
	wg_clock_init();
	CHECK(sodium_init() >= 0);
	/* The TUN is never written: the caller of wg_receive does that. */
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	g.dev = wg_device_new("weftfuzz0", &fd, NULL, 1, false, WG_DEFAULT_MTU);
	CHECK(g.dev);
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(0x22 + 37 * i);
	wg_noise_identity_set(&g.remote, key);
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(0x11 + 37 * i);
	configure(key);
	sodium_memzero(key, sizeof(key));

	wg_rwlock_rdlock(&g.dev->lock);
	g.peer = wg_device_lookup_peer(g.dev, g.remote.static_public);
	CHECK(g.peer);
	wg_mutex_lock(&g.peer->lock);
	handshakes();
	reinstall(wg_clock_now());
	wg_mutex_unlock(&g.peer->lock);
	wg_rwlock_unlock(&g.dev->lock);

	set_addr4(&g.src[0], "192.0.2.2", 51820);
	g.src[1].in6.sin6_family = AF_INET6;
	g.src[1].in6.sin6_port = htons(51820);
	CHECK(inet_pton(AF_INET6, "2001:db8::2", &g.src[1].in6.sin6_addr) == 1);
	g.tx.dev = g.dev;
	g.tx.emit = tx_free;
	g.tx.release = tx_free;
	g.trace = getenv("FUZZ_TRACE") != NULL;

	CHECK(port_table_new(g.dev) == 0 && mesh_new(g.dev, &g.dev->mesh) == 0);
	wg_rwlock_rdlock(&g.dev->lock);
	mesh_dev_locked_shared(g.dev->mesh, g.dev);
	wg_mutex_lock(&g.dev->mesh->lock);
	g.peer_mesh = mesh_peer_of(g.dev->mesh, g.peer);
	wg_mutex_unlock(&g.dev->mesh->lock);
	wg_rwlock_unlock(&g.dev->lock);
	CHECK(g.peer_mesh);
	return 0;
}

static void mesh_mode(enum mesh_mode mode)
{
	struct mesh_config cfg = { .mode = mode, .n_prefixes = 2 };

	cfg.prefixes[0] = (struct ip_prefix){ .family = AF_INET, .cidr = 16, .addr = { 172, 16 } };
	cfg.prefixes[1] = (struct ip_prefix){ .family = AF_INET6, .cidr = 64, .addr = { 0xfc, 0x77 } };
	CHECK(mesh_set(g.dev, &cfg) == 0);
}

/* After an input with the mesh on: the mesh off (its records, lookups and
 * held packets freed), and the inbox and outbox its thread would have
 * taken emptied, so that every input starts from the same state. */
static void mesh_reset(void)
{
	struct mesh *m = g.dev->mesh;
	size_t n;

	mesh_mode(MESH_OFF);
	wg_mutex_lock(&m->lock);
	free(mesh_take_notes(m, &n));
	m->n_inbox = 0;
	g.peer_mesh->inbox = 0;
	wg_mutex_unlock(&m->lock);
}

/* What dp_rx_udp does with one datagram when the mesh is on: the length
 * handed to the TUN (0: dropped, held, or sent on through the mesh). */
static uint32_t receive_mesh(uint8_t *buf, uint32_t len, const union wg_sockaddr *src,
			     bool *transit)
	WG_REQUIRES_SHARED(g.dev->lock)
{
	struct wg_rx rx;
	enum wg_rx_verdict v = wg_receive_open(g.dev, buf, len, src, &g.tx, &rx);
	struct rt_hop *hop;
	uint32_t inner;

	if (v == WG_RX_DONE || !mesh_receive(g.dev, &rx, v))
		return 0;
	inner = wg_receive_accept(g.dev, &rx);
	hop = rt_lookup(g.dev->allowed_ips, rx.family, rx.dst);
	if (hop && (hop->kind == RT_HOP_REMOTE || hop->kind == RT_HOP_MESH)) {
		mesh_transit(g.dev, rx.peer, hop, buf + WG_PKT_HEADROOM, inner, &g.tx);
		*transit = true;
	}
	return inner;
}

/* With the mesh on, what never reaches the TUN: a mesh message, a
 * forwarded packet, a packet from a mesh prefix. */
static bool mesh_model_drops(const uint8_t *p, size_t len)
{
	if (mesh_msg_is_mesh(p, len) || mesh_fwd_unwrap(p, len))
		return true;
	if ((p[0] >> 4) == 4 && len >= 20)
		return p[12] == 172 && p[13] == 16;
	if ((p[0] >> 4) == 6 && len >= 40)
		return p[8] == 0xfc && p[9] == 0x77 && !p[10] && !p[11] && !p[12] && !p[13] &&
		       !p[14] && !p[15];
	return false;
}

/* Puts the slots back after an input confirmed the responder's session, and
 * renews both long before they expire; forgets every counter seen. */
static void prepare(uint64_t now)
{
	struct wg_keypairs *kps = &g.peer->keypairs;

	wg_mutex_lock(&g.peer->lock);
	if (kps->current != g.kp[0] || kps->next != g.kp[1] || kps->previous ||
	    wg_clock_after(now, g.installed, (uint64_t)SESSION_REFRESH_SEC * NSEC_PER_SEC))
		reinstall(now);
	for (int i = 0; i < 2; i++) {
		pthread_spin_lock(&g.kp[i]->replay_lock);
		wg_replay_init(&g.kp[i]->replay);
		pthread_spin_unlock(&g.kp[i]->replay_lock);
	}
	wg_mutex_unlock(&g.peer->lock);
}

/* The naive model of wg_receive's gate for handshake messages. */
static bool queued_model(const uint8_t *d, size_t len)
{
	if (len < 4 || d[1] || d[2] || d[3])
		return false; /* the reserved bytes of the type word must be zero */
	return (d[0] == WG_MSG_HANDSHAKE_INITIATION && len == sizeof(struct wg_msg_initiation)) ||
	       (d[0] == WG_MSG_HANDSHAKE_RESPONSE && len == sizeof(struct wg_msg_response)) ||
	       (d[0] == WG_MSG_HANDSHAKE_COOKIE && len == sizeof(struct wg_msg_cookie));
}

/* The naive model of an authentic data message's fate: the length handed to
 * the TUN, 0 when dropped. The peer owns 10.0.0.0/8 and fd00::/8. */
static uint32_t inner_model(const uint8_t *p, size_t len, uint64_t counter)
{
	size_t tot;

	if (counter >= WG_REJECT_AFTER_MESSAGES || !len)
		return 0; /* past the counter limit; a keepalive */
	if ((p[0] >> 4) == 4 && len >= 20) {
		size_t ihl = p[0] & 0xf;

		tot = (size_t)p[2] << 8 | p[3];
		if (ihl < 5 || tot < ihl * 4 || tot > len)
			return 0;
		return p[12] == 10 ? (uint32_t)tot : 0;
	}
	if ((p[0] >> 4) == 6 && len >= 40) {
		tot = 40 + ((size_t)p[4] << 8 | p[5]);
		if (tot > len)
			return 0;
		return p[8] == 0xfd ? (uint32_t)tot : 0;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int mode;
	int k;
	uint64_t counter = 0, now = wg_clock_now();
	const uint8_t *plain = NULL;
	size_t plain_len = 0, len;
	uint32_t ret, want = 0;
	bool queued = false, mesh, transit = false;
	uint8_t *buf;

	if (!size || size - 1 > WG_MAX_DATAGRAM)
		return 0;
	mode = data[0] & MODE_MASK;
	k = !!(data[0] & F_RESPONDER);
	mesh = data[0] & F_MESH;
	data++;
	size--;
	prepare(now);

	if (mode >= MODE_SEAL) {
		struct wg_msg_data hdr = { .header.type = WG_MSG_DATA };
		uint64_t c = 0;

		memcpy(&c, data, size < 8 ? size : 8);
		counter = le64toh(c);
		plain = size > 8 ? data + 8 : data;
		plain_len = size > 8 ? size - 8 : 0;
		if (plain_len > WG_PKT_MAX_INNER)
			return 0;
		len = sizeof(hdr) + plain_len + WG_TAG_LEN;
		buf = malloc(len);
		CHECK(buf);
		hdr.receiver_index = htole32(g.kp[k]->entry.index);
		hdr.counter = htole64(counter);
		memcpy(buf, &hdr, sizeof(hdr));
		CHECK(aead_seal(buf + sizeof(hdr), plain, plain_len, NULL, 0, counter,
				g.remote_sess[k].send_key));
		want = inner_model(plain, plain_len, counter);
		if (want && mesh && mesh_model_drops(plain, plain_len))
			want = 0;
	} else {
		/* An exact-size copy: reading past the datagram trips ASan. */
		len = size;
		buf = malloc(len ? len : 1);
		CHECK(buf);
		memcpy(buf, data, len);
		if (mode == MODE_INDEX && len >= 8) {
			uint32_t index = htole32(g.kp[k]->entry.index);

			memcpy(buf + 4, &index, sizeof(index));
		}
		queued = queued_model(buf, len);
	}

	if (mesh)
		mesh_mode(MESH_UNICAST);
	wg_rwlock_rdlock(&g.dev->lock);
	if (mesh)
		ret = receive_mesh(buf, (uint32_t)len, &g.src[!!(data[-1] & F_SRC_V6)], &transit);
	else
		ret = wg_receive(g.dev, buf, (uint32_t)len, &g.src[!!(data[-1] & F_SRC_V6)],
				 &g.tx);
	wg_rwlock_unlock(&g.dev->lock);
	if (mesh)
		mesh_reset();

	if (g.trace)
		fprintf(stderr, "mode %#x: len %zu -> %u (model %u), queued %u%s\n", data[-1],
			len, ret, want, g.dev->hsq.count, transit ? ", through the mesh" : "");
	/* Unsealed bytes never authenticate; sealed ones go exactly where the
	 * model says, and what reaches the TUN is the plaintext. */
	CHECK(ret == want);
	if (ret && !transit) /* one sent on has had its TTL counted down */
		CHECK(!memcmp(buf + sizeof(struct wg_msg_data), plain, ret));
	pthread_mutex_lock(&g.dev->hsq.lock);
	CHECK(g.dev->hsq.count == (queued ? 1u : 0u));
	g.dev->hsq.count = 0; /* nobody runs the handshake thread here */
	g.dev->hsq.head = 0;
	pthread_mutex_unlock(&g.dev->hsq.lock);
	free(buf);
	return 0;
}
