/* The checksum helpers against known answers (RFC 1071, a textbook IPv4
 * header) and against a naive one-word-at-a-time sum: random lengths and
 * alignments, sums chained in pieces, pseudo-headers, RFC 1624 updates. */
#include "offload_test.h"
#include "pkt/csum.h"

static void known_answers(void)
{
	/* RFC 1071 section 3: the folded sum of these bytes is 0xddf2. */
	static const uint8_t rfc1071[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	/* An IPv4 header whose checksum field holds 0xb861. */
	uint8_t ip[20] = { 0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
			   0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7 };

	CHECK(tun_csum_fold(tun_csum_add(0, rfc1071, sizeof(rfc1071))) == 0xddf2, "rfc1071");
	CHECK(tun_csum_finish(tun_csum_add(0, ip, 20)) == 0, "valid header finishes to 0");
	ip[10] = ip[11] = 0;
	CHECK(tun_csum_finish(tun_csum_add(0, ip, 20)) == 0xb861, "header checksum %04x",
	      tun_csum_finish(tun_csum_add(0, ip, 20)));
	CHECK(tun_csum_fold(0) == 0 && tun_csum_finish(0) == 0xffff, "empty sum");
	CHECK(tun_csum_fold(tun_csum_add16(0, 0xabcd)) == 0xabcd, "add16");
	CHECK(tun_csum_fold(tun_csum_add32(0, 0x00018000)) == 0x8001, "add32");
}

static void random_blocks(void)
{
	enum { MAX = 70000 };
	uint8_t *buf = malloc(MAX + 8);

	for (int iter = 0; iter < 3000; iter++) {
		size_t len = iter < 100 ? (size_t)iter : t_range(0, iter % 10 ? 3000 : MAX);
		size_t align = t_range(0, 7);
		uint8_t *p = buf + align;
		uint16_t want;

		fill_random(p, len);
		if (iter % 7 == 0)
			memset(p, 0xff, len); /* many carries */
		want = naive_sum(p, len, 0);
		CHECK(tun_csum_fold(tun_csum_add(0, p, len)) == want, "len %zu align %zu", len, align);

		/* In pieces of even length, the last one any length. */
		tun_csum_t s = 0;
		size_t off = 0;

		while (off < len) {
			size_t piece = t_range(0, 200) & ~(size_t)1;

			if (piece == 0 || off + piece >= len)
				piece = len - off;
			s = tun_csum_add(s, p + off, piece);
			off += piece;
		}
		CHECK(tun_csum_fold(s) == want, "chained len %zu", len);
	}
	free(buf);
}

static void pseudo_headers(void)
{
	uint8_t ip[40];

	for (int iter = 0; iter < 2000; iter++) {
		bool v6 = iter & 1;
		uint32_t l4_len = t_range(0, 65535);
		uint8_t proto = iter & 2 ? 6 : 17;

		fill_random(ip, sizeof(ip));
		ip[0] = v6 ? 0x60 : 0x45;
		CHECK(tun_csum_fold(tun_csum_pseudo(ip, proto, l4_len)) == naive_pseudo(ip, proto, l4_len),
		      "pseudo v6=%d len %u", v6, l4_len);
	}
}

static void rfc1624_updates(void)
{
	uint8_t ip[20];

	for (int iter = 0; iter < 5000; iter++) {
		unsigned int field = t_range(0, 9) * 2;
		uint16_t old, new_val, check;

		fill_random(ip, sizeof(ip));
		if (field == 10)
			field = 2; /* not the checksum field itself */
		if (iter % 5 == 0)
			memset(ip, 0, sizeof(ip));
		t_put16(ip + 10, 0);
		t_put16(ip + 10, (uint16_t)~naive_sum(ip, 20, 0));
		check = t_get16(ip + 10);
		old = t_get16(ip + field);
		new_val = iter % 3 ? (uint16_t)t_rand() : (uint16_t)~old;
		t_put16(ip + field, new_val);
		t_put16(ip + 10, tun_csum_replace16(check, old, new_val));
		CHECK(naive_sum(ip, 20, 0) == 0xffff, "replace16 field %u %04x->%04x", field, old, new_val);
	}
}

int main(void)
{
	known_answers();
	random_blocks();
	pseudo_headers();
	rfc1624_updates();
	return t_exit("test_offload_csum");
}
