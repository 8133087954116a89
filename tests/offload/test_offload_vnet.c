/* tun_offload_vnet_hdr: the header passed on with a VM's packet is built
 * from what was parsed, whatever the sending guest wrote in its own. For
 * TCPv4/TCPv6/UDP super-packets and one partial-checksum packet, the
 * sender's header is corrupted in every field the parser does not need
 * (hdr_len, DATA_VALID, the ECN bit against the packet's CWR); the rebuilt
 * header must equal the one Linux gives a well-formed packet, and parse to
 * the same result. */
#include "offload_test.h"

static uint8_t frame[TUN_VNET_HDR_LEN + 65535], payload[65536];

static void expect_header(const struct gen *g, bool gso, bool cwr, const char *name)
{
	struct tun_offload_info info, again;
	struct tun_vnet_hdr want, got, sent;
	uint32_t len = gen_packet(frame + TUN_VNET_HDR_LEN, g, payload);

	gen_vnet((uint8_t *)&want, g, gso);
	if (cwr && gso && !g->udp)
		want.gso_type |= VIRTIO_NET_HDR_GSO_ECN;
	/* The guest's own header: right where the parser checks, wrong
	 * everywhere else. */
	sent = want;
	sent.flags |= VIRTIO_NET_HDR_F_DATA_VALID;
	sent.hdr_len = htole16(gso ? 9999 : 77);
	if (!g->udp && gso)
		sent.gso_type ^= VIRTIO_NET_HDR_GSO_ECN; /* disagrees with CWR */
	memcpy(frame, &sent, sizeof(sent));
	if (!gso && g->udp)
		return;
	CHECK(tun_offload_parse(frame, TUN_VNET_HDR_LEN + len, &info) == 0, "%s: parses", name);
	tun_offload_vnet_hdr(&info, &got);
	CHECK(!memcmp(&got, &want, sizeof(got)),
	      "%s: rebuilt header flags %#x gso %#x hdr_len %u gso_size %u csum %u+%u, want %#x %#x %u %u %u+%u",
	      name, got.flags, got.gso_type, le16toh(got.hdr_len), le16toh(got.gso_size),
	      le16toh(got.csum_start), le16toh(got.csum_offset), want.flags, want.gso_type,
	      le16toh(want.hdr_len), le16toh(want.gso_size), le16toh(want.csum_start),
	      le16toh(want.csum_offset));
	memcpy(frame, &got, sizeof(got));
	CHECK(tun_offload_parse(frame, TUN_VNET_HDR_LEN + len, &again) == 0 &&
		      again.kind == info.kind && again.n_segs == info.n_segs &&
		      again.gso_size == info.gso_size && again.hdrs_len == info.hdrs_len,
	      "%s: the rebuilt header parses to the same result", name);
}

int main(void)
{
	struct tun_offload_info info;
	struct tun_vnet_hdr h;
	struct gen g;

	fill_random(payload, sizeof(payload));
	for (int v6 = 0; v6 < 2; v6++) {
		for (int cwr = 0; cwr < 2; cwr++) {
			gen_default(&g, v6, false);
			g.payload = 10 * g.mss + 7;
			if (cwr)
				g.tcp_flags |= 0x80;
			expect_header(&g, true, cwr, v6 ? "TCPv6 TSO" : "TCPv4 TSO");
			g.payload = 100;
			expect_header(&g, false, cwr, v6 ? "TCPv6 csum" : "TCPv4 csum");
		}
		gen_default(&g, v6, true);
		g.mss = 1200;
		g.payload = 5 * 1200 + 1;
		expect_header(&g, true, false, v6 ? "UDPv6 USO" : "UDPv4 USO");
	}

	/* A plain packet: an all-zero header, DATA_VALID dropped. */
	gen_default(&g, false, false);
	g.payload = 100;
	memset(frame, 0, TUN_VNET_HDR_LEN);
	frame[0] = VIRTIO_NET_HDR_F_DATA_VALID;
	CHECK(tun_offload_parse(frame, TUN_VNET_HDR_LEN + gen_packet(frame + TUN_VNET_HDR_LEN, &g, payload),
				&info) == 0 && info.kind == TUN_OFFLOAD_PLAIN,
	      "plain packet with DATA_VALID parses");
	memset(&h, 0xff, sizeof(h));
	tun_offload_vnet_hdr(&info, &h);
	CHECK(!h.flags && !h.gso_type && !h.hdr_len && !h.gso_size && !h.csum_start && !h.csum_offset,
	      "plain packet: the rebuilt header is all zero");
	return t_exit("test_offload_vnet");
}
