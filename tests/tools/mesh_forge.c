/* mesh_forge: what a compromised mesh member sends, for mesh_hostile.sh.
 * It runs on a host whose tunnel is wireguard-go (no mesh of its own) and
 * writes the packets out of that tunnel's interface, which seals them to
 * the peer whose allowed IPs hold the destination (MESH_LL_ADDR).
 *
 *   mesh_forge home ADDR KEY...
 *       prints the index (from 0) of ADDR's home among the members' public
 *       keys (base64), as every weftd computes it (mesh/rendezvous.c)
 *   mesh_forge send IFNAME TYPE ADDR[/CIDR] SEQ [HOLDER] [lease LEASE]
 *       one mesh message (TYPE: solicit advert announce not_here moved) with
 *       one entry; SEQ a number, "now" (this host's wall clock in ns) or
 *       "max" (2^64-1); HOLDER a base64 public key; LEASE a lease's text
 *       (weft lease sign), sent after the entry
 *   mesh_forge fwd IFNAME SRC4 DST4
 *       an ICMP echo request SRC4 -> DST4, wrapped as a forwarded packet
 *   mesh_forge flood IFNAME BASE4 COUNT
 *       ANNOUNCEs (16 entries each, stamped now) of COUNT consecutive IPv4
 *       addresses from BASE4 on: a member claiming everything
 *
 * Exit status 0 when sent (or printed), 1 on a send error, 2 on bad usage. */
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mesh/msg.h"
#include "mesh/rendezvous.h"

static int usage(void)
{
	fprintf(stderr, "usage: mesh_forge home ADDR KEY...\n"
			"       mesh_forge send IFNAME TYPE ADDR[/CIDR] SEQ [HOLDER] [lease LEASE]\n"
			"       mesh_forge fwd IFNAME SRC4 DST4\n"
			"       mesh_forge flood IFNAME BASE4 COUNT\n");
	return 2;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool key_of(const char *b64, uint8_t key[32])
{
	size_t len;

	return !sodium_base642bin(key, 32, b64, strlen(b64), NULL, &len, NULL,
				  sodium_base64_VARIANT_ORIGINAL) &&
	       len == 32;
}

/* ADDR[/CIDR] into family, address and length (default: the whole address). */
static bool addr_of(const char *text, int *family, uint8_t addr[16], uint8_t *cidr)
{
	char buf[64], *slash;

	snprintf(buf, sizeof(buf), "%s", text);
	slash = strchr(buf, '/');
	if (slash)
		*slash = 0;
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, buf, addr) == 1)
		*family = AF_INET;
	else if (inet_pton(AF_INET6, buf, addr) == 1)
		*family = AF_INET6;
	else
		return false;
	*cidr = *family == AF_INET ? 32 : 128;
	if (slash)
		*cidr = (uint8_t)atoi(slash + 1);
	return true;
}

/* Out of ifname as if the host had routed it there: the tunnel reads it. */
static int send_ip6(const char *ifname, const uint8_t *pkt, size_t len)
{
	struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IPV6) };
	int fd = socket(AF_PACKET, SOCK_DGRAM, 0);

	to.sll_ifindex = (int)if_nametoindex(ifname);
	if (fd < 0 || !to.sll_ifindex) {
		perror("mesh_forge: socket or interface");
		return 1;
	}
	if (sendto(fd, pkt, len, 0, (struct sockaddr *)&to, sizeof(to)) != (ssize_t)len) {
		perror("mesh_forge: sendto");
		close(fd);
		return 1;
	}
	close(fd);
	return 0;
}

static uint16_t csum(const uint8_t *p, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static int cmd_home(int argc, char **argv)
{
	uint8_t (*keys)[RDV_KEY_LEN] = calloc((size_t)argc, RDV_KEY_LEN), addr[16], cidr;
	int family;

	if (argc < 2 || !keys || !addr_of(argv[0], &family, addr, &cidr))
		return usage();
	for (int i = 1; i < argc; i++)
		if (!key_of(argv[i], keys[i - 1]))
			return usage();
	printf("%ld\n", rdv_home((const uint8_t (*)[RDV_KEY_LEN])keys, (size_t)argc - 1, family,
				 addr, cidr));
	free(keys);
	return 0;
}

static int cmd_send(int argc, char **argv)
{
	static const char *const types[] = { [MESH_SOLICIT] = "solicit", [MESH_ADVERT] = "advert",
					     [MESH_ANNOUNCE] = "announce",
					     [MESH_NOT_HERE] = "not_here", [MESH_MOVED] = "moved" };
	struct mesh_msg msg = { .count = 1 };
	struct mesh_item *it = &msg.items[0];
	uint8_t pkt[MESH_MAX_PACKET];
	const char *why;
	size_t len;

	if (argc >= 6 && !strcmp(argv[argc - 2], "lease")) {
		if (mesh_lease_parse(argv[argc - 1], strlen(argv[argc - 1]), &it->lease, &why)) {
			fprintf(stderr, "mesh_forge: LEASE: %s\n", why);
			return 2;
		}
		it->has_lease = true;
		argc -= 2;
	}
	if (argc < 4 || argc > 5)
		return usage();
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
		if (types[t] && !strcmp(argv[1], types[t]))
			msg.type = (enum mesh_type)t;
	if (!msg.type || !addr_of(argv[2], &it->family, it->addr, &it->cidr))
		return usage();
	if (!strcmp(argv[3], "max")) {
		it->seq = UINT64_MAX;
	} else if (!strcmp(argv[3], "now")) {
		it->seq = realtime_ns();
	} else {
		it->seq = strtoull(argv[3], NULL, 0);
	}
	if (argc == 5) {
		if (!key_of(argv[4], it->holder))
			return usage();
		it->has_holder = true;
	}
	len = mesh_msg_build(&msg, pkt, sizeof(pkt));
	if (!len) {
		fprintf(stderr, "mesh_forge: the message is not one a member could send\n");
		return 2;
	}
	return send_ip6(argv[0], pkt, len);
}

static int cmd_fwd(int argc, char **argv)
{
	uint8_t pkt[MESH_FWD_HLEN + 28] = { 0 }, *ip = pkt + MESH_FWD_HLEN, *icmp = ip + 20;
	uint16_t c;

	if (argc != 3 || inet_pton(AF_INET, argv[1], ip + 12) != 1 ||
	    inet_pton(AF_INET, argv[2], ip + 16) != 1)
		return usage();
	ip[0] = 0x45;
	ip[3] = 28; /* total length */
	ip[8] = 64; /* TTL */
	ip[9] = IPPROTO_ICMP;
	c = csum(ip, 20);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	icmp[0] = 8; /* echo request */
	icmp[5] = 1; /* identifier */
	icmp[7] = 1; /* sequence */
	c = csum(icmp, 8);
	icmp[2] = (uint8_t)(c >> 8);
	icmp[3] = (uint8_t)c;
	if (!mesh_fwd_wrap(pkt, ip, 28))
		return usage();
	return send_ip6(argv[0], pkt, sizeof(pkt));
}

static int cmd_flood(int argc, char **argv)
{
	struct mesh_msg msg = { .type = MESH_ANNOUNCE };
	uint8_t pkt[MESH_MAX_ENTRIES * 64 + 64];
	uint32_t base;
	long count;

	if (argc != 3 || inet_pton(AF_INET, argv[1], &base) != 1 || (count = atol(argv[2])) <= 0)
		return usage();
	base = ntohl(base);
	for (long i = 0; i < count;) {
		size_t len;

		for (msg.count = 0; msg.count < MESH_MAX_ENTRIES && i < count; msg.count++, i++) {
			struct mesh_item *it = &msg.items[msg.count];
			uint32_t a = htonl(base + (uint32_t)i);

			*it = (struct mesh_item){ .family = AF_INET, .cidr = 32, .seq = realtime_ns() };
			memcpy(it->addr, &a, 4);
		}
		len = mesh_msg_build(&msg, pkt, sizeof(pkt));
		if (!len || send_ip6(argv[0], pkt, len))
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (sodium_init() < 0 || argc < 2)
		return usage();
	if (!strcmp(argv[1], "home"))
		return cmd_home(argc - 2, argv + 2);
	if (!strcmp(argv[1], "send"))
		return cmd_send(argc - 2, argv + 2);
	if (!strcmp(argv[1], "fwd"))
		return cmd_fwd(argc - 2, argv + 2);
	if (!strcmp(argv[1], "flood"))
		return cmd_flood(argc - 2, argv + 2);
	return usage();
}
