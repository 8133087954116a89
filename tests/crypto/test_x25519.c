/* X25519 against RFC 7748: the section 5.2 scalar-multiplication vectors, the
 * section 6.1 Diffie-Hellman example, and WireGuard's all-zero rule for
 * low-order points. */
#include "crypto/x25519.h"

#include "check.h"

static void check_mult(const char *scalar_hex, const char *point_hex, const char *out_hex)
{
	uint8_t scalar[32], point[32], want[32], got[32];

	hex_decode(scalar, 32, scalar_hex);
	hex_decode(point, 32, point_hex);
	hex_decode(want, 32, out_hex);
	CHECK(x25519(got, scalar, point));
	CHECK_MEM(got, want, 32);
}

static void test_rfc7748_5_2(void)
{
	check_mult("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
		   "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
		   "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552");
	check_mult("4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
		   "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
		   "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957");
}

static void test_rfc7748_6_1(void)
{
	static const char alice_priv[] =
		"77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a";
	static const char alice_pub[] =
		"8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a";
	static const char bob_priv[] =
		"5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb";
	static const char bob_pub[] =
		"de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f";
	static const char shared[] =
		"4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742";
	uint8_t a[32], b[32], want[32], got[32];

	hex_decode(a, 32, alice_priv);
	hex_decode(want, 32, alice_pub);
	CHECK(x25519_public(got, a));
	CHECK_MEM(got, want, 32);

	hex_decode(b, 32, bob_priv);
	hex_decode(want, 32, bob_pub);
	CHECK(x25519_public(got, b));
	CHECK_MEM(got, want, 32);

	check_mult(alice_priv, bob_pub, shared);
	check_mult(bob_priv, alice_pub, shared);

	/* out may alias the scalar (as when a key is replaced by a DH). */
	hex_decode(want, 32, shared);
	hex_decode(a, 32, alice_priv);
	hex_decode(b, 32, bob_pub);
	CHECK(x25519(a, a, b));
	CHECK_MEM(a, want, 32);
}

/* Points of small order (u = 0, u = 1 and the two of order 8, as listed in
 * libsodium's and WireGuard's blacklists) give an all-zero secret with every
 * scalar; x25519 must refuse them and wipe its output. */
static void test_low_order(void)
{
	static const char *const points[] = {
		"0000000000000000000000000000000000000000000000000000000000000000",
		"0100000000000000000000000000000000000000000000000000000000000000",
		"e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
		"5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
	};
	uint8_t scalar[32], point[32], out[32];

	x25519_generate(scalar);
	for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
		hex_decode(point, 32, points[i]);
		memset(out, 0xaa, sizeof(out));
		if (x25519(out, scalar, point)) {
			fprintf(stderr, "low-order point %zu accepted\n", i);
			CHECK(0);
		}
		for (size_t j = 0; j < sizeof(out); j++)
			CHECK(out[j] == 0);
	}
}

static void test_keys(void)
{
	uint8_t zero[32] = { 0 }, priv[32], priv2[32], pub[32], pub2[32], s1[32], s2[32];

	memset(pub, 0xaa, sizeof(pub));
	CHECK(!x25519_public(pub, zero));

	x25519_generate(priv);
	CHECK((priv[0] & 7) == 0);
	CHECK((priv[31] & 0x80) == 0);
	CHECK((priv[31] & 0x40) != 0);
	x25519_generate(priv2);
	CHECK(memcmp(priv, priv2, 32) != 0);

	/* Generated keys agree on a shared secret. */
	CHECK(x25519_public(pub, priv));
	CHECK(x25519_public(pub2, priv2));
	CHECK(x25519(s1, priv, pub2));
	CHECK(x25519(s2, priv2, pub));
	CHECK_MEM(s1, s2, 32);

	{
		uint8_t k[32];

		memset(k, 0xff, sizeof(k));
		x25519_clamp(k);
		CHECK(k[0] == 0xf8 && k[31] == 0x7f && k[15] == 0xff);
		memset(k, 0, sizeof(k));
		x25519_clamp(k);
		CHECK(k[0] == 0 && k[31] == 0x40);
	}
}

int main(void)
{
	test_rfc7748_5_2();
	test_rfc7748_6_1();
	test_low_order();
	test_keys();
	return check_result("test_x25519");
}
