/* Device-wide counters: every drop has a reason and its own counter. Workers
 * and the handshake thread add with relaxed atomics; readers sum. */
#ifndef WEFT_WG_STATS_H
#define WEFT_WG_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#define WG_STATS(X)                                                              \
	X(rx_packets)            /* authenticated data messages received */    \
	X(rx_bytes)                                                              \
	X(tx_packets)            /* data messages sent */                      \
	X(tx_bytes)                                                              \
	X(drop_replay)           /* counter already seen or behind the window */ \
	X(drop_inner_source)     /* inner source not in the peer's allowed IPs */ \
	X(drop_unknown_index)    /* receiver index names no keypair */         \
	X(drop_decrypt)          /* authentication failed */                   \
	X(drop_key_expired)      /* keypair too old or exhausted */            \
	X(drop_malformed)        /* bad type word, size or inner header */     \
	X(drop_no_route)         /* TUN packet for no peer */                  \
	X(drop_no_endpoint)      /* peer without an endpoint */                \
	X(drop_staged_overflow)  /* staged queue full while handshaking */     \
	X(drop_tx_error)         /* the kernel refused a send */               \
	X(drop_no_buffer)        /* a worker's buffer pool ran dry */          \
	X(drop_no_memory)        /* no memory to keep a staged packet */       \
	X(drop_tun_write)        /* the TUN refused a write */                 \
	X(hs_initiations_sent)                                                   \
	X(hs_initiations_received)                                               \
	X(hs_responses_sent)                                                     \
	X(hs_responses_received)                                                 \
	X(hs_cookies_sent)                                                       \
	X(hs_cookies_received)                                                   \
	X(hs_invalid_mac)                                                        \
	X(hs_ratelimited)                                                        \
	X(hs_failed)             /* did not authenticate or replayed */        \
	X(hs_queue_full)                                                         \
	X(keypairs_created)

struct wg_stats {
#define WG_STATS_FIELD(name) _Atomic uint64_t name;
	WG_STATS(WG_STATS_FIELD)
#undef WG_STATS_FIELD
};

#define wg_stat_add(stats, name, n) \
	atomic_fetch_add_explicit(&(stats)->name, (n), memory_order_relaxed)
#define wg_stat_inc(stats, name) wg_stat_add(stats, name, 1)

#endif
