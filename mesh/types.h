/* The mesh's configuration, counters and learned routes: the types the
 * control replies and the CLI share with the mesh (mesh/mesh.h), and
 * nothing that runs. */
#ifndef WEFT_MESH_TYPES_H
#define WEFT_MESH_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "port/config.h"

enum mesh_mode {
	MESH_OFF = 0,
	MESH_UNICAST = 1,
	MESH_MULTICAST = 2,
};

enum { MESH_MAX_PREFIXES = 8 };

struct mesh_config {
	enum mesh_mode mode;
	struct ip_prefix prefixes[MESH_MAX_PREFIXES]; /* the VM address space */
	size_t n_prefixes;
	/* With a lease key (Ed25519), a claim that a host holds an address
	 * is believed only with a lease it signed (docs/mesh.md, "Leases"). */
	bool has_lease_key;
	uint8_t lease_key[32];
};

/* X(name): every mesh counter. */
#define MESH_COUNTERS(X)                                                               \
	X(solicit_sent) X(solicit_received) X(advert_sent) X(advert_received)          \
	X(announce_sent) X(announce_received) X(not_here_sent) X(not_here_received)    \
	X(moved_sent) X(moved_received) X(malformed)                \
	X(lookups) /* misses that started a discovery */                                  \
	X(resolved) X(negative) /* answers that said nobody, or timeouts */               \
	X(discoveries) X(discovery_ns) /* lookups answered, and their total time */      \
	X(queued) X(flushed) X(queue_dropped) /* pending packets */                       \
	X(forwarded) /* packets for an address that moved away, sent on */                \
	X(held) X(verified) X(spoofed) /* sources checked with a re-resolve */            \
	X(rate_limited)                                                                    \
	/* entries refused: not a host address, a stamp from the future, a       \
	 * sender the protocol does not expect, or one that would replace a       \
	 * table entry of another kind (docs/mesh.md, "Who is believed");         \
	 * and forwarded packets refused (docs/mesh.md, "Receive check") */       \
	X(refused_prefix) X(refused_seq) X(refused_sender) X(refused_entry)             \
	X(refused_forward)                                                               \
	X(tenant_limited) /* misses refused: their tenant had too many lookups */       \
	X(learn_limited)  /* ANNOUNCEs refused: their sender made records too fast */   \
	X(records_full)   /* records not made: MESH_MAX_LOCS reached */               \
	X(expired)        /* learned locations no answer confirmed after their TTL */  \
	X(refused_lease)  /* claims without a valid lease, or with an older one */   \
	X(lease_expired)  /* learned locations forgotten: their lease expired */

struct mesh_stats {
#define MESH_FIELD(name) uint64_t name;
	MESH_COUNTERS(MESH_FIELD)
#undef MESH_FIELD
	uint64_t locations;  /* learned locations in the table */
	uint64_t pending;    /* destinations being resolved */
	uint64_t leases;     /* this host's leases held (mesh_lease_add) */
};

/* A learned location, as mesh_routes lists them; holder all zero when
 * negative. */
struct mesh_route {
	struct ip_prefix prefix;
	uint8_t holder[32];
	bool negative;
	uint64_t seq;
};

#endif
