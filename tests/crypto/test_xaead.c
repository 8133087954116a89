/* XChaCha20-Poly1305 (cookie replies) against draft-irtf-cfrg-xchacha-03
 * section A.3.1, plus forgery rejection and in-place use. */
#include "crypto/aead.h"

#include "check.h"

static const char key_hex[] = "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f";
static const char nonce_hex[] = "404142434445464748494a4b4c4d4e4f5051525354555657";
static const char ad_hex[] = "50515253c0c1c2c3c4c5c6c7";
static const char plain[] =
	"Ladies and Gentlemen of the class of '99: If I could offer you only one "
	"tip for the future, sunscreen would be it.";
static const char cipher_hex[] =
	"bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb"
	"731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452"
	"2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9"
	"21f9664c97637da9768812f615c68b13b52e";
static const char tag_hex[] = "c0875924c1c7987947deafd8780acf49";

#define LEN (sizeof(plain) - 1)

int main(void)
{
	uint8_t key[AEAD_KEY_SIZE], nonce[XAEAD_NONCE_SIZE], ad[12];
	uint8_t want[LEN + AEAD_TAG_SIZE], out[LEN + AEAD_TAG_SIZE], buf[LEN + AEAD_TAG_SIZE];
	uint8_t back[LEN];

	hex_decode(key, sizeof(key), key_hex);
	hex_decode(nonce, sizeof(nonce), nonce_hex);
	CHECK(hex_decode(ad, sizeof(ad), ad_hex) == sizeof(ad));
	CHECK(hex_decode(want, LEN, cipher_hex) == LEN);
	hex_decode(want + LEN, AEAD_TAG_SIZE, tag_hex);

	CHECK(xaead_seal(out, (const uint8_t *)plain, LEN, ad, sizeof(ad), nonce, key));
	CHECK_MEM(out, want, sizeof(want));

	CHECK(xaead_open(back, want, sizeof(want), ad, sizeof(ad), nonce, key));
	CHECK_MEM(back, plain, LEN);

	/* in place, both directions */
	memcpy(buf, plain, LEN);
	CHECK(xaead_seal(buf, buf, LEN, ad, sizeof(ad), nonce, key));
	CHECK_MEM(buf, want, sizeof(want));
	CHECK(xaead_open(buf, buf, sizeof(buf), ad, sizeof(ad), nonce, key));
	CHECK_MEM(buf, plain, LEN);

	/* A flipped bit anywhere is refused and the output wiped. */
	for (size_t i = 0; i < sizeof(want); i++) {
		memcpy(buf, want, sizeof(want));
		buf[i] ^= 0x04;
		memset(back, 0xee, sizeof(back));
		CHECK(!xaead_open(back, buf, sizeof(buf), ad, sizeof(ad), nonce, key));
		for (size_t j = 0; j < LEN; j++)
			if (back[j]) {
				CHECK(!"output not wiped");
				break;
			}
	}
	/* The extended nonce matters past the first 12 bytes. */
	nonce[23] ^= 1;
	CHECK(!xaead_open(back, want, sizeof(want), ad, sizeof(ad), nonce, key));
	nonce[23] ^= 1;

	CHECK(!xaead_open(back, want, AEAD_TAG_SIZE - 1, ad, sizeof(ad), nonce, key));
	/* Empty message: just a tag. */
	CHECK(xaead_seal(out, NULL, 0, ad, sizeof(ad), nonce, key));
	CHECK(xaead_open(back, out, AEAD_TAG_SIZE, ad, sizeof(ad), nonce, key));

	return check_result("test_xaead");
}
