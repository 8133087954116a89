/* TAI64N encoding (2^62 + 10 + seconds, then nanoseconds, big-endian),
 * ordering, and the 2^24 ns rounding of tai64n_now. */
#include "crypto/tai64n.h"

#include "check.h"

static void check_encode(time_t sec, long nsec, const char *want_hex)
{
	struct timespec ts = { .tv_sec = sec, .tv_nsec = nsec };
	uint8_t want[TAI64N_SIZE], got[TAI64N_SIZE];

	CHECK(hex_decode(want, sizeof(want), want_hex) == TAI64N_SIZE);
	tai64n_encode(got, &ts);
	CHECK_MEM(got, want, TAI64N_SIZE);
}

static void test_encode(void)
{
	/* The Unix epoch is TAI64 label 2^62 + 10. */
	check_encode(0, 0, "400000000000000a00000000");
	check_encode(1, 999999999, "400000000000000b3b9ac9ff");
	/* 2^32 seconds carries into the upper half of the label. */
	check_encode(0x100000000LL, 0x01020304, "400000010000000a01020304");
	/* 2001-09-09T01:46:40Z */
	check_encode(1000000000, 16777216, "400000003b9aca0a01000000");
}

static void test_after(void)
{
	struct timespec times[] = {
		{ 0, 0 }, { 0, 1 }, { 0, 999999999 }, { 1, 0 }, { 255, 0 }, { 256, 0 },
		{ 1700000000, 5 }, { 1700000000, 16777216 }, { 0x100000000LL, 0 },
	};
	enum { N = sizeof(times) / sizeof(times[0]) };
	uint8_t enc[N][TAI64N_SIZE];

	for (int i = 0; i < N; i++)
		tai64n_encode(enc[i], &times[i]);
	/* The list is in time order; tai64n_after must agree for every pair. */
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++)
			if (tai64n_after(enc[i], enc[j]) != (i > j)) {
				fprintf(stderr, "tai64n_after(%d, %d) wrong\n", i, j);
				CHECK(0);
			}
}

static void test_now(void)
{
	uint8_t a[TAI64N_SIZE], lo[TAI64N_SIZE], hi[TAI64N_SIZE];
	struct timespec before, after;
	uint32_t nsec;

	clock_gettime(CLOCK_REALTIME, &before);
	tai64n_now(a);
	clock_gettime(CLOCK_REALTIME, &after);

	/* Nanoseconds are a multiple of 2^24 and below one second. */
	nsec = (uint32_t)a[8] << 24 | (uint32_t)a[9] << 16 | (uint32_t)a[10] << 8 | a[11];
	CHECK((nsec & 0xffffff) == 0);
	CHECK(nsec < 1000000000);

	/* Rounding down keeps it within [before - 2^24 ns, after]. */
	before.tv_nsec -= 1 << 24;
	if (before.tv_nsec < 0) {
		before.tv_nsec += 1000000000;
		before.tv_sec--;
	}
	tai64n_encode(lo, &before);
	tai64n_encode(hi, &after);
	CHECK(!tai64n_after(lo, a));
	CHECK(!tai64n_after(a, hi));
}

int main(void)
{
	test_encode();
	test_after();
	test_now();
	return check_result("test_tai64n");
}
