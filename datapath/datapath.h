/* The data path: per-core workers, each one io_uring that reads the TUN,
 * the UDP sockets and its VM ports, seals and opens in batches, and writes
 * back, with one submission system call per batch rather than per packet.
 *
 * Out, towards a tunnel (the host's packets and its VMs'):
 *
 *   TUN read ........................ worker.c   complete(OP_TUN_READ)
 *     super-packet split ............ worker.c   tun_read_vnet, dp_split_super
 *     destination read .............. nexthop.c  dp_route
 *   VM frame: tap queue ............. port_tap.c     tap_completed
 *             vhost-user TX ring .... port_vhost.c   vhost_drain
 *     frame and source checks, ...... worker_port.c  wport_received
 *     the header's one parse ........ port/frame.c   frame_classify, frame_ip_check
 *     NDP and ARP answered .......... ndp/ndp.c      (port_neighbour)
 *     super-packets whole or split .. worker_port.c  send_offloaded
 *   next hop: one table lookup ...... nexthop.c  dp_next_hop, dp_send
 *     -> a peer: sealed, staged ..... wg/send.c  wg_send_to_peer
 *          UDP send (GSO runs) ...... worker.c   tx_emit, send_run, flush_tx
 *     -> a VM port .................. worker_port.c  dp_port_output, then
 *                                     the type's write (port_tap.c, port_vhost.c)
 *     -> a mesh address not known ... mesh/path.c    mesh_miss (queued, solicited)
 *     -> nothing: a VM's packet goes to the host (worker.c dp_host_output)
 *
 * In, from a tunnel:
 *
 *   UDP receive (GRO runs) .......... worker.c   complete(OP_UDP_RECV)
 *   each datagram ................... rx.c       dp_rx_udp
 *     opened, replay-checked ........ wg/receive.c   wg_receive_open (a verdict
 *                                                    and the one parse of the
 *                                                    inner header: source and
 *                                                    destination)
 *     the mesh's word, when on ...... mesh/path.c    mesh_receive
 *   next hop: one table lookup ...... nexthop.c  dp_next_hop
 *     -> the TUN or a VM port ....... rx.c       deliver (TCP coalesced), dp_rx_flush
 *                                     worker.c   dp_tun_write
 *                                     worker_port.c  dp_port_output
 *     -> another host's VM .......... mesh/path.c    mesh_transit
 *
 * Packets the mesh thread releases come back through worker 0 (rx.c
 * dp_rx_mesh_released): to nexthop.c once their destination is known, or
 * delivered once their source checked out; a packet parked there has its
 * header read again.
 *
 * A packet handed on is the callee's: dp_send, dp_route,
 * wg_send_to_peer, dp_port_output, dp_host_output and
 * dp_tun_write consume what they are given, drops included. Two
 * kinds of call keep the caller's packet, as they copy what they keep or
 * take a reference of their own: the mesh's queues (mesh/mesh.h) and a port
 * type's write (struct dp_port_io). */
#ifndef WEFT_DATAPATH_DATAPATH_H
#define WEFT_DATAPATH_DATAPATH_H

#include <stdbool.h>
#include <stdint.h>

struct wg_device;
struct dp_worker;

/* Worker id serves TUN queue tun_fd and socket pair id, pinned to cpu
 * (-1: not pinned). 0 or -errno. The worker runs until dp_worker_stop. */
int dp_worker_start(struct wg_device *dev, int id, int tun_fd, int cpu, struct dp_worker **out);
/* Wakes the worker to notice new sockets or a stop. */
void dp_worker_kick(struct dp_worker *w);
void dp_worker_stop(struct dp_worker *w);

/* What a worker has done, for the metrics (read from any thread). The
 * average batch is completions / turns. */
struct dp_worker_counters {
	uint64_t turns;       /* loop turns that handled completions */
	uint64_t completions; /* io_uring completions handled */
	bool gso;             /* still sending with UDP GSO (off after an EIO) */
};
void dp_worker_read_counters(struct dp_worker *w, struct dp_worker_counters *c);

#endif
