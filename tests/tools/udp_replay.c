/*
 * udp_replay: resend the WireGuard transport-data datagrams (type 4) of a
 * classic pcap capture, payload unchanged, for the replay integration test.
 *
 * The datagrams must look exactly like the originals to the receiver (same
 * source address and port), so that only its replay window can reject them.
 * The sending daemon still holds that UDP port, so the datagrams leave through
 * a raw socket (IPPROTO_UDP) with a UDP header we build ourselves: the port is
 * never bound, nothing conflicts with the daemon, and the kernel adds the IP
 * header with the source address we bind the raw socket to.
 *
 * Security model: the capture file is untrusted input. Every length read from
 * it (record, link, IP and UDP headers) is checked against the bytes actually
 * present before use; a record that does not parse is skipped and counted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum {
	PCAP_GLOBAL_LEN = 24,
	PCAP_RECORD_LEN = 16,
	PCAP_MAX_RECORD = 262144,
	LINKTYPE_ETHERNET = 1,
	LINKTYPE_RAW = 101,
	LINKTYPE_RAW_OLD = 12,
	LINKTYPE_LINUX_SLL = 113,
	LINKTYPE_LINUX_SLL2 = 276,
	ETH_HDR_LEN = 14,
	SLL_HDR_LEN = 16,
	SLL2_HDR_LEN = 20,
	VLAN_TAG_LEN = 4,
	IPV4_MIN_HDR_LEN = 20,
	IPV6_HDR_LEN = 40,
	UDP_HDR_LEN = 8,
	/* WireGuard transport data: type(1) reserved(3) receiver(4) counter(8),
	 * then at least the 16-byte Poly1305 tag (a keepalive is exactly 32). */
	WG_TYPE_DATA = 4,
	WG_DATA_MIN_LEN = 32,
};

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86dd
#define ETHERTYPE_VLAN 0x8100
#define ETHERTYPE_QINQ 0x88a8

struct udp_datagram {
	uint16_t sport;
	uint16_t dport;
	const uint8_t *payload;
	size_t len;
};

struct replay_target {
	int family;
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} dst, src;
	int fd;
	uint16_t sport;
	bool set_reserved; /* -r: the reserved bytes of the type word made non-zero */
};

static uint16_t rd16be(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static uint32_t rd32(const uint8_t *p, bool swap)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return swap ? __builtin_bswap32(v) : v;
}

/* Finds the UDP datagram in one IP packet; false for anything else. */
static bool parse_ip(const uint8_t *p, size_t len, struct udp_datagram *out)
{
	const uint8_t *udp;
	size_t avail, ulen;

	if (len < 1)
		return false;
	if ((p[0] >> 4) == 4) {
		size_t ihl = (size_t)(p[0] & 0x0f) * 4, total;

		if (len < IPV4_MIN_HDR_LEN || ihl < IPV4_MIN_HDR_LEN || ihl > len)
			return false;
		total = rd16be(p + 2);
		/* A fragment is not a whole datagram: skip it. */
		if (p[9] != IPPROTO_UDP || (rd16be(p + 6) & 0x3fff) != 0)
			return false;
		if (total < ihl || total > len)
			return false;
		udp = p + ihl;
		avail = total - ihl;
	} else if ((p[0] >> 4) == 6) {
		size_t plen;

		if (len < IPV6_HDR_LEN || p[6] != IPPROTO_UDP)
			return false;
		plen = rd16be(p + 4);
		if (plen > len - IPV6_HDR_LEN)
			return false;
		udp = p + IPV6_HDR_LEN;
		avail = plen;
	} else {
		return false;
	}
	if (avail < UDP_HDR_LEN)
		return false;
	ulen = rd16be(udp + 4);
	if (ulen < UDP_HDR_LEN || ulen > avail)
		return false;
	out->sport = rd16be(udp);
	out->dport = rd16be(udp + 2);
	out->payload = udp + UDP_HDR_LEN;
	out->len = ulen - UDP_HDR_LEN;
	return true;
}

/* Strips the link-layer header of one captured frame. */
static bool parse_frame(uint32_t linktype, const uint8_t *p, size_t len, struct udp_datagram *out)
{
	size_t off;
	uint16_t type;

	switch (linktype) {
	case LINKTYPE_ETHERNET:
		if (len < ETH_HDR_LEN)
			return false;
		off = ETH_HDR_LEN;
		type = rd16be(p + 12);
		while ((type == ETHERTYPE_VLAN || type == ETHERTYPE_QINQ) && len >= off + VLAN_TAG_LEN) {
			type = rd16be(p + off + 2);
			off += VLAN_TAG_LEN;
		}
		break;
	case LINKTYPE_LINUX_SLL:
		if (len < SLL_HDR_LEN)
			return false;
		off = SLL_HDR_LEN;
		type = rd16be(p + 14);
		break;
	case LINKTYPE_LINUX_SLL2:
		if (len < SLL2_HDR_LEN)
			return false;
		off = SLL2_HDR_LEN;
		type = rd16be(p);
		break;
	case LINKTYPE_RAW:
	case LINKTYPE_RAW_OLD:
		return parse_ip(p, len, out);
	default:
		return false;
	}
	if (type != ETHERTYPE_IPV4 && type != ETHERTYPE_IPV6)
		return false;
	return parse_ip(p + off, len - off, out);
}

static uint32_t sum16(uint32_t acc, const uint8_t *p, size_t len)
{
	for (; len > 1; p += 2, len -= 2)
		acc += rd16be(p);
	if (len)
		acc += (uint32_t)p[0] << 8;
	return acc;
}

/* UDP checksum over the pseudo-header (RFC 768 / RFC 8200 section 8.1). */
static uint16_t udp_checksum(const struct replay_target *t, const uint8_t *udp, size_t len)
{
	uint32_t acc = 0;
	uint16_t c;

	if (t->family == AF_INET) {
		acc = sum16(acc, (const uint8_t *)&t->src.v4.sin_addr, 4);
		acc = sum16(acc, (const uint8_t *)&t->dst.v4.sin_addr, 4);
	} else {
		acc = sum16(acc, (const uint8_t *)&t->src.v6.sin6_addr, 16);
		acc = sum16(acc, (const uint8_t *)&t->dst.v6.sin6_addr, 16);
	}
	acc += IPPROTO_UDP + (uint32_t)len;
	acc = sum16(acc, udp, len);
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	c = (uint16_t)~acc;
	return c ? c : 0xffff;
}

static void set_port(struct replay_target *t, int which_dst, uint16_t port)
{
	if (t->family == AF_INET)
		(which_dst ? &t->dst.v4 : &t->src.v4)->sin_port = htons(port);
	else
		(which_dst ? &t->dst.v6 : &t->src.v6)->sin6_port = htons(port);
}

/* Raw socket bound to the source address the kernel would pick for dst. */
static int target_open(struct replay_target *t, const char *addr, const char *src)
{
	socklen_t slen;
	void *src_ip;
	int probe = -1, ret = -1;

	memset(&t->dst, 0, sizeof(t->dst));
	memset(&t->src, 0, sizeof(t->src));
	t->fd = -1;
	if (inet_pton(AF_INET, addr, &t->dst.v4.sin_addr) == 1) {
		t->family = AF_INET;
		t->dst.v4.sin_family = t->src.v4.sin_family = AF_INET;
		src_ip = &t->src.v4.sin_addr;
		slen = sizeof(t->dst.v4);
	} else if (inet_pton(AF_INET6, addr, &t->dst.v6.sin6_addr) == 1) {
		t->family = AF_INET6;
		t->dst.v6.sin6_family = t->src.v6.sin6_family = AF_INET6;
		src_ip = &t->src.v6.sin6_addr;
		slen = sizeof(t->dst.v6);
	} else {
		fprintf(stderr, "udp_replay: bad address %s\n", addr);
		goto out;
	}
	if (src) {
		if (inet_pton(t->family, src, src_ip) != 1) {
			fprintf(stderr, "udp_replay: bad source address %s\n", src);
			goto out;
		}
	} else {
		/* Port 9 only fills the connect(); a datagram socket that is
		 * connected but never written sends nothing. */
		set_port(t, 1, 9);
		probe = socket(t->family, SOCK_DGRAM, 0);
		if (probe < 0 || connect(probe, (struct sockaddr *)&t->dst, slen) < 0 ||
		    getsockname(probe, (struct sockaddr *)&t->src, &slen) < 0) {
			perror("udp_replay: choosing a source address");
			goto out;
		}
	}
	/* A raw socket's "port" is its protocol: zero means "this socket's". */
	set_port(t, 1, 0);
	set_port(t, 0, 0);
	t->fd = socket(t->family, SOCK_RAW, IPPROTO_UDP);
	if (t->fd < 0) {
		perror("udp_replay: raw socket (needs CAP_NET_RAW)");
		goto out;
	}
	if (bind(t->fd, (struct sockaddr *)&t->src, slen) < 0) {
		perror("udp_replay: bind source address");
		goto out;
	}
	ret = 0;
out:
	if (probe >= 0)
		close(probe);
	if (ret < 0 && t->fd >= 0) {
		close(t->fd);
		t->fd = -1;
	}
	return ret;
}

static int target_send(const struct replay_target *t, uint16_t dport, const uint8_t *payload, size_t len)
{
	uint8_t buf[UDP_HDR_LEN + 65535];
	size_t ulen = UDP_HDR_LEN + len;
	uint16_t c;
	socklen_t slen = t->family == AF_INET ? sizeof(t->dst.v4) : sizeof(t->dst.v6);

	if (ulen > 65535)
		return -1;
	buf[0] = (uint8_t)(t->sport >> 8);
	buf[1] = (uint8_t)t->sport;
	buf[2] = (uint8_t)(dport >> 8);
	buf[3] = (uint8_t)dport;
	buf[4] = (uint8_t)(ulen >> 8);
	buf[5] = (uint8_t)ulen;
	buf[6] = buf[7] = 0;
	memcpy(buf + UDP_HDR_LEN, payload, len);
	if (t->set_reserved)
		memset(buf + UDP_HDR_LEN + 1, 0xff, 3);
	c = udp_checksum(t, buf, ulen);
	buf[6] = (uint8_t)(c >> 8);
	buf[7] = (uint8_t)c;
	if (sendto(t->fd, buf, ulen, 0, (const struct sockaddr *)&t->dst, slen) != (ssize_t)ulen) {
		perror("udp_replay: sendto");
		return -1;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: udp_replay [-n] [-r] [-m ORIG_DPORT] [-p ORIG_SPORT] [-S SRC_ADDR] [-i USEC]\n"
		"                  PCAP DST_ADDR DST_PORT SRC_PORT\n"
		"Resends the payloads of the WireGuard type-4 datagrams in PCAP (classic\n"
		"pcap: Ethernet, raw IP or Linux cooked) to DST_ADDR:DST_PORT from SRC_PORT.\n"
		"-m/-p keep only datagrams that originally went to/came from that port;\n"
		"-n counts without sending; -i waits USEC between datagrams;\n"
		"-r sets the three reserved bytes of each type word to 0xff.\n"
		"Prints the number of datagrams sent (or that would be sent).\n");
}

int main(int argc, char **argv)
{
	struct replay_target target = { .fd = -1 };
	uint8_t global[PCAP_GLOBAL_LEN], rec[PCAP_RECORD_LEN];
	uint8_t *frame = NULL;
	long orig_dport = -1, orig_sport = -1, gap_us = 1000;
	const char *src_addr = NULL;
	bool dry = false, swap;
	unsigned long sent = 0, skipped = 0;
	uint32_t magic, linktype;
	uint16_t dport;
	FILE *f = NULL;
	int opt, ret = 1;

	while ((opt = getopt(argc, argv, "nrm:p:S:i:h")) != -1) {
		switch (opt) {
		case 'n': dry = true; break;
		case 'r': target.set_reserved = true; break;
		case 'm': orig_dport = strtol(optarg, NULL, 10); break;
		case 'p': orig_sport = strtol(optarg, NULL, 10); break;
		case 'S': src_addr = optarg; break;
		case 'i': gap_us = strtol(optarg, NULL, 10); break;
		default: usage(); return 2;
		}
	}
	if (argc - optind != 4) {
		usage();
		return 2;
	}
	dport = (uint16_t)strtoul(argv[optind + 2], NULL, 10);
	target.sport = (uint16_t)strtoul(argv[optind + 3], NULL, 10);
	if (!dport || !target.sport) {
		fprintf(stderr, "udp_replay: bad port\n");
		return 2;
	}

	f = fopen(argv[optind], "rb");
	if (!f || fread(global, 1, sizeof(global), f) != sizeof(global)) {
		fprintf(stderr, "udp_replay: cannot read pcap header of %s\n", argv[optind]);
		goto out;
	}
	memcpy(&magic, global, sizeof(magic));
	if (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d) {
		swap = false;
	} else if (magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1) {
		swap = true;
	} else {
		fprintf(stderr, "udp_replay: %s is not a classic pcap file (pcapng is not supported)\n", argv[optind]);
		goto out;
	}
	linktype = rd32(global + 20, swap) & 0x0fffffff;
	frame = malloc(PCAP_MAX_RECORD);
	if (!frame)
		goto out;
	if (!dry && target_open(&target, argv[optind + 1], src_addr) < 0)
		goto out;

	while (fread(rec, 1, sizeof(rec), f) == sizeof(rec)) {
		uint32_t caplen = rd32(rec + 8, swap);
		struct udp_datagram d;

		if (caplen > PCAP_MAX_RECORD) {
			fprintf(stderr, "udp_replay: record of %u bytes: corrupt capture\n", caplen);
			goto out;
		}
		if (fread(frame, 1, caplen, f) != caplen)
			break; /* truncated last record (capture cut short) */
		if (!parse_frame(linktype, frame, caplen, &d)) {
			skipped++;
			continue;
		}
		if (d.len < WG_DATA_MIN_LEN || d.payload[0] != WG_TYPE_DATA || d.payload[1] || d.payload[2] ||
		    d.payload[3])
			continue;
		if ((orig_dport >= 0 && d.dport != orig_dport) || (orig_sport >= 0 && d.sport != orig_sport))
			continue;
		if (!dry) {
			if (target_send(&target, dport, d.payload, d.len) < 0)
				goto out;
			if (gap_us > 0)
				usleep((useconds_t)gap_us);
		}
		sent++;
	}
	printf("%lu\n", sent);
	if (skipped)
		fprintf(stderr, "udp_replay: %lu frames were not UDP over IPv4/IPv6\n", skipped);
	ret = 0;
out:
	free(frame);
	if (f)
		fclose(f);
	if (target.fd >= 0)
		close(target.fd);
	return ret;
}
