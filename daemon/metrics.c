/* The exposition of a device: the WireGuard exporters' per-peer series,
 * then weft's own (device counters, handshake state, workers and offloads,
 * the AEAD backend, VM ports, the mesh's discovery). Counters come from the same atomics and
 * snapshots as `stats=1`, `wg show` and `weft port list`, so the numbers
 * agree with them; a counter added to WG_STATS or to the port counters
 * shows up here without a change. */
#include "daemon/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "crypto/aead.h"
#include "datapath/datapath.h"
#include "mesh/mesh.h"
#include "pkt/prefix.h"
#include "port/ports.h"
#include "port/text.h"
#include "text/text.h"
#include "wg/clock.h"
#include "wg/device.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "unknown"
#endif

void metrics_label_value(struct text_buf *b, const char *s)
{
	for (;;) {
		size_t n = strcspn(s, "\\\"\n");

		text_buf_add(b, s, n);
		s += n;
		if (!*s)
			return;
		text_buf_add(b, *s == '\\' ? "\\\\" : *s == '"' ? "\\\"" : "\\n", 2);
		s++;
	}
}

static void family(struct text_buf *b, const char *name, const char *type, const char *help)
{
	text_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample: name{interface="IF",k="v",...} value, the extra labels as
 * (key, value) pairs ending with NULL. */
static void sample(struct text_buf *b, const char *name, const char *ifname, uint64_t value, ...)
{
	const char *k;
	va_list ap;

	text_buf_printf(b, "%s{interface=\"", name);
	metrics_label_value(b, ifname);
	text_buf_add(b, "\"", 1);
	va_start(ap, value);
	while ((k = va_arg(ap, const char *))) {
		text_buf_printf(b, ",%s=\"", k);
		metrics_label_value(b, va_arg(ap, const char *));
		text_buf_add(b, "\"", 1);
	}
	va_end(ap);
	text_buf_printf(b, "} %llu\n", (unsigned long long)value);
}

/* One sample without extra labels of a nanosecond count, in seconds. */
static void sample_seconds(struct text_buf *b, const char *name, const char *ifname, uint64_t ns)
{
	text_buf_printf(b, "%s{interface=\"", name);
	metrics_label_value(b, ifname);
	text_buf_printf(b, "\"} %llu.%09llu\n", (unsigned long long)(ns / 1000000000ull),
			(unsigned long long)(ns % 1000000000ull));
}

/* A family of one counter sample: PREFIX+NAME+_total, or for a time in
 * nanoseconds (NAME_ns) PREFIX+NAME+_seconds_total in seconds, the base
 * unit Prometheus names want. */
static void lone_counter(struct text_buf *b, const char *prefix, const char *name,
			 const char *help, const char *ifname, uint64_t v)
{
	size_t n = strlen(name);
	bool ns = n > 3 && !strcmp(name + n - 3, "_ns");
	char metric[128];

	snprintf(metric, sizeof(metric), "%s%.*s%s", prefix, (int)(ns ? n - 3 : n), name,
		 ns ? "_seconds_total" : "_total");
	family(b, metric, "counter", help);
	if (ns)
		sample_seconds(b, metric, ifname, v);
	else
		sample(b, metric, ifname, v, NULL);
}

/* ---- peers: the exporters' names ----------------------------------------- */

/* "a.b.c.d/n,x::/m" as the exporters join them; malloc'd, NULL when out
 * of memory. */
static char *join_allowed_ips(const struct wg_peer_config *pc)
{
	struct text_buf b = { 0 };
	char *text, s[IP_PREFIX_STRLEN];
	size_t len;

	for (size_t i = 0; i < pc->n_allowed_ips; i++) {
		ip_prefix_format(&pc->allowed_ips[i].prefix, s);
		text_buf_printf(&b, "%s%s", i ? "," : "", s);
	}
	return text_buf_finish(&b, &text, &len) ? NULL : text;
}

/* weft_peers, and with labels the exporters' per-peer series. */
static int render_peers(struct text_buf *b, struct wg_device *dev, bool labels)
{
	static const struct {
		const char *name, *type, *help;
	} series[] = {
		{ "wireguard_sent_bytes_total", "counter", "Bytes sent to the peer" },
		{ "wireguard_received_bytes_total", "counter", "Bytes received from the peer" },
		{ "wireguard_latest_handshake_seconds", "gauge",
		  "UNIX time of the last handshake with the peer (0: none)" },
	};
	struct wg_device_config cfg;
	char (*keys)[sodium_base64_ENCODED_LEN(WG_KEY_LEN, sodium_base64_VARIANT_ORIGINAL)] = NULL;
	char **ips = NULL;
	int err = wg_device_get(dev, &cfg);

	if (err)
		return err;
	/* The private and preshared keys are not needed: gone at once. */
	sodium_memzero(cfg.private_key, sizeof(cfg.private_key));
	if (cfg.n_peers) {
		keys = calloc(cfg.n_peers, sizeof(*keys));
		ips = calloc(cfg.n_peers, sizeof(*ips));
		if (!keys || !ips) {
			err = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < cfg.n_peers; i++) {
		sodium_memzero(cfg.peers[i].preshared_key, sizeof(cfg.peers[i].preshared_key));
		sodium_bin2base64(keys[i], sizeof(keys[i]), cfg.peers[i].public_key, WG_KEY_LEN,
				  sodium_base64_VARIANT_ORIGINAL);
		ips[i] = join_allowed_ips(&cfg.peers[i]);
		if (!ips[i]) {
			err = -ENOMEM;
			goto out;
		}
	}
	family(b, "weft_peers", "gauge", "Peers configured on the interface");
	sample(b, "weft_peers", dev->ifname, cfg.n_peers, NULL);
	for (size_t s = 0; s < sizeof(series) / sizeof(series[0]) && cfg.n_peers && labels; s++) {
		family(b, series[s].name, series[s].type, series[s].help);
		for (size_t i = 0; i < cfg.n_peers; i++) {
			const struct wg_peer_config *pc = &cfg.peers[i];
			uint64_t v = s == 0 ? pc->tx_bytes : s == 1 ? pc->rx_bytes
								: pc->last_handshake_sec;

			sample(b, series[s].name, dev->ifname, v, "public_key", keys[i],
			       "allowed_ips", ips[i], NULL);
		}
	}
out:
	for (size_t i = 0; ips && i < cfg.n_peers; i++)
		free(ips[i]);
	free(ips);
	free(keys);
	wg_config_clear(&cfg);
	return err;
}

/* ---- device counters (wg/stats.h) --------------------------------------- */

static const struct device_counter {
	const char *name;
	size_t offset;
} device_counters[] = {
#define DEVICE_COUNTER(n) { #n, offsetof(struct wg_stats, n) },
	WG_STATS(DEVICE_COUNTER)
#undef DEVICE_COUNTER
};

/* Words for the counters whose names do not say enough; the others get a
 * generic line. */
static const struct {
	const char *name, *help;
} counter_help[] = {
	{ "rx_packets", "Authenticated data messages received" },
	{ "rx_bytes", "Bytes of authenticated data messages received" },
	{ "tx_packets", "Data messages sent" },
	{ "tx_bytes", "Bytes of data messages sent" },
	{ "hs_initiations_sent", "Handshake initiations sent" },
	{ "hs_initiations_received", "Handshake initiations with a valid mac1 taken up by the handshake thread" },
	{ "hs_responses_sent", "Handshake responses sent" },
	{ "hs_responses_received", "Handshake responses with a valid mac1 taken up by the handshake thread" },
	{ "hs_cookies_received", "Cookie replies received and accepted" },
	{ "hs_invalid_mac", "Handshake messages with a bad mac1 or mac2" },
	{ "hs_ratelimited", "Handshake initiations refused by the rate limiter" },
	{ "hs_failed", "Handshake messages that did not authenticate or were replayed" },
	{ "hs_queue_full", "Handshake messages dropped at a full handshake queue" },
	{ "hs_cookies_sent", "Cookie replies sent (under load)" },
	{ "keypairs_created", "Session keypairs derived" },
};

static uint64_t device_value(struct wg_device *dev, const struct device_counter *c)
{
	_Atomic uint64_t *p = (_Atomic uint64_t *)((char *)&dev->stats + c->offset);

	return atomic_load_explicit(p, memory_order_relaxed);
}

static void render_device_counters(struct text_buf *b, struct wg_device *dev)
{
	const size_t n = sizeof(device_counters) / sizeof(device_counters[0]);
	char help[160];

	/* Drops: one family, the reason as a label. */
	family(b, "weft_drops_total", "counter",
	       "Packets dropped by the device, by reason (wg/stats.h)");
	for (size_t i = 0; i < n; i++)
		if (!strncmp(device_counters[i].name, "drop_", 5))
			sample(b, "weft_drops_total", dev->ifname,
			       device_value(dev, &device_counters[i]), "reason",
			       device_counters[i].name + 5, NULL);
	/* The rest: weft_NAME_total, hs_ spelled out as handshake_. */
	for (size_t i = 0; i < n; i++) {
		const char *name = device_counters[i].name;
		const char *words = NULL;
		bool hs = !strncmp(name, "hs_", 3);

		if (!strncmp(name, "drop_", 5))
			continue;
		for (size_t k = 0; k < sizeof(counter_help) / sizeof(counter_help[0]); k++)
			if (!strcmp(counter_help[k].name, name))
				words = counter_help[k].help;
		if (!words) {
			snprintf(help, sizeof(help), "The device counter %s (wg/stats.h)", name);
			words = help;
		}
		lone_counter(b, hs ? "weft_handshake_" : "weft_", hs ? name + 3 : name, words,
			     dev->ifname, device_value(dev, &device_counters[i]));
	}
}

/* ---- handshake load, workers, offloads, AEAD ------------------------------ */

/* Per worker: its batches (completions per loop turn) and whether it still
 * sends with GSO. The workers run as long as the device does, which
 * outlives every scrape. */
static void render_worker_counters(struct text_buf *b, struct wg_device *dev)
{
	struct dp_worker_counters c[WG_MAX_WORKERS] = { 0 };
	char id[16];

	for (int i = 0; i < dev->n_workers; i++)
		if (dev->workers[i])
			dp_worker_read_counters(dev->workers[i], &c[i]);
	family(b, "weft_worker_turns_total", "counter",
	       "Loop turns of a data-path worker that handled completions");
	for (int i = 0; i < dev->n_workers; i++) {
		snprintf(id, sizeof(id), "%d", i);
		sample(b, "weft_worker_turns_total", dev->ifname, c[i].turns, "worker", id, NULL);
	}
	family(b, "weft_worker_completions_total", "counter",
	       "io_uring completions a data-path worker handled (per turn: its batch size)");
	for (int i = 0; i < dev->n_workers; i++) {
		snprintf(id, sizeof(id), "%d", i);
		sample(b, "weft_worker_completions_total", dev->ifname, c[i].completions, "worker", id,
		       NULL);
	}
	family(b, "weft_worker_udp_gso", "gauge",
	       "1 while a worker sends with UDP GSO (it turns it off for good on EIO)");
	for (int i = 0; i < dev->n_workers; i++) {
		snprintf(id, sizeof(id), "%d", i);
		sample(b, "weft_worker_udp_gso", dev->ifname, c[i].gso, "worker", id, NULL);
	}
}

static void render_state(struct text_buf *b, struct wg_device *dev)
{
	struct wg_handshake_queue *q = &dev->hsq;
	uint64_t last, now = wg_clock_now();
	unsigned int queued;
	bool load;
	char id[16], cpu[16];

	pthread_mutex_lock(&q->lock);
	queued = q->count;
	pthread_mutex_unlock(&q->lock);
	/* The handshake thread's own rule (wg/handshake.c under_load): a
	 * queue past an eighth, or less than a second since it was. That
	 * thread writes last_under_load alone; a torn or stale read only
	 * shifts the answer by one scrape. */
	last = __atomic_load_n(&q->last_under_load, __ATOMIC_RELAXED);
	load = dev->force_under_load || queued >= WG_HSQ_UNDER_LOAD ||
	       (last && !wg_clock_after(now, last, NSEC_PER_SEC));
	family(b, "weft_handshake_under_load", "gauge",
	       "1 while the handshake thread answers initiations with cookies (whitepaper 5.3)");
	sample(b, "weft_handshake_under_load", dev->ifname, load, NULL);
	family(b, "weft_handshake_queue_length", "gauge",
	       "Handshake messages waiting for the handshake thread");
	sample(b, "weft_handshake_queue_length", dev->ifname, queued, NULL);
	family(b, "weft_handshake_queue_capacity", "gauge",
	       "Size of the handshake queue (under load from an eighth of it)");
	sample(b, "weft_handshake_queue_capacity", dev->ifname, WG_HSQ_CAPACITY, NULL);

	/* The TUN link as read where it lives, which after `ip link set
	 * IFNAME netns NS` is NS, not weftd's namespace. */
	family(b, "weft_tun_mtu", "gauge", "MTU of the TUN link, which packets are padded to");
	sample(b, "weft_tun_mtu", dev->ifname, atomic_load(&dev->mtu), NULL);
	family(b, "weft_tun_up", "gauge", "1 while the TUN link is up");
	sample(b, "weft_tun_up", dev->ifname, atomic_load(&dev->tun_up), NULL);
	family(b, "weft_tun_txqueuelen", "gauge", "Queue length of the TUN link, in packets");
	sample(b, "weft_tun_txqueuelen", dev->ifname, atomic_load(&dev->tun_txqlen), NULL);
	family(b, "weft_tun_moved", "gauge",
	       "1 while the TUN link lives in another network namespace than weftd");
	sample(b, "weft_tun_moved", dev->ifname, atomic_load(&dev->tun_nsid) >= 0, NULL);
	family(b, "weft_workers", "gauge", "Data-path worker threads");
	sample(b, "weft_workers", dev->ifname, (uint64_t)dev->n_workers, NULL);
	family(b, "weft_worker_info", "gauge",
	       "One per data-path worker: the CPU it is pinned to (none: not pinned)");
	for (int i = 0; i < dev->n_workers; i++) {
		snprintf(id, sizeof(id), "%d", i);
		if (dev->cpus[i] >= 0)
			snprintf(cpu, sizeof(cpu), "%d", dev->cpus[i]);
		else
			snprintf(cpu, sizeof(cpu), "none");
		sample(b, "weft_worker_info", dev->ifname, 1, "worker", id, "cpu", cpu, NULL);
	}
	render_worker_counters(b, dev);
	family(b, "weft_offload_enabled", "gauge",
	       "1 when an offload is in use: tun (virtio-net header, TSO, GRO on the TUN), "
	       "udp_gso, udp_gro (as set at start; a worker may still turn GSO off on EIO)");
	sample(b, "weft_offload_enabled", dev->ifname, dev->tun_vnet, "offload", "tun", NULL);
	sample(b, "weft_offload_enabled", dev->ifname, !(dev->socket_flags & WG_SOCKET_NO_GSO),
	       "offload", "udp_gso", NULL);
	sample(b, "weft_offload_enabled", dev->ifname, !(dev->socket_flags & WG_SOCKET_NO_GRO),
	       "offload", "udp_gro", NULL);

	family(b, "weft_aead_backend_info", "gauge",
	       "The ChaCha20-Poly1305 backend in use (WEFT_AEAD, else the faster at start)");
	sample(b, "weft_aead_backend_info", dev->ifname, 1, "backend", aead_active()->name, NULL);
	family(b, "weft_build_info", "gauge", "The version of weftd");
	sample(b, "weft_build_info", dev->ifname, 1, "version", WEFT_VERSION, NULL);
}

/* ---- VM ports ------------------------------------------------------------ */

static uint64_t port_value(const struct port_info *p, const struct port_text_counter *c)
{
	uint64_t v;

	memcpy(&v, (const char *)p + c->offset, sizeof(v));
	return v;
}

static int render_ports(struct text_buf *b, struct wg_device *dev)
{
	struct port_info *ports = NULL;
	size_t n = 0;
	char metric[96], help[160];
	int err = port_list(dev, &ports, &n);

	if (err)
		return err;
	family(b, "weft_ports", "gauge", "VM ports on the interface");
	sample(b, "weft_ports", dev->ifname, n, NULL);
	if (!n)
		goto out;
	family(b, "weft_port_up", "gauge",
	       "1 when a VM port is usable: a tap is up, a vhost-user frontend is attached");
	for (size_t i = 0; i < n; i++)
		sample(b, "weft_port_up", dev->ifname, ports[i].connected, "port", ports[i].cfg.name,
		       "type", port_text_type_name(ports[i].cfg.type), NULL);
	family(b, "weft_port_drops_total", "counter",
	       "Frames a VM port dropped, by reason (port/config.h)");
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < port_text_n_counters; k++)
			if (port_text_counters[k].drop)
				sample(b, "weft_port_drops_total", dev->ifname,
				       port_value(&ports[i], &port_text_counters[k]), "port",
				       ports[i].cfg.name, "reason", port_text_counters[k].key + 5,
				       NULL);
	for (size_t k = 0; k < port_text_n_counters; k++) {
		const struct port_text_counter *c = &port_text_counters[k];

		if (c->drop)
			continue;
		snprintf(metric, sizeof(metric), "weft_port_%s_total", c->key);
		snprintf(help, sizeof(help), "The VM port counter %s (rx: from the VM)", c->key);
		family(b, metric, "counter", help);
		for (size_t i = 0; i < n; i++)
			sample(b, metric, dev->ifname, port_value(&ports[i], c), "port",
			       ports[i].cfg.name, NULL);
	}
out:
	free(ports);
	return 0;
}

/* ---- the mesh (mesh/mesh.h) -------------------------------------------------- */

static void render_mesh(struct text_buf *b, struct wg_device *dev)
{
	static const char *const modes[] = { "off", "unicast", "multicast" };
	static const struct {
		const char *name;
		size_t offset;
	} counters[] = {
#define MESH_COUNTER(n) { #n, offsetof(struct mesh_stats, n) },
		MESH_COUNTERS(MESH_COUNTER)
#undef MESH_COUNTER
	};
	struct mesh_config cfg;
	struct mesh_stats st;
	char help[160];

	if (!dev->mesh)
		return;
	mesh_get(dev, &cfg, &st);
	family(b, "weft_mesh_mode_info", "gauge",
	       "The mesh's discovery mode (off, unicast, multicast)");
	sample(b, "weft_mesh_mode_info", dev->ifname, 1, "mode",
	       (size_t)cfg.mode < sizeof(modes) / sizeof(modes[0]) ? modes[cfg.mode] : "unknown",
	       NULL);
	family(b, "weft_mesh_prefixes", "gauge", "Prefixes of the mesh's VM address space");
	sample(b, "weft_mesh_prefixes", dev->ifname, cfg.n_prefixes, NULL);
	family(b, "weft_mesh_locations", "gauge", "Remote VM locations learned");
	sample(b, "weft_mesh_locations", dev->ifname, st.locations, NULL);
	family(b, "weft_mesh_pending", "gauge", "VM addresses being resolved");
	sample(b, "weft_mesh_pending", dev->ifname, st.pending, NULL);
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		uint64_t v;

		memcpy(&v, (const char *)&st + counters[i].offset, sizeof(v));
		snprintf(help, sizeof(help), "The mesh counter %s (mesh/mesh.h, docs/mesh.md)%s",
			 counters[i].name,
			 strstr(counters[i].name, "_ns") ? ", in seconds" : "");
		lone_counter(b, "weft_mesh_", counters[i].name, help, dev->ifname, v);
	}
}

int metrics_render(struct wg_device *dev, bool peer_series, char **text, size_t *len)
{
	struct text_buf b = { 0 };
	int err = render_peers(&b, dev, peer_series);

	if (!err) {
		render_device_counters(&b, dev);
		render_state(&b, dev);
		err = render_ports(&b, dev);
	}
	if (!err)
		render_mesh(&b, dev);
	if (err) {
		text_buf_free(&b);
		return err;
	}
	return text_buf_finish(&b, text, len);
}

int metrics_render_cb(void *ctx, char **text, size_t *len)
{
	const struct metrics_source *src = ctx;

	return metrics_render(src->dev, src->peer_series, text, len);
}

int metrics_control(struct wg_device *dev, const char *body, size_t len, char **reply,
		    size_t *reply_len, const char **why)
{
	if (len) {
		*why = "metrics takes no keys";
		return -EINVAL;
	}
	return metrics_render(dev, true, reply, reply_len);
}
