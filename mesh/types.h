/* The mesh's configuration, counters and learned routes: the types the
 * control replies and the CLI share with the mesh (mesh/mesh.h), and
 * nothing that runs. */
#ifndef WEFT_MESH_TYPES_H
#define WEFT_MESH_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "port/config.h"

enum wg_mesh_mode {
	WG_MESH_OFF = 0,
	WG_MESH_UNICAST = 1,
	WG_MESH_MULTICAST = 2,
};

enum { WG_MESH_MAX_PREFIXES = 8 };

struct wg_mesh_config {
	enum wg_mesh_mode mode;
	struct ip_prefix prefixes[WG_MESH_MAX_PREFIXES]; /* the VM address space */
	size_t n_prefixes;
};

/* X(name): every mesh counter. */
#define WG_MESH_COUNTERS(X)                                                               \
	X(solicit_sent) X(solicit_received) X(advert_sent) X(advert_received)          \
	X(announce_sent) X(announce_received) X(not_here_sent) X(not_here_received)    \
	X(moved_sent) X(moved_received) X(malformed)                \
	X(lookups) /* misses that started a discovery */                                  \
	X(resolved) X(negative) /* answers that said nobody, or timeouts */               \
	X(discoveries) X(discovery_ns) /* lookups answered, and their total time */      \
	X(queued) X(flushed) X(queue_dropped) /* pending packets */                       \
	X(forwarded) /* packets for an address that moved away, sent on */                \
	X(held) X(verified) X(spoofed) /* sources checked with a re-resolve */            \
	X(rate_limited)

struct wg_mesh_stats {
#define WG_MESH_FIELD(name) uint64_t name;
	WG_MESH_COUNTERS(WG_MESH_FIELD)
#undef WG_MESH_FIELD
	uint64_t locations;  /* learned locations in the table */
	uint64_t pending;    /* destinations being resolved */
};

/* A learned location, as wg_mesh_routes lists them; holder all zero when
 * negative. */
struct wg_mesh_route {
	struct ip_prefix prefix;
	uint8_t holder[32];
	bool negative;
	uint64_t seq;
};

#endif
