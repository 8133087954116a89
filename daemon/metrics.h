/* weftd's counters as Prometheus text exposition (format 0.0.4): what the
 * metrics listener serves and what `weft metrics` prints. Per-peer series
 * carry the names of the WireGuard exporters (wireguard_sent_bytes_total,
 * wireguard_received_bytes_total, wireguard_latest_handshake_seconds with
 * labels interface, public_key, allowed_ips) so existing dashboards work;
 * weft's own series start with weft_. The list is in docs/metrics.md. */
#ifndef WEFT_DAEMON_METRICS_H
#define WEFT_DAEMON_METRICS_H

#include <stdbool.h>
#include <stddef.h>

struct text_buf;
struct wg_device;

/* The whole exposition of dev: malloc'd, NUL-terminated (not counted).
 * Without peer_series, the per-peer series (whose labels name every peer's
 * public key and allowed IPs) are left out; weft_peers stays. Takes the
 * device lock shared, as `wg show` does. 0 or -errno. */
int metrics_render(struct wg_device *dev, bool peer_series, char **text, size_t *len);

/* What the metrics listener renders: weftd's device, with the per-peer
 * series only with --metrics-peers (anyone who reaches the listener reads
 * them, while `wg show` keeps them to root). */
struct metrics_source {
	struct wg_device *dev;
	bool peer_series;
};

/* metrics_render with ctx a struct metrics_source: the
 * metrics_http_render_fn of weftd. */
int metrics_render_cb(void *ctx, char **text, size_t *len);

/* The weft=metrics control verb (daemon/control.c): no keys; the reply is
 * the exposition itself with the per-peer series (the UAPI socket is
 * root's, as for `wg show`; it has no empty line and no "errno=" line, so
 * it travels as a reply body). 0 or -errno with *why. */
int metrics_control(struct wg_device *dev, const char *body, size_t len, char **reply,
		    size_t *reply_len, const char **why);

/* Writes s as a label value: backslash, double quote and newline escaped
 * as the exposition format says. */
void metrics_label_value(struct text_buf *b, const char *s);

#endif
