/* libFuzzer target for the first look a worker takes at every frame a VM
 * sends: frame_classify, then frame_ip_check (the anti-spoofing check, the
 * TTL decrement), the same calls datapath/worker.c makes. Checked beyond "no
 * crash": a routed packet's source is registered (by a naive re-check),
 * lies inside the frame, its TTL dropped by exactly one and its IPv4 header
 * checksum is still right; a drop touches nothing.
 *
 * Input: the frame, Ethernet header first (its source MAC is forced to the
 * VM's when the first byte is even, so that the IP paths are reached). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "port/frame.h"

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "fuzz_frame: check failed at %s:%d: %s\n",  \
				__FILE__, __LINE__, #cond);                          \
			abort();                                                     \
		}                                                                    \
	} while (0)

static struct port_config cfg;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

	port_config_init(&cfg);
	memcpy(cfg.vm_mac, mac, 6);
	cfg.addrs[0] = (struct ip_prefix){ .family = AF_INET, .addr = { 10, 0, 0, 2 }, .cidr = 32 };
	cfg.addrs[1] = (struct ip_prefix){ .family = AF_INET, .addr = { 10, 1, 0, 0 }, .cidr = 20 };
	cfg.addrs[2] = (struct ip_prefix){ .family = AF_INET6, .addr = { 0xfd, 0, [15] = 2 }, .cidr = 128 };
	cfg.addrs[3] = (struct ip_prefix){ .family = AF_INET6, .addr = { 0xfd, 0, 0, 1 }, .cidr = 61 };
	cfg.n_addrs = 4;
	return 0;
}

static uint16_t ip4_header_sum(const uint8_t *h, size_t len)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* The naive model of "registered": bit by bit. */
static bool naive_registered(int family, const uint8_t *a)
{
	for (size_t i = 0; i < cfg.n_addrs; i++) {
		const struct ip_prefix *p = &cfg.addrs[i];
		bool match = p->family == family;

		for (unsigned int b = 0; match && b < p->cidr; b++)
			match = ((p->addr[b / 8] ^ a[b / 8]) >> (7 - b % 8) & 1) == 0;
		if (match)
			return true;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *frame = malloc(size ? size : 1), *before = malloc(size ? size : 1);
	enum port_drop why = PORT_DROP_COUNT;
	struct frame_ip ip;
	enum frame_verdict v;

	memcpy(frame, data, size);
	if (size >= 12 && !(data[0] & 1))
		memcpy(frame + 6, cfg.vm_mac, 6);
	memcpy(before, frame, size);
	v = frame_classify(&cfg, frame, size, &why);
	CHECK(!memcmp(before, frame, size));
	if (v == FRAME_DROP) {
		CHECK(why < PORT_DROP_COUNT);
		goto out;
	}
	CHECK(size >= FRAME_ETH_HLEN);
	why = PORT_DROP_COUNT;
	v = frame_ip_check(&cfg, frame, size, &ip, &why);
	if (v == FRAME_DROP) {
		CHECK(why < PORT_DROP_COUNT);
		CHECK(!memcmp(before, frame, size));
		goto out;
	}
	CHECK(v == FRAME_ROUTE);
	CHECK(FRAME_ETH_HLEN + (size_t)ip.len <= size);
	if (ip.family == AF_INET) {
		const uint8_t *h = frame + FRAME_ETH_HLEN;
		size_t hlen = (size_t)(h[0] & 0xf) * 4;

		CHECK(ip.dst == h + 16);
		CHECK(naive_registered(AF_INET, h + 12));
		CHECK(h[8] + 1 == before[FRAME_ETH_HLEN + 8]);
		/* A header whose checksum was right stays right. */
		if (ip4_header_sum(before + FRAME_ETH_HLEN, hlen) == 0xffff)
			CHECK(ip4_header_sum(h, hlen) == 0xffff);
	} else {
		const uint8_t *h = frame + FRAME_ETH_HLEN;

		CHECK(ip.family == AF_INET6);
		CHECK(ip.dst == h + 24);
		CHECK(naive_registered(AF_INET6, h + 8));
		CHECK(h[7] + 1 == before[FRAME_ETH_HLEN + 7]);
	}
out:
	free(frame);
	free(before);
	return 0;
}
