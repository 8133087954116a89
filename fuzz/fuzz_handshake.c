/* libFuzzer target for the handshake thread: wg_handshake_process, which the
 * thread runs for every item it takes off its queue, on a real device
 * (wg_device_new, configured with wg_device_set, threads not started). Items
 * are handshake messages from the network (initiation, response, cookie
 * reply) and requests to initiate; every path of the thread is reached:
 * mac1/mac2 checks, cookie replies under load, the rate limiter, the
 * initiation flood guard, consuming an initiation and answering it,
 * consuming a response and confirming with a keepalive, taking a cookie.
 *
 * The device's identity and its one peer are the fixed keys of hs_fixture.h.
 * The peer's endpoint and every item's source are UDP sockets the harness
 * binds on 127.0.0.1 and ::1, so what the device sends (responses, cookie
 * replies, keepalives, initiations) lands there and is read back and checked;
 * it never leaves loopback.
 *
 * Input: a mode byte (with two flags), a flags byte, a 16-bit little-endian
 * `queued` (what the thread saw waiting, modulo WG_HSQ_CAPACITY + 1: from
 * WG_HSQ_UNDER_LOAD on the device is under load), then
 *  - MODE_MESSAGE: one datagram as a worker queues it (wg_receive's type and
 *    size gate applied first);
 *  - MODE_BUILD: a static private key, an ephemeral private key and two
 *    TAI64N timestamps from which the harness seals two initiations;
 *  - MODE_INITIATE(_TWICE): a public key for a WG_HS_INITIATE item (twice:
 *    a second request right after), then a mask XORed over the response the
 *    remote sends to the device's initiation.
 * Every item's result is read from the counters it moved (dev->stats, all
 * of them) and from the datagrams that came back, and checked against a
 * model of the thread: which outcome the MACs, load, index, Noise state and
 * replay rule call for, and what the peer must hold afterwards.
 *
 * Determinism: before every input the harness puts back the state an input
 * may change (see restore()). What depends on the clock is made explicit:
 * load comes from `queued` only (last_under_load is cleared, so the
 * one-second tail of an earlier load never leaks in), or M_RECENT_LOAD
 * starts that tail at the start of the input; the rate limiter is
 * new for every input and, with F_RL_SPENT, spent for the source right
 * before; the 20 ms initiation guard and the REKEY_TIMEOUT initiation limit
 * are off unless F_FLOOD arms them at the start of the input. Where a time
 * limit is armed the model is one-sided: refusal is required while the
 * limit cannot have passed (measured after the call), either result is
 * accepted after. The test switches WEFT_TEST_CLOCK_SPEEDUP and
 * WEFT_TEST_UNDER_LOAD are removed from the environment. Cookies (mac2)
 * depend on the source port, which is the random port of a drain socket, so
 * a mac2 is valid only when the harness computes it (F_FIX_MACS). */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <sodium.h>

#include "crypto/aead.h"
#include "fuzz/hs_fixture.h"
#include "wg/clock.h"
#include "wg/device.h"
#include "wg/handshake.h"
#include "wg/keypair.h"
#include "wg/log.h"
#include "wg/peer.h"
#include "wg/ratelimiter.h"

#define CHECK(cond)                                                                    \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "fuzz_handshake: check failed at %s:%d: %s\n", \
				__FILE__, __LINE__, #cond);                            \
			abort();                                                       \
		}                                                                      \
	} while (0)

enum mode {
	MODE_MESSAGE = 0,
	MODE_BUILD = 1,
	MODE_INITIATE = 2,
	MODE_INITIATE_TWICE = 3,
	MODE_MASK = 3,
	/* More state, in the mode byte: */
	M_RECENT_LOAD = 1 << 2, /* the queue was past its mark just now */
	M_NO_ENDPOINT = 1 << 3, /* the peer has no endpoint yet */
};

enum {
	F_FIX_MACS = 1 << 0,   /* MACs recomputed as the remote would: mutations reach Noise */
	F_SRC_V6 = 1 << 1,     /* items come from ::1 instead of 127.0.0.1 */
	F_HAS_COOKIE = 1 << 2, /* the remote holds the cookie the device gives that source */
	F_LIVE_INDEX = 1 << 3, /* the peer's live handshake index over a receiver index */
	F_PENDING = 1 << 4,    /* the device has sent the fixture's initiation to the peer */
	F_FLOOD = 1 << 5,      /* the peer consumed and sent an initiation just now */
	F_RL_SPENT = 1 << 6,   /* the source used up its rate-limit burst just now */
	HDR_LEN = 4,           /* mode, flags, queued */
	FLOOD_NS = NSEC_PER_SEC / WG_INITIATIONS_PER_SECOND,
	RL_PACKET_NS = NSEC_PER_SEC / WG_RATELIMIT_PPS,
	RECV_TIMEOUT_MS = 5000, /* a datagram the counters say was sent */
};

/* Every counter of struct wg_stats, by index. */
enum {
#define STAT_INDEX(name) S_##name,
	WG_STATS(STAT_INDEX)
#undef STAT_INDEX
	S_COUNT
};

/* What one item did, told apart by the counters it moved. */
enum outcome {
	OUT_NONE,            /* an initiation request that sent nothing */
	OUT_INVALID_MAC,
	OUT_COOKIE_SENT,     /* under load without a valid mac2: answered with a cookie */
	OUT_RATELIMITED,
	OUT_INIT_FAIL,       /* does not open, unknown key, replayed or flooding */
	OUT_INIT_OK,         /* consumed and answered; a responder keypair */
	OUT_RESP_FAIL,
	OUT_RESP_OK,         /* consumed; an initiator keypair and a keepalive */
	OUT_COOKIE_FAIL,
	OUT_COOKIE_OK,
	OUT_INITIATION_SENT,
	OUT_COUNT
};

static const char *const stat_names[S_COUNT] = {
#define STAT_NAME(name) #name,
	WG_STATS(STAT_NAME)
#undef STAT_NAME
};

static const char *const outcome_names[OUT_COUNT] = {
	"none", "invalid_mac", "cookie_sent", "ratelimited", "init_fail", "init_ok",
	"resp_fail", "resp_ok", "cookie_fail", "cookie_ok", "initiation_sent",
};

#define BIT(o) (1u << (o))

/* Set up once per process. */
static struct {
	struct wg_device *dev;
	struct wg_peer *peer;
	int drain[2];                  /* UDP sockets on 127.0.0.1 and ::1 */
	union wg_sockaddr src[2];      /* their addresses: where items come from */
	struct wg_cookie_maker remote_cookie[2]; /* the remote holding the cookie for src[i] */
	struct wg_cookie_maker local_fresh;      /* the peer's maker as configured */
	struct wg_timers timers;                 /* the peer's timers as configured */
	bool trace;                    /* FUZZ_TRACE=1: print each item's outcome */
} g;

static struct hs_fixture fx;

/* One input's world. */
struct run {
	unsigned int mode, mode_flags, flags, queued;
	bool load;               /* queued is past the mark */
	int v6;
	const union wg_sockaddr *src;
	uint64_t t0;             /* when restore() armed F_FLOOD / F_RL_SPENT */
	bool flood;              /* the 20 ms guard is armed since t0 */
	uint64_t last_sent;      /* lower bound of the peer's last_sent_handshake, 0: none */
	uint8_t latest[WG_TIMESTAMP_LEN]; /* the newest initiation timestamp accepted */
	struct wg_cookie_maker remote_maker; /* the remote's maker for the device */
};

/* The peer's state before an item, for the model. */
struct before {
	struct wg_noise_handshake hs;
	struct wg_cookie_maker maker;
	uint32_t index;          /* hs_entry */
	bool hashed;
};

/* One packet item's result. */
struct fed {
	enum outcome out, pred;  /* observed; the model's, before time-dependent refusals */
	uint8_t reply[sizeof(struct wg_msg_initiation)];
	size_t reply_len;        /* what the device sent back (response, cookie, keepalive) */
	bool cookie_taken;       /* OUT_COOKIE_SENT: the remote took the cookie */
	uint8_t timestamp[WG_TIMESTAMP_LEN]; /* of an initiation the model accepts */
	uint32_t remote_index;   /* its sender index */
	struct wg_noise_session pred_session; /* a response's session by the model */
	struct wg_noise_session session;      /* the keypair the device installed */
};

/* ---- set-up ------------------------------------------------------------- */

static int bind_drain(int family, union wg_sockaddr *a)
{
	socklen_t len = family == AF_INET ? sizeof(a->in4) : sizeof(a->in6);
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	memset(a, 0, sizeof(*a));
	if (family == AF_INET) {
		a->in4.sin_family = AF_INET;
		a->in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	} else {
		a->in6.sin6_family = AF_INET6;
		a->in6.sin6_addr = in6addr_loopback;
	}
	if (fd < 0)
		return -1;
	if (bind(fd, &a->sa, len) || getsockname(fd, &a->sa, &len)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void configure(void)
{
	struct wg_device_config cfg = { 0 };
	struct wg_peer_config *pc;

	cfg.has_private_key = true;
	memcpy(cfg.private_key, fx.local.static_private, WG_KEY_LEN);
	pc = wg_config_add_peer(&cfg);
	CHECK(pc);
	memcpy(pc->public_key, fx.remote.static_public, WG_KEY_LEN);
	pc->has_preshared_key = true;
	memcpy(pc->preshared_key, fx.psk, WG_KEY_LEN);
	pc->has_endpoint = true;
	pc->endpoint = g.src[0];
	CHECK(wg_device_set(g.dev, &cfg) == 0);
	wg_config_clear(&cfg);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	uint64_t now;
	int fd;

	(void)argc;
	(void)argv;
	/* Real time and no forced load: see "Determinism" above. */
	unsetenv("WEFT_TEST_CLOCK_SPEEDUP");
	unsetenv("WEFT_TEST_UNDER_LOAD");
	wg_log_set_level(WG_LOG_SILENT);
	wg_clock_init();
	CHECK(sodium_init() >= 0);
	now = wg_clock_now();
	hs_fixture_init(&fx, now);
	g.trace = getenv("FUZZ_TRACE") != NULL;

	g.drain[0] = bind_drain(AF_INET, &g.src[0]);
	CHECK(g.drain[0] >= 0);
	g.drain[1] = bind_drain(AF_INET6, &g.src[1]);
	if (g.drain[1] < 0) {
		/* No IPv6 loopback here: F_SRC_V6 becomes a no-op. */
		g.drain[1] = g.drain[0];
		g.src[1] = g.src[0];
	}

	/* The TUN is never touched by the handshake thread. */
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	g.dev = wg_device_new("weftfuzzhs0", &fd, NULL, 1, false, WG_DEFAULT_MTU);
	CHECK(g.dev);
	CHECK(!g.dev->force_under_load);
	configure();

	wg_rwlock_rdlock(&g.dev->lock);
	CHECK(!memcmp(g.dev->identity->static_public, fx.local.static_public, WG_KEY_LEN));
	g.peer = wg_device_lookup_peer(g.dev, fx.remote.static_public);
	CHECK(g.peer);
	wg_mutex_lock(&g.peer->lock);
	/* The fixture's pending handshake is valid for this peer. */
	CHECK(!memcmp(g.peer->handshake.precomputed_static_static,
		      fx.local_hs.precomputed_static_static, WG_KEY_LEN));
	CHECK(!memcmp(g.peer->handshake.preshared_key, fx.psk, WG_KEY_LEN));
	CHECK(!memcmp(g.peer->handshake.remote_static, fx.remote.static_public, WG_KEY_LEN));
	g.local_fresh = g.peer->cookie;
	g.timers = g.peer->timers;
	wg_mutex_unlock(&g.peer->lock);
	wg_rwlock_unlock(&g.dev->lock);

	for (int i = 0; i < 2; i++)
		hs_fixture_take_cookie(&fx, &g.remote_cookie[i], &g.src[i], now);
	return 0;
}

/* ---- state --------------------------------------------------------------- */

/* Frees what an input allocated in the device (keypairs, staged packets,
 * rate-limiter entries). Done at the end of every input as well as in
 * restore(), so that an input frees what it allocates: libFuzzer runs an
 * input that does not a second time to look for leaks. */
static void release(void)
{
	wg_rwlock_wrlock(&g.dev->lock);
	if (g.dev->ratelimiter.n_entries) {
		wg_ratelimiter_destroy(&g.dev->ratelimiter);
		CHECK(wg_ratelimiter_init(&g.dev->ratelimiter) == 0);
	}
	wg_mutex_lock(&g.peer->lock);
	wg_keypairs_clear(&g.peer->keypairs);
	wg_peer_purge_staged(g.peer);
	wg_mutex_unlock(&g.peer->lock);
	wg_rwlock_unlock(&g.dev->lock);
}

/* Puts back what an input may have changed, as it was after configuration,
 * plus the state the flags ask for. Taken with the device lock exclusive
 * (like a configuration change) since it reaches into the device. Reset:
 *  - the device's cookie secret: the fixture's, born now, so a cookie made
 *    in the model equals the device's and never rotates within an input;
 *  - hsq.last_under_load (handshake-thread state): load is `queued` alone,
 *    or with M_RECENT_LOAD the one-second tail of a load that ended now;
 *  - the rate limiter: new when used (entries would carry tokens over);
 *  - the peer: no keypairs, no staged packets, its handshake ZEROED with no
 *    timestamp seen (so any initiation is new), or with F_PENDING the
 *    fixture's initiation under a live index and the maker having sent its
 *    mac1; configured endpoint (none with M_NO_ENDPOINT) and timers; last_sent_handshake and
 *    last_initiation_consumption 0 (never), or now with F_FLOOD. */
static void restore(struct run *r)
{
	struct wg_device *dev = g.dev;
	struct wg_peer *p = g.peer;
	uint64_t now = wg_clock_now();

	release();
	wg_rwlock_wrlock(&dev->lock);
	hs_fixture_fix_secrets(&fx, now);
	pthread_mutex_lock(&dev->cookie_checker.lock);
	memcpy(dev->cookie_checker.secret, fx.local_checker.secret, sizeof(dev->cookie_checker.secret));
	dev->cookie_checker.secret_birthdate = now;
	pthread_mutex_unlock(&dev->cookie_checker.lock);
	dev->hsq.last_under_load = 0;

	wg_mutex_lock(&p->lock);
	p->handshake = fx.local_hs;
	if (r->flags & F_PENDING) {
		if (!p->hs_entry.hashed)
			wg_index_insert(&dev->index, &p->hs_entry);
		p->handshake.local_index = p->hs_entry.index;
		p->cookie = fx.local_maker;
	} else {
		wg_noise_handshake_clear(&p->handshake);
		if (p->hs_entry.hashed)
			wg_index_remove(&dev->index, &p->hs_entry);
		p->cookie = g.local_fresh;
	}
	memset(p->handshake.latest_timestamp, 0, WG_TIMESTAMP_LEN);
	p->endpoint = g.src[0];
	if (r->mode_flags & M_NO_ENDPOINT)
		memset(&p->endpoint, 0, sizeof(p->endpoint));
	p->timers = g.timers;
	p->last_sent_handshake = (r->flags & F_FLOOD) ? now : 0;
	p->last_initiation_consumption = (r->flags & F_FLOOD) ? now : 0;
	p->sent_lastminute_handshake = false;
	atomic_store(&p->handshake_queued, false);
	wg_mutex_unlock(&p->lock);

	if (r->mode_flags & M_RECENT_LOAD)
		dev->hsq.last_under_load = now;
	r->t0 = now;
	r->flood = r->flags & F_FLOOD;
	r->last_sent = (r->flags & F_FLOOD) ? now : 0;
	memset(r->latest, 0, sizeof(r->latest));
	if (r->flags & F_HAS_COOKIE) {
		r->remote_maker = g.remote_cookie[r->v6];
		r->remote_maker.cookie_birthdate = now;
	} else {
		r->remote_maker = fx.remote_maker;
	}
	/* The source's burst: a new limiter lets exactly that many through. */
	if (r->flags & F_RL_SPENT)
		for (int i = 0; i < WG_RATELIMIT_BURST; i++)
			CHECK(wg_ratelimiter_allow(&dev->ratelimiter, r->src, now));
	wg_rwlock_unlock(&dev->lock);
}

static void snapshot(uint64_t s[S_COUNT])
{
	int i = 0;

#define STAT_READ(name) s[i++] = atomic_load(&g.dev->stats.name);
	WG_STATS(STAT_READ)
#undef STAT_READ
}

/* The counters an outcome moves, by how much. */
static void outcome_delta(enum outcome o, uint64_t d[S_COUNT])
{
	memset(d, 0, S_COUNT * sizeof(d[0]));
	switch (o) {
	case OUT_NONE:
	case OUT_COUNT:
		break;
	case OUT_INVALID_MAC:
		d[S_hs_invalid_mac] = 1;
		break;
	case OUT_COOKIE_SENT:
		d[S_hs_cookies_sent] = 1;
		break;
	case OUT_RATELIMITED:
		d[S_hs_ratelimited] = 1;
		break;
	case OUT_INIT_FAIL:
		d[S_hs_initiations_received] = 1;
		d[S_hs_failed] = 1;
		break;
	case OUT_INIT_OK:
		d[S_hs_initiations_received] = 1;
		d[S_hs_responses_sent] = 1;
		d[S_keypairs_created] = 1;
		break;
	case OUT_RESP_FAIL:
		d[S_hs_responses_received] = 1;
		d[S_hs_failed] = 1;
		break;
	case OUT_RESP_OK:
		/* and the keepalive: one data message of no inner bytes */
		d[S_hs_responses_received] = 1;
		d[S_keypairs_created] = 1;
		d[S_tx_packets] = 1;
		break;
	case OUT_COOKIE_FAIL:
		d[S_hs_failed] = 1;
		break;
	case OUT_COOKIE_OK:
		d[S_hs_cookies_received] = 1;
		break;
	case OUT_INITIATION_SENT:
		d[S_hs_initiations_sent] = 1;
		break;
	}
}

/* The outcome whose counters moved exactly: any other counter moving (a
 * send error, a drop) fails the input. */
static enum outcome observed(const uint64_t before[S_COUNT], const uint64_t after[S_COUNT])
{
	uint64_t d[S_COUNT], want[S_COUNT];

	for (int i = 0; i < S_COUNT; i++)
		d[i] = after[i] - before[i];
	for (int o = 0; o < OUT_COUNT; o++) {
		outcome_delta((enum outcome)o, want);
		if (!memcmp(d, want, sizeof(d)))
			return (enum outcome)o;
	}
	for (int i = 0; i < S_COUNT; i++)
		if (d[i])
			fprintf(stderr, "fuzz_handshake: %s moved by %llu\n", stat_names[i],
				(unsigned long long)d[i]);
	CHECK(!"the counters match no outcome");
	return OUT_COUNT;
}

static void process(const struct wg_hs_item *item, unsigned int queued)
{
	/* As the handshake thread: the device lock shared around the call. */
	wg_rwlock_rdlock(&g.dev->lock);
	wg_handshake_process(g.dev, item, queued);
	wg_rwlock_unlock(&g.dev->lock);
}

static void take_before(struct before *b)
{
	wg_mutex_lock(&g.peer->lock);
	b->hs = g.peer->handshake;
	b->maker = g.peer->cookie;
	b->index = g.peer->hs_entry.index;
	b->hashed = g.peer->hs_entry.hashed;
	wg_mutex_unlock(&g.peer->lock);
}

/* ---- datagrams ------------------------------------------------------------ */

/* One datagram the device sent to drain socket i (it must come). */
static size_t recv_sent(int i, void *buf, size_t cap)
{
	struct pollfd pfd = { .fd = g.drain[i], .events = POLLIN };
	union wg_sockaddr from;
	socklen_t from_len = sizeof(from);
	ssize_t n;

	CHECK(poll(&pfd, 1, RECV_TIMEOUT_MS) == 1);
	n = recvfrom(g.drain[i], buf, cap, MSG_DONTWAIT | MSG_TRUNC, &from.sa, &from_len);
	CHECK(n >= 0 && (size_t)n <= cap);
	/* From the device's own port. */
	CHECK(from.sa.sa_family == AF_INET ? from.in4.sin_port == htons(g.dev->listen_port) :
					       from.in6.sin6_port == htons(g.dev->listen_port));
	return (size_t)n;
}

/* Nothing more was sent. */
static void expect_quiet(void)
{
	uint8_t buf[256];

	for (int i = 0; i < 2; i++) {
		ssize_t n = recv(g.drain[i], buf, sizeof(buf), MSG_DONTWAIT);

		CHECK(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
	}
}

static bool all_zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;

	for (size_t i = 0; i < n; i++)
		acc |= p[i];
	return acc == 0;
}

static uint32_t get_le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

/* ---- the model ------------------------------------------------------------ */

/* wg_receive's gate: the type word (reserved bytes zero) and the exact size. */
static bool queued_by_receive(const uint8_t *msg, size_t len)
{
	if (len < sizeof(struct wg_message_header) || msg[1] || msg[2] || msg[3])
		return false;
	switch (msg[0]) {
	case WG_MSG_HANDSHAKE_INITIATION:
		return len == sizeof(struct wg_msg_initiation);
	case WG_MSG_HANDSHAKE_RESPONSE:
		return len == sizeof(struct wg_msg_response);
	case WG_MSG_HANDSHAKE_COOKIE:
		return len == sizeof(struct wg_msg_cookie);
	}
	return false;
}

/* An initiation passes when it opens with our key, is from our peer and is
 * newer (byte order is time order) than the newest accepted. */
static enum outcome model_initiation(struct run *r, const uint8_t *msg, struct fed *f)
{
	struct wg_noise_initiation in;
	enum outcome o = OUT_INIT_FAIL;

	if (!wg_noise_open_initiation(&in, (const struct wg_msg_initiation *)msg, &fx.local) ||
	    memcmp(in.remote_static, fx.remote.static_public, WG_KEY_LEN) ||
	    memcmp(in.timestamp, r->latest, WG_TIMESTAMP_LEN) <= 0)
		goto out;
	memcpy(f->timestamp, in.timestamp, WG_TIMESTAMP_LEN);
	f->remote_index = in.remote_index;
	o = OUT_INIT_OK;
out:
	sodium_memzero(&in, sizeof(in));
	return o;
}

/* A response passes when its receiver index names the pending handshake
 * and completes it. */
static enum outcome model_response(const uint8_t *msg, struct before *b, struct fed *f)
{
	const struct wg_msg_response *m = (const struct wg_msg_response *)msg;

	if (!b->hashed || le32toh(m->receiver_index) != b->index ||
	    !wg_noise_consume_response(m, &b->hs, &fx.local) ||
	    !wg_noise_derive_session(&f->pred_session, &b->hs))
		return OUT_RESP_FAIL;
	return OUT_RESP_OK;
}

/* The outcomes allowed for a packet item processed at about t1 (read right
 * after the call); f->pred gets the one the rules give when no time limit
 * is armed. */
static unsigned int model(struct run *r, bool load, const uint8_t *msg, size_t len,
			  struct before *b, uint64_t t1, struct fed *f)
{
	enum wg_cookie_result plain, cookie, mac;
	unsigned int allowed;

	if (msg[0] == WG_MSG_HANDSHAKE_COOKIE) {
		const struct wg_msg_cookie *c = (const struct wg_msg_cookie *)msg;
		bool ok = b->hashed && le32toh(c->receiver_index) == b->index &&
			  wg_cookie_consume_reply(&b->maker, c, t1);

		f->pred = ok ? OUT_COOKIE_OK : OUT_COOKIE_FAIL;
		return BIT(f->pred);
	}
	plain = wg_cookie_validate(&fx.local_checker, msg, len, r->src, false, t1);
	cookie = wg_cookie_validate(&fx.local_checker, msg, len, r->src, true, t1);
	/* The two checks agree on mac1. */
	CHECK(plain != WG_COOKIE_VALID_MAC_WITH_COOKIE);
	CHECK((plain == WG_COOKIE_INVALID_MAC) == (cookie == WG_COOKIE_INVALID_MAC));
	mac = load ? cookie : plain;
	if (load && mac == WG_COOKIE_VALID_MAC_NO_COOKIE) {
		f->pred = OUT_COOKIE_SENT;
		return BIT(f->pred);
	}
	if (mac != (load ? WG_COOKIE_VALID_MAC_WITH_COOKIE : WG_COOKIE_VALID_MAC_NO_COOKIE)) {
		f->pred = OUT_INVALID_MAC;
		return BIT(f->pred);
	}
	if (msg[0] == WG_MSG_HANDSHAKE_INITIATION)
		f->pred = model_initiation(r, msg, f);
	else
		f->pred = model_response(msg, b, f);
	allowed = BIT(f->pred);
	if (f->pred == OUT_INIT_OK && r->flood)
		allowed = t1 - r->t0 < FLOOD_NS ? BIT(OUT_INIT_FAIL) : allowed | BIT(OUT_INIT_FAIL);
	if (load && (r->flags & F_RL_SPENT))
		allowed = t1 - r->t0 < RL_PACKET_NS ? BIT(OUT_RATELIMITED) : allowed | BIT(OUT_RATELIMITED);
	return allowed;
}

/* ---- checks of what the device did ---------------------------------------- */

static void check_response_sent(struct run *r, const uint8_t *msg, struct before *b, struct fed *f)
{
	struct wg_msg_response resp;
	struct wg_keypair *kp;

	f->reply_len = recv_sent(r->v6, &resp, sizeof(resp));
	CHECK(f->reply_len == sizeof(resp));
	memcpy(f->reply, &resp, sizeof(resp));
	CHECK(resp.header.type == WG_MSG_HANDSHAKE_RESPONSE && all_zero(resp.header.reserved, 3));
	CHECK(get_le32((const uint8_t *)&resp.receiver_index) == f->remote_index);
	/* mac1 as the remote checks it; mac2 only with a cookie held. */
	CHECK(wg_cookie_validate(&fx.remote_checker, (const uint8_t *)&resp, sizeof(resp),
				 &fx.local_addr, false, wg_clock_now()) == WG_COOKIE_VALID_MAC_NO_COOKIE);
	if (!b->maker.cookie_birthdate)
		CHECK(all_zero(resp.macs.mac2, WG_MAC_LEN));

	wg_mutex_lock(&g.peer->lock);
	/* The responder's keypair waits in next for the initiator's first
	 * data; the handshake index became the keypair's. */
	kp = g.peer->keypairs.next;
	CHECK(kp && !kp->keys.initiator);
	CHECK(kp->keys.local_index == le32toh(resp.sender_index));
	CHECK(kp->entry.hashed && kp->entry.index == kp->keys.local_index);
	CHECK(kp->keys.remote_index == f->remote_index);
	CHECK(!g.peer->hs_entry.hashed);
	CHECK(g.peer->handshake.state == WG_NOISE_ZEROED);
	CHECK(!memcmp(g.peer->handshake.latest_timestamp, f->timestamp, WG_TIMESTAMP_LEN));
	CHECK(wg_sockaddr_equal(&g.peer->endpoint, r->src));
	f->session = kp->keys;
	/* As if the next initiation came 20 ms later: the replay rule, not
	 * the flood guard, decides about it (the guard has F_FLOOD). */
	g.peer->last_initiation_consumption = 0;
	wg_mutex_unlock(&g.peer->lock);
	memcpy(r->latest, f->timestamp, WG_TIMESTAMP_LEN);
	r->flood = false;
}

static void same_session(const struct wg_noise_session *a, const struct wg_noise_session *b)
{
	CHECK(a->initiator == b->initiator && a->local_index == b->local_index &&
	      a->remote_index == b->remote_index);
	CHECK(!memcmp(a->send_key, b->send_key, WG_KEY_LEN));
	CHECK(!memcmp(a->recv_key, b->recv_key, WG_KEY_LEN));
}

/* After a response: the initiator's keypair is current and the session is
 * confirmed with a keepalive sealed under it. */
static void check_keepalive_sent(struct run *r, const uint8_t *msg, struct fed *f)
{
	struct wg_msg_data hdr;
	uint8_t ka[64], none[1];
	struct wg_keypair *kp;

	f->reply_len = recv_sent(r->v6, ka, sizeof(ka));
	CHECK(f->reply_len == sizeof(hdr) + WG_TAG_LEN);
	memcpy(f->reply, ka, f->reply_len);
	memcpy(&hdr, ka, sizeof(hdr));
	CHECK(hdr.header.type == WG_MSG_DATA && all_zero(hdr.header.reserved, 3));
	CHECK(le32toh(hdr.receiver_index) ==
	      get_le32(msg + offsetof(struct wg_msg_response, sender_index)));
	CHECK(le64toh(hdr.counter) == 0);
	CHECK(aead_open(none, ka + sizeof(hdr), WG_TAG_LEN, NULL, 0, 0, f->pred_session.send_key));

	wg_mutex_lock(&g.peer->lock);
	kp = g.peer->keypairs.current;
	CHECK(kp && kp->keys.initiator);
	same_session(&kp->keys, &f->pred_session);
	CHECK(kp->entry.hashed && kp->entry.index == kp->keys.local_index);
	CHECK(!g.peer->hs_entry.hashed);
	CHECK(wg_sockaddr_equal(&g.peer->endpoint, r->src));
	f->session = kp->keys;
	wg_mutex_unlock(&g.peer->lock);
}

/* Under load: a cookie reply to the sender, which the remote takes exactly
 * when it sent this mac1; its next mac2 then passes. */
static void check_cookie_sent(struct run *r, uint8_t *msg, size_t len, struct fed *f)
{
	struct wg_msg_cookie reply;
	bool expect;

	f->reply_len = recv_sent(r->v6, &reply, sizeof(reply));
	CHECK(f->reply_len == sizeof(reply));
	memcpy(f->reply, &reply, sizeof(reply));
	CHECK(reply.header.type == WG_MSG_HANDSHAKE_COOKIE && all_zero(reply.header.reserved, 3));
	CHECK(!memcmp(&reply.receiver_index, msg + offsetof(struct wg_msg_initiation, sender_index), 4));
	expect = r->remote_maker.have_sent_mac1 &&
		 !memcmp(r->remote_maker.last_mac1_sent, msg + len - sizeof(struct wg_macs), WG_MAC_LEN);
	f->cookie_taken = wg_cookie_consume_reply(&r->remote_maker, &reply, wg_clock_now());
	CHECK(f->cookie_taken == expect);
}

static void check_cookie_taken(struct before *b)
{
	wg_mutex_lock(&g.peer->lock);
	CHECK(!memcmp(g.peer->cookie.cookie, b->maker.cookie, WG_COOKIE_LEN));
	CHECK(g.peer->cookie.cookie_birthdate && !g.peer->cookie.have_sent_mac1);
	wg_mutex_unlock(&g.peer->lock);
}

/* ---- items ---------------------------------------------------------------- */

/* One handshake message as a worker queued it, from r->src. */
static void feed_packet(struct run *r, uint8_t *msg, size_t len, struct fed *f)
{
	struct wg_hs_item item = { .kind = WG_HS_PACKET, .len = (uint16_t)len, .src = *r->src };
	uint64_t before[S_COUNT], after[S_COUNT], t1;
	struct before b;
	unsigned int allowed;

	memset(f, 0, sizeof(*f));
	memcpy(item.data, msg, len);
	take_before(&b);
	snapshot(before);
	process(&item, r->queued);
	t1 = wg_clock_now();
	snapshot(after);
	f->out = observed(before, after);
	if (r->load || !(r->mode_flags & M_RECENT_LOAD) || t1 - r->t0 < NSEC_PER_SEC) {
		allowed = model(r, r->load || (r->mode_flags & M_RECENT_LOAD), msg, len, &b, t1, f);
	} else {
		/* The load's tail may have ended before the call: either. */
		struct before b2 = b;
		struct fed f2 = *f;

		allowed = model(r, true, msg, len, &b, t1, f) | model(r, false, msg, len, &b2, t1, &f2);
		if (f2.pred != f->pred)
			f->pred = OUT_COUNT; /* unknown */
		sodium_memzero(&b2, sizeof(b2));
		sodium_memzero(&f2, sizeof(f2));
	}
	if (g.trace)
		fprintf(stderr, "  type %u len %zu: %s (model %s)\n", msg[0], len,
			outcome_names[f->out], f->pred < OUT_COUNT ? outcome_names[f->pred] : "?");
	CHECK(allowed & BIT(f->out));

	switch (f->out) {
	case OUT_INIT_OK:
		check_response_sent(r, msg, &b, f);
		break;
	case OUT_RESP_OK:
		check_keepalive_sent(r, msg, f);
		break;
	case OUT_COOKIE_SENT:
		check_cookie_sent(r, msg, len, f);
		break;
	case OUT_COOKIE_OK:
		check_cookie_taken(&b);
		break;
	default:
		break;
	}
	expect_quiet();
	/* Nothing asked for another handshake. */
	CHECK(g.dev->hsq.count == 0);
	sodium_memzero(&b, sizeof(b));
	sodium_memzero(&item, sizeof(item));
}

/* A packet, and when the device answers with a cookie the remote takes, the
 * same message again with the MACs the remote now computes (the whole
 * under-load exchange). f is the last round's. */
static void feed_with_cookie(struct run *r, uint8_t *msg, size_t len, struct fed *f)
{
	feed_packet(r, msg, len, f);
	if (f->out != OUT_COOKIE_SENT || !f->cookie_taken)
		return;
	wg_cookie_add_macs(&r->remote_maker, msg, len, wg_clock_now());
	CHECK(wg_cookie_validate(&fx.local_checker, msg, len, r->src, true, wg_clock_now()) ==
	      WG_COOKIE_VALID_MAC_WITH_COOKIE);
	feed_packet(r, msg, len, f);
	CHECK(f->out != OUT_COOKIE_SENT);
}

/* A WG_HS_INITIATE item for key. Returns the outcome; with
 * OUT_INITIATION_SENT, init is what the device sent. */
static enum outcome feed_initiate(struct run *r, const uint8_t key[WG_KEY_LEN],
				  struct wg_msg_initiation *init)
{
	struct wg_hs_item item = { .kind = WG_HS_INITIATE, .len = WG_KEY_LEN };
	bool is_peer = !memcmp(key, fx.remote.static_public, WG_KEY_LEN), has_endpoint;
	uint64_t before[S_COUNT], after[S_COUNT], t, t1;
	struct wg_noise_initiation in;
	unsigned int allowed;
	enum outcome out, pred;
	int to;

	memcpy(item.data, key, WG_KEY_LEN);
	wg_mutex_lock(&g.peer->lock);
	to = g.peer->endpoint.sa.sa_family == AF_INET6;
	has_endpoint = g.peer->endpoint.sa.sa_family != 0;
	wg_mutex_unlock(&g.peer->lock);
	/* Only to our peer, and only where it can be reached. */
	pred = is_peer && has_endpoint ? OUT_INITIATION_SENT : OUT_NONE;
	atomic_store(&g.peer->handshake_queued, true); /* as wg_handshake_request leaves it */
	snapshot(before);
	t = wg_clock_now();
	process(&item, r->queued);
	t1 = wg_clock_now();
	snapshot(after);
	out = observed(before, after);
	allowed = BIT(pred);
	/* At most one initiation per REKEY_TIMEOUT. */
	if (pred == OUT_INITIATION_SENT && r->last_sent)
		allowed = t1 - r->last_sent < (uint64_t)WG_REKEY_TIMEOUT * NSEC_PER_SEC ?
				  BIT(OUT_NONE) : allowed | BIT(OUT_NONE);
	if (g.trace)
		fprintf(stderr, "  initiate: %s (model %s)\n", outcome_names[out], outcome_names[pred]);
	CHECK(allowed & BIT(out));
	/* The request is taken off the peer it names. */
	CHECK(atomic_load(&g.peer->handshake_queued) == !is_peer);
	atomic_store(&g.peer->handshake_queued, false);

	if (out == OUT_INITIATION_SENT) {
		r->last_sent = t;
		CHECK(recv_sent(to, init, sizeof(*init)) == sizeof(*init));
		CHECK(init->header.type == WG_MSG_HANDSHAKE_INITIATION &&
		      all_zero(init->header.reserved, 3));
		CHECK(wg_cookie_validate(&fx.remote_checker, (const uint8_t *)init, sizeof(*init),
					 &fx.local_addr, false, t1) == WG_COOKIE_VALID_MAC_NO_COOKIE);
		/* The remote opens it and finds the device's key. */
		CHECK(wg_noise_open_initiation(&in, init, &fx.remote));
		CHECK(!memcmp(in.remote_static, fx.local.static_public, WG_KEY_LEN));
		wg_mutex_lock(&g.peer->lock);
		if (!g.peer->cookie.cookie_birthdate)
			CHECK(all_zero(init->macs.mac2, WG_MAC_LEN));
		CHECK(g.peer->handshake.state == WG_NOISE_CREATED_INITIATION);
		CHECK(g.peer->handshake.local_index == le32toh(init->sender_index));
		CHECK(g.peer->hs_entry.hashed && g.peer->hs_entry.index == g.peer->handshake.local_index);
		CHECK(g.peer->cookie.have_sent_mac1 &&
		      !memcmp(g.peer->cookie.last_mac1_sent, init->macs.mac1, WG_MAC_LEN));
		wg_mutex_unlock(&g.peer->lock);
		sodium_memzero(&in, sizeof(in));
	}
	expect_quiet();
	CHECK(g.dev->hsq.count == 0);
	return out;
}

/* ---- modes ---------------------------------------------------------------- */

static void run_message(struct run *r, const uint8_t *data, size_t len)
{
	uint8_t msg[sizeof(struct wg_msg_initiation)];
	struct fed f;

	if (!queued_by_receive(data, len)) {
		if (g.trace)
			fprintf(stderr, "  gate: not queued\n");
		return;
	}
	memcpy(msg, data, len);
	if (r->flags & F_LIVE_INDEX) {
		size_t at = msg[0] == WG_MSG_HANDSHAKE_COOKIE ?
				    offsetof(struct wg_msg_cookie, receiver_index) :
			    msg[0] == WG_MSG_HANDSHAKE_RESPONSE ?
				    offsetof(struct wg_msg_response, receiver_index) : 0;
		uint32_t index;

		wg_mutex_lock(&g.peer->lock);
		index = htole32(g.peer->hs_entry.index);
		wg_mutex_unlock(&g.peer->lock);
		if (at)
			memcpy(msg + at, &index, sizeof(index));
	}
	if ((r->flags & F_FIX_MACS) && msg[0] != WG_MSG_HANDSHAKE_COOKIE)
		wg_cookie_add_macs(&r->remote_maker, msg, len, wg_clock_now());
	feed_with_cookie(r, msg, len, &f);
	if (f.out == OUT_COOKIE_OK) {
		/* A reply can come only from the remote, whose checker gives
		 * the device this cookie; and it is taken once. */
		if (r->flags & F_PENDING) {
			wg_mutex_lock(&g.peer->lock);
			CHECK(!memcmp(g.peer->cookie.cookie, fx.local_cookie, WG_COOKIE_LEN));
			wg_mutex_unlock(&g.peer->lock);
		}
		feed_packet(r, msg, len, &f);
		CHECK(f.out == OUT_COOKIE_FAIL);
	}
	sodium_memzero(&f, sizeof(f));
}

struct build_fields {
	uint8_t private_key[WG_KEY_LEN];
	uint8_t ephemeral[WG_KEY_LEN];
	uint8_t timestamp[2][WG_TIMESTAMP_LEN];
};

/* Two initiations sealed by the harness from a fuzzed static key, ephemeral
 * key and timestamps: each is consumed exactly when it comes from our peer
 * with a timestamp newer than the newest accepted before; the initiator
 * then completes the handshake with the response and holds the device's
 * keys. */
static void run_build(struct run *r, const uint8_t *data, size_t len)
{
	struct build_fields bf = { 0 };
	struct wg_noise_identity x;
	struct wg_noise_handshake xhs = { 0 };
	struct wg_noise_session xs = { 0 };
	struct wg_msg_initiation m;
	struct wg_msg_response resp;
	uint8_t latest[WG_TIMESTAMP_LEN] = { 0 };
	struct fed f;
	bool is_peer;

	memcpy(&bf, data, len < sizeof(bf) ? len : sizeof(bf));
	wg_noise_identity_set(&x, bf.private_key);
	if (!x.has_identity)
		goto out;
	is_peer = !memcmp(x.static_public, fx.remote.static_public, WG_KEY_LEN);
	wg_noise_handshake_init(&xhs, &x, fx.local.static_public, fx.psk);
	for (int i = 0; i < 2; i++) {
		enum outcome want;

		CHECK(hs_fixture_initiation(&m, &xhs, &x, bf.ephemeral, bf.timestamp[i], HS_IDX_BUILT));
		wg_cookie_add_macs(&r->remote_maker, (uint8_t *)&m, sizeof(m), wg_clock_now());
		feed_with_cookie(r, (uint8_t *)&m, sizeof(m), &f);
		/* The remote made the MACs, so only the rules below decide. */
		if (!is_peer)
			want = OUT_INIT_FAIL;
		else if (memcmp(bf.timestamp[i], latest, WG_TIMESTAMP_LEN) > 0)
			want = OUT_INIT_OK;
		else
			want = OUT_INIT_FAIL;
		CHECK(f.pred == want || f.pred == OUT_COUNT);
		if (f.out != OUT_INIT_OK)
			continue;
		memcpy(latest, bf.timestamp[i], WG_TIMESTAMP_LEN);
		CHECK(f.remote_index == HS_IDX_BUILT);
		memcpy(&resp, f.reply, sizeof(resp));
		CHECK(wg_noise_consume_response(&resp, &xhs, &x));
		CHECK(wg_noise_derive_session(&xs, &xhs));
		CHECK(xs.initiator && xs.remote_index == f.session.local_index);
		CHECK(!memcmp(xs.send_key, f.session.recv_key, WG_KEY_LEN));
		CHECK(!memcmp(xs.recv_key, f.session.send_key, WG_KEY_LEN));
	}
	sodium_memzero(&f, sizeof(f));
out:
	sodium_memzero(&bf, sizeof(bf));
	sodium_memzero(&x, sizeof(x));
	sodium_memzero(&xhs, sizeof(xhs));
	sodium_memzero(&xs, sizeof(xs));
}

/* The device initiates; the remote answers (the response XORed with the
 * mask); an unmasked answer completes the handshake, with the remote's keys,
 * and the keepalive opens under them. */
static void run_initiate(struct run *r, const uint8_t *data, size_t len)
{
	uint8_t key[WG_KEY_LEN] = { 0 }, none[1];
	const uint8_t *mask = len > WG_KEY_LEN ? data + WG_KEY_LEN : NULL;
	size_t mask_len = len > WG_KEY_LEN ? len - WG_KEY_LEN : 0;
	struct wg_noise_handshake rhs = { 0 };
	struct wg_noise_session rs = { 0 };
	struct wg_noise_initiation in;
	struct wg_msg_initiation init;
	struct wg_msg_response resp;
	uint8_t *bytes = (uint8_t *)&resp;
	enum outcome sent;
	struct fed f;

	memcpy(key, data, len < WG_KEY_LEN ? len : WG_KEY_LEN);
	sent = feed_initiate(r, key, &init);
	if (r->mode == MODE_INITIATE_TWICE) {
		struct wg_msg_initiation again;

		if (feed_initiate(r, key, &again) == OUT_INITIATION_SENT) {
			init = again;
			sent = OUT_INITIATION_SENT;
		}
	}
	if (sent != OUT_INITIATION_SENT)
		return;

	wg_noise_handshake_init(&rhs, &fx.remote, fx.local.static_public, fx.psk);
	CHECK(wg_noise_open_initiation(&in, &init, &fx.remote));
	CHECK(wg_noise_accept_initiation(&rhs, &in));
	CHECK(wg_noise_create_response(&resp, &rhs, &fx.remote, HS_IDX_REMOTE));
	CHECK(wg_noise_derive_session(&rs, &rhs));
	if (mask_len > sizeof(resp))
		mask_len = sizeof(resp);
	if (!(r->flags & F_FIX_MACS))
		wg_cookie_add_macs(&r->remote_maker, bytes, sizeof(resp), wg_clock_now());
	for (size_t i = 0; i < mask_len; i++)
		bytes[i] ^= mask[i];
	if (r->flags & F_FIX_MACS)
		wg_cookie_add_macs(&r->remote_maker, bytes, sizeof(resp), wg_clock_now());
	if (!queued_by_receive(bytes, sizeof(resp)))
		goto out; /* the mask changed the type */
	feed_with_cookie(r, bytes, sizeof(resp), &f);
	if (!mask_len || all_zero(mask, mask_len))
		CHECK(f.pred == OUT_RESP_OK || f.pred == OUT_COUNT);
	if (f.out == OUT_RESP_OK) {
		CHECK(!memcmp(f.session.send_key, rs.recv_key, WG_KEY_LEN));
		CHECK(!memcmp(f.session.recv_key, rs.send_key, WG_KEY_LEN));
		CHECK(f.session.remote_index == le32toh(resp.sender_index));
		CHECK(rs.remote_index == f.session.local_index);
		CHECK(aead_open(none, f.reply + sizeof(struct wg_msg_data), WG_TAG_LEN, NULL, 0, 0,
				rs.recv_key));
	}
	sodium_memzero(&f, sizeof(f));
out:
	sodium_memzero(&rhs, sizeof(rhs));
	sodium_memzero(&rs, sizeof(rs));
	sodium_memzero(&in, sizeof(in));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run r = { 0 };

	if (size < HDR_LEN)
		return 0;
	r.mode = data[0] & MODE_MASK;
	r.mode_flags = data[0] & ~(unsigned int)MODE_MASK;
	r.flags = data[1];
	r.queued = (unsigned int)(data[2] | data[3] << 8) % (WG_HSQ_CAPACITY + 1);
	r.load = r.queued >= WG_HSQ_UNDER_LOAD;
	r.v6 = !!(r.flags & F_SRC_V6);
	r.src = &g.src[r.v6];
	if (g.trace)
		fprintf(stderr, "mode %#x flags %#x queued %u\n", data[0], r.flags, r.queued);
	restore(&r);
	switch (r.mode) {
	case MODE_MESSAGE:
		run_message(&r, data + HDR_LEN, size - HDR_LEN);
		break;
	case MODE_BUILD:
		run_build(&r, data + HDR_LEN, size - HDR_LEN);
		break;
	default:
		run_initiate(&r, data + HDR_LEN, size - HDR_LEN);
		break;
	}
	/* Nobody runs the queue here; nothing may have been put on it. */
	pthread_mutex_lock(&g.dev->hsq.lock);
	CHECK(g.dev->hsq.count == 0);
	pthread_mutex_unlock(&g.dev->hsq.lock);
	release();
	sodium_memzero(&r, sizeof(r));
	return 0;
}
