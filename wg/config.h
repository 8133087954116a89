/* A device configuration as the UAPI carries it: for "set", a list of
 * changes (only fields with has_* set, plus flags); for "get", a full
 * snapshot. Parsing fills one completely before anything is applied, so a
 * malformed request changes nothing. */
#ifndef WEFT_WG_CONFIG_H
#define WEFT_WG_CONFIG_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pkt/prefix.h"
#include "wg/endpoint.h"
#include "wg/messages.h"

struct wg_allowed_ip {
	struct ip_prefix prefix; /* masked, as the forwarding table keeps it */
	bool remove;             /* set: "allowed_ip=-a.b.c.d/n" */
};

struct wg_peer_config {
	uint8_t public_key[WG_KEY_LEN];
	bool remove;
	bool update_only;
	bool replace_allowed_ips;
	bool has_preshared_key;
	uint8_t preshared_key[WG_KEY_LEN];
	bool has_endpoint;
	union wg_sockaddr endpoint;
	bool has_keepalive;
	uint16_t persistent_keepalive; /* seconds, 0 = off */
	struct wg_allowed_ip *allowed_ips;
	size_t n_allowed_ips;
	size_t cap_allowed_ips;
	/* get only */
	uint64_t last_handshake_sec;
	uint64_t last_handshake_nsec;
	uint64_t rx_bytes;
	uint64_t tx_bytes;
};

struct wg_device_config {
	bool has_private_key;
	uint8_t private_key[WG_KEY_LEN];
	bool has_listen_port;
	uint16_t listen_port;
	bool has_fwmark;
	uint32_t fwmark; /* 0 = off */
	bool replace_peers;
	struct wg_peer_config *peers;
	size_t n_peers;
	size_t cap_peers;
};

/* Appends a zeroed peer / allowed IP; NULL when out of memory. */
struct wg_peer_config *wg_config_add_peer(struct wg_device_config *cfg);
struct wg_allowed_ip *wg_config_add_allowed_ip(struct wg_peer_config *peer);
/* Wipes keys and frees everything the config owns (not cfg itself). */
void wg_config_clear(struct wg_device_config *cfg);

#endif
