/* Writes the seed corpus of fuzz/fuzz_mesh_msg.c (one file per seed: the
 * IPv6 packet as a tunnel opens it) with mesh_msg_build, a few messages of
 * every type. Not a test: run by hand when the wire format changes,
 *   build/tests/ndp/gen_mesh_seeds fuzz/corpus/fuzz_mesh_msg */
#include "mesh/msg.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,  \
				__LINE__, #cond);                                \
			exit(1);                                                 \
		}                                                                \
	} while (0)

enum {
	OUT_MAX = MESH_IP6_HLEN + sizeof(struct mesh_hdr) +
		  MESH_MAX_ENTRIES * sizeof(struct mesh_entry) + 64,
};

static const char *dir;

static struct mesh_item item(const char *addr, uint8_t cidr, uint64_t seq, uint8_t holder)
{
	struct mesh_item it = { .family = strchr(addr, ':') ? AF_INET6 : AF_INET,
				.cidr = cidr, .seq = seq, .has_holder = holder != 0 };

	CHECK(inet_pton(it.family, addr, it.addr) == 1);
	memset(it.holder, holder, sizeof(it.holder));
	return it;
}

/* Writes the message of type made of items[0, n), with extra trailing
 * bytes after it. */
static void seed(const char *name, enum mesh_type type, const struct mesh_item *items, size_t n,
		 size_t extra)
{
	struct mesh_msg m = { .type = type, .count = n };
	uint8_t out[OUT_MAX];
	char path[4096];
	size_t len;
	FILE *f;

	memcpy(m.items, items, n * sizeof(*items));
	len = mesh_msg_build(&m, out, sizeof(out) - extra);
	CHECK(len > 0 && mesh_msg_parse(out, len, &m) == MESH_OK);
	memset(out + len, 0xa5, extra);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	CHECK(f);
	CHECK(fwrite(out, 1, len + extra, f) == len + extra);
	CHECK(fclose(f) == 0);
}

/* A forwarded packet: a minimal IPv4 or IPv6 packet in its wrapping. */
static void seed_fwd(const char *name, int version)
{
	uint8_t out[MESH_FWD_HLEN + 40] = { 0 }, *ip = out + MESH_FWD_HLEN;
	size_t len = version == 4 ? 20 : 40;
	char path[4096];
	FILE *f;

	ip[0] = version == 4 ? 0x45 : 0x60;
	if (version == 4)
		ip[3] = 20;
	CHECK(mesh_fwd_wrap(out, ip, len) && mesh_fwd_unwrap(out, MESH_FWD_HLEN + len) == len);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	CHECK(f);
	CHECK(fwrite(out, 1, MESH_FWD_HLEN + len, f) == MESH_FWD_HLEN + len);
	CHECK(fclose(f) == 0);
}

int main(int argc, char **argv)
{
	const uint64_t t = 1700000000123456789ull;
	struct mesh_item many[MESH_MAX_ENTRIES];

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	seed("solicit_v4", MESH_SOLICIT, (struct mesh_item[]){ item("10.1.0.5", 32, 0, 0) }, 1, 0);
	seed("solicit_v6", MESH_SOLICIT, (struct mesh_item[]){ item("fd00:1::5", 128, 0, 0) }, 1, 0);
	seed("solicit_two", MESH_SOLICIT,
	     (struct mesh_item[]){ item("10.1.0.0", 24, 0, 0), item("fd00:1::", 64, 0, 0) }, 2, 0);
	seed("advert_v4", MESH_ADVERT, (struct mesh_item[]){ item("10.1.0.5", 32, t, 0x11) }, 1, 0);
	seed("advert_v6", MESH_ADVERT, (struct mesh_item[]){ item("fd00:1::5", 128, t, 0x22) }, 1, 0);
	seed("advert_negative", MESH_ADVERT, (struct mesh_item[]){ item("10.1.0.6", 32, 0, 0) }, 1, 0);
	seed("announce_v4", MESH_ANNOUNCE, (struct mesh_item[]){ item("10.1.0.7", 32, t, 0) }, 1, 0);
	seed("announce_two", MESH_ANNOUNCE,
	     (struct mesh_item[]){ item("10.1.0.7", 32, t, 0), item("fd00:1::7", 128, t + 1, 0) }, 2,
	     0);
	seed("not_here", MESH_NOT_HERE, (struct mesh_item[]){ item("10.1.0.8", 32, 0, 0) }, 1, 0);
	seed("not_here_holder", MESH_NOT_HERE,
	     (struct mesh_item[]){ item("fd00:1::8", 128, t, 0x33) }, 1, 0);
	seed("moved_v4", MESH_MOVED, (struct mesh_item[]){ item("10.1.0.9", 32, t, 0x44) }, 1, 0);
	seed("moved_v6_trailing", MESH_MOVED,
	     (struct mesh_item[]){ item("fd00:1::9", 128, t, 0x55) }, 1, 16);
	for (int i = 0; i < MESH_MAX_ENTRIES; i++)
		many[i] = item(i & 1 ? "fd00:2::" : "10.2.0.0", (uint8_t)(i & 1 ? 48 + i : 16 + i),
			       t + (uint64_t)i, (uint8_t)(i & 2 ? 0x60 + i : 0));
	seed("advert_full", MESH_ADVERT, many, MESH_MAX_ENTRIES, 0);
	seed_fwd("forwarded_v4", 4);
	seed_fwd("forwarded_v6", 6);
	return 0;
}
