/* The forwarding table checked against a naive model: an array of
 * (family, prefix, cidr, value) searched by linear scan, under thousands of
 * random inserts, replacements and removals of overlapping prefixes. */
#include "router/table.h"
#include "router/table_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define CHECK(cond) do {                                                      \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: check failed: %s\n",         \
				__FILE__, __LINE__, #cond);                   \
			exit(1);                                              \
		}                                                             \
	} while (0)

enum {
	MODEL_MAX = 40000,
	N_VALUES = 6,
	N_BASES = 24,
	N_ROUNDS = 60,
	OPS_PER_ROUND = 300,
};

struct entry {
	int family;
	uint8_t addr[16];
	uint8_t cidr;
	void *value;
};

static struct entry model[MODEL_MAX];
static size_t model_n;
static int values[N_VALUES]; /* their addresses are the opaque values */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* xorshift64*: reproducible, no libc state. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static unsigned int addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

static unsigned int family_bits(int family)
{
	return addr_len(family) * 8;
}

static void mask(uint8_t *a, unsigned int len, unsigned int cidr)
{
	for (unsigned int i = 0; i < len; i++) {
		unsigned int keep = cidr > i * 8 ? cidr - i * 8 : 0;

		if (keep < 8)
			a[i] &= (uint8_t)(0xff00u >> keep);
	}
}

static bool matches(const uint8_t *prefix, unsigned int cidr, const uint8_t *a, unsigned int len)
{
	uint8_t m[16];

	memcpy(m, a, len);
	mask(m, len, cidr);
	return !memcmp(m, prefix, len);
}

static struct entry *model_find(int family, const uint8_t *addr, unsigned int cidr)
{
	for (size_t i = 0; i < model_n; i++)
		if (model[i].family == family && model[i].cidr == cidr &&
		    !memcmp(model[i].addr, addr, addr_len(family)))
			return &model[i];
	return NULL;
}

static void *model_lookup(int family, const uint8_t *a)
{
	const struct entry *best = NULL;

	for (size_t i = 0; i < model_n; i++) {
		const struct entry *e = &model[i];

		if (e->family == family && (!best || e->cidr > best->cidr) &&
		    matches(e->addr, e->cidr, a, addr_len(family)))
			best = e;
	}
	return best ? best->value : NULL;
}

static void model_del(struct entry *e)
{
	*e = model[--model_n];
}

/* Clustered addresses make prefixes nest and share long common parts; the
 * bases sit on and next to the 16-bit boundaries that the table treats
 * specially, and at the extremes of the address space. */
static uint8_t bases4[N_BASES][4], bases6[N_BASES][16];

static void make_bases(void)
{
	for (int i = 0; i < N_BASES; i++) {
		for (int j = 0; j < 16; j++)
			bases6[i][j] = (uint8_t)rnd();
		for (int j = 0; j < 4; j++)
			bases4[i][j] = (uint8_t)rnd();
	}
	memset(bases4[0], 0, 4);
	memset(bases6[0], 0, 16);
	memset(bases4[1], 0xff, 4);
	memset(bases6[1], 0xff, 16);
	bases4[2][2] = bases4[2][3] = 0;       /* slot start */
	bases4[3][2] = bases4[3][3] = 0xff;    /* slot end */
	memset(&bases6[2][2], 0, 14);
	memset(&bases6[3][2], 0xff, 14);
	memcpy(bases4[4], bases4[5], 2);       /* same slot */
	memcpy(bases6[4], bases6[5], 8);       /* same /64 */
}

static void random_addr(int family, uint8_t *a)
{
	unsigned int len = addr_len(family);
	uint64_t r = rnd();

	if (r % 4 == 0) {
		for (unsigned int i = 0; i < len; i++)
			a[i] = (uint8_t)rnd();
		return;
	}
	/* A base with a random tail: flip a few low-order bits. */
	memcpy(a, family == AF_INET ? bases4[(r >> 8) % N_BASES] : bases6[(r >> 8) % N_BASES], len);
	for (unsigned int n = (unsigned int)(r >> 16) % 4; n--; ) {
		unsigned int bit = (unsigned int)(rnd() % (len * 8));

		/* Bias towards the low half so that prefixes overlap. */
		if (rnd() % 2)
			bit = len * 4 + bit / 2;
		a[bit / 8] ^= (uint8_t)(0x80 >> (bit % 8));
	}
}

static unsigned int random_cidr(int family)
{
	unsigned int bits = family_bits(family);

	switch (rnd() % 8) {
	case 0: return 0;
	case 1: return bits;
	case 2: return (unsigned int)(rnd() % 17);           /* short prefixes */
	case 3: return 16;
	default: return (unsigned int)(rnd() % (bits + 1));
	}
}

static int random_family(void)
{
	return rnd() % 2 ? AF_INET : AF_INET6;
}

static void check_one(const struct rt_table *t, int family, const uint8_t *a)
{
	void *want = model_lookup(family, a), *got = rt_lookup(t, family, a);

	if (want != got) {
		char s[64] = "";

		for (unsigned int i = 0; i < addr_len(family); i++)
			snprintf(s + strlen(s), sizeof(s) - strlen(s), "%02x", a[i]);
		fprintf(stderr, "lookup %s: got %p want %p\n", s, got, want);
		exit(1);
	}
}

/* Adds delta (+1/-1) to the address as a big-endian integer. */
static void addr_step(uint8_t *a, unsigned int len, int delta)
{
	for (int i = (int)len - 1; i >= 0; i--) {
		a[i] = (uint8_t)(a[i] + delta);
		if ((delta > 0 && a[i] != 0) || (delta < 0 && a[i] != 0xff))
			break;
	}
}

/* rt_lookup_batch must give rt_lookup's answers, across burst boundaries. */
static void check_batch(const struct rt_table *t)
{
	enum { N = 77 };
	uint8_t a[N][16];
	const void *p[N];
	void *out[N];

	for (int family = 0; family < 3; family++) {
		int af = family == 0 ? AF_INET : family == 1 ? AF_INET6 : AF_UNIX;

		for (int i = 0; i < N; i++) {
			random_addr(af == AF_INET ? AF_INET : AF_INET6, a[i]);
			p[i] = a[i];
		}
		rt_lookup_batch(t, af, p, N, out);
		for (int i = 0; i < N; i++)
			CHECK(out[i] == rt_lookup(t, af, a[i]));
	}
}

/* rt_get answers for exactly the prefix asked: each entry, the same
 * address one bit shorter and longer, and random prefixes. */
static void check_exact_one(const struct rt_table *t, int family, const uint8_t *addr,
			    unsigned int cidr)
{
	uint8_t m[16] = { 0 };
	const struct entry *e;

	memcpy(m, addr, addr_len(family));
	mask(m, addr_len(family), cidr);
	e = model_find(family, m, cidr);
	CHECK(rt_get(t, family, addr, (uint8_t)cidr) == (e ? e->value : NULL));
}

static void check_exact(const struct rt_table *t)
{
	uint8_t a[16];

	for (size_t i = 0; i < model_n; i++) {
		const struct entry *e = &model[i];

		check_exact_one(t, e->family, e->addr, e->cidr);
		if (e->cidr > 0)
			check_exact_one(t, e->family, e->addr, e->cidr - 1);
		if (e->cidr < addr_len(e->family) * 8)
			check_exact_one(t, e->family, e->addr, e->cidr + 1);
	}
	for (int i = 0; i < 200; i++) {
		int family = random_family();

		random_addr(family, a);
		check_exact_one(t, family, a, (unsigned int)(rnd() % (addr_len(family) * 8 + 1)));
	}
	CHECK(!rt_get(t, AF_UNIX, a, 0));
	CHECK(!rt_get(t, AF_INET, a, 33));
}

static void check_all(const struct rt_table *t)
{
	uint8_t a[16];

	check_batch(t);
	check_exact(t);
	CHECK(rt_count(t) == model_n);
	for (int i = 0; i < 400; i++) {
		int family = random_family();

		random_addr(family, a);
		check_one(t, family, a);
	}
	/* First and last address of each prefix, and their outer neighbours. */
	for (size_t i = 0; i < model_n; i++) {
		const struct entry *e = &model[i];
		unsigned int len = addr_len(e->family);

		memcpy(a, e->addr, len);
		check_one(t, e->family, a);
		addr_step(a, len, -1);
		check_one(t, e->family, a);
		memcpy(a, e->addr, len);
		for (unsigned int b = e->cidr; b < len * 8; b++)
			a[b / 8] |= (uint8_t)(0x80 >> (b % 8));
		check_one(t, e->family, a);
		addr_step(a, len, 1);
		check_one(t, e->family, a);
	}
}

struct walked {
	struct entry e[MODEL_MAX];
	size_t n;
};

static void collect(void *ctx, int family, const uint8_t *addr, uint8_t cidr)
{
	struct walked *w = ctx;

	CHECK(w->n < MODEL_MAX);
	w->e[w->n].family = family;
	memset(w->e[w->n].addr, 0, 16);
	memcpy(w->e[w->n].addr, addr, addr_len(family));
	w->e[w->n].cidr = cidr;
	w->n++;
}

static int key_cmp(const void *pa, const void *pb);

/* Orders indexes by key, then by position (qsort_r context: the entries). */
static int idx_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct entry *arr = ctx;
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	int c = key_cmp(&arr[a], &arr[b]);

	return c ? c : (a < b ? -1 : a > b);
}

static int entry_cmp(const void *pa, const void *pb)
{
	const struct entry *a = pa, *b = pb;
	int c;

	if (a->family != b->family)
		return a->family == AF_INET ? -1 : 1;
	c = memcmp(a->addr, b->addr, addr_len(a->family));
	if (c)
		return c;
	return (int)a->cidr - (int)b->cidr;
}

static void check_walk(const struct rt_table *t, void *value)
{
	static struct walked got, want;

	got.n = want.n = 0;
	rt_walk_value(t, value, collect, &got);
	for (size_t i = 0; i < model_n; i++)
		if (model[i].value == value)
			want.e[want.n++] = model[i];
	for (size_t i = 0; i < want.n; i++)
		memset(want.e[i].addr + addr_len(want.e[i].family), 0,
		       16 - addr_len(want.e[i].family));
	qsort(want.e, want.n, sizeof(want.e[0]), entry_cmp);
	CHECK(got.n == want.n);
	for (size_t i = 0; i < got.n; i++) {
		/* Same set, reported in ascending order (IPv4 first). */
		CHECK(entry_cmp(&got.e[i], &want.e[i]) == 0);
	}
}

static void random_op(struct rt_table *t)
{
	uint64_t r = rnd() % 100;
	int family = random_family();
	unsigned int cidr = random_cidr(family);
	void *value = &values[rnd() % N_VALUES];
	uint8_t a[16], m[16];
	struct entry *e;

	random_addr(family, a);
	memcpy(m, a, 16);
	mask(m, addr_len(family), cidr);

	if (r < (model_n < 800 ? 55 : 40) || model_n < 8) {
		/* Insert or replace; the unmasked address must be accepted. */
		if (model_n >= MODEL_MAX - 1)
			return;
		CHECK(rt_insert(t, family, a, (uint8_t)cidr, value) == 0);
		e = model_find(family, m, cidr);
		if (!e) {
			e = &model[model_n++];
			memset(e, 0, sizeof(*e));
			e->family = family;
			memcpy(e->addr, m, addr_len(family));
			e->cidr = (uint8_t)cidr;
		}
		e->value = value;
	} else if (r < 90) {
		/* Remove an existing prefix, by value, by the wrong value or by
		 * any value, through an address with host bits set. */
		const void *by;
		int want;

		e = &model[rnd() % model_n];
		memcpy(a, e->addr, 16);
		if (e->cidr < family_bits(e->family) && rnd() % 2)
			a[addr_len(e->family) - 1] |= 1;
		switch (rnd() % 3) {
		case 0: by = NULL; break;
		case 1: by = e->value; break;
		default: by = &values[rnd() % N_VALUES]; break;
		}
		want = !by || by == e->value ? 0 : -ENOENT;
		CHECK(rt_remove(t, e->family, a, e->cidr, by) == want);
		if (!want)
			model_del(e);
	} else {
		/* Remove a random prefix that most likely is not there. */
		e = model_find(family, m, cidr);
		CHECK(rt_remove(t, family, a, (uint8_t)cidr, NULL) == (e ? 0 : -ENOENT));
		if (e)
			model_del(e);
	}
}

static void test_random(void)
{
	struct rt_table *t = rt_table_new();

	CHECK(t);
	model_n = 0;
	for (int round = 0; round < N_ROUNDS; round++) {
		for (int i = 0; i < OPS_PER_ROUND; i++)
			random_op(t);
		check_all(t);
		for (int v = 0; v < N_VALUES; v++)
			check_walk(t, &values[v]);
		if (round % 10 == 9) {
			/* Drop one value entirely. */
			void *v = &values[rnd() % N_VALUES];
			size_t want = 0;

			for (size_t i = 0; i < model_n; )
				if (model[i].value == v) {
					model_del(&model[i]);
					want++;
				} else {
					i++;
				}
			CHECK(rt_remove_value(t, v) == want);
			CHECK(rt_remove_value(t, v) == 0);
			check_all(t);
			check_walk(t, v);
		}
	}
	rt_table_free(t);
}

/* The big model: a sorted array, looked up with one binary search per
 * prefix length, so that >65536 prefixes per family (enough to make the
 * table grow its slot array to the largest size) stay cheap to check. */
static int key_cmp(const void *pa, const void *pb)
{
	const struct entry *a = pa, *b = pb;

	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	if (a->cidr != b->cidr)
		return (int)a->cidr - (int)b->cidr;
	return memcmp(a->addr, b->addr, 16);
}

static void *sorted_lookup(const struct entry *arr, size_t n, int family, const uint8_t *a)
{
	struct entry k = { .family = family };

	for (int c = (int)family_bits(family); c >= 0; c--) {
		const struct entry *e;

		memset(k.addr, 0, 16);
		memcpy(k.addr, a, addr_len(family));
		mask(k.addr, addr_len(family), (unsigned int)c);
		k.cidr = (uint8_t)c;
		e = bsearch(&k, arr, n, sizeof(*arr), key_cmp);
		if (e)
			return e->value;
	}
	return NULL;
}

static void check_big(const struct rt_table *t, const struct entry *arr, size_t n)
{
	uint8_t a[16];

	CHECK(rt_count(t) == n);
	check_batch(t);
	for (int i = 0; i < 3000; i++) {
		int family = random_family();

		random_addr(family, a);
		CHECK(rt_lookup(t, family, a) == sorted_lookup(arr, n, family, a));
	}
	for (int i = 0; i < 1000 && n; i++) {
		const struct entry *e = &arr[rnd() % n];
		unsigned int len = addr_len(e->family);

		memcpy(a, e->addr, len);
		CHECK(rt_lookup(t, e->family, a) == sorted_lookup(arr, n, e->family, a));
		addr_step(a, len, -1);
		CHECK(rt_lookup(t, e->family, a) == sorted_lookup(arr, n, e->family, a));
		memcpy(a, e->addr, len);
		for (unsigned int b = e->cidr; b < len * 8; b++)
			a[b / 8] |= (uint8_t)(0x80 >> (b % 8));
		CHECK(rt_lookup(t, e->family, a) == sorted_lookup(arr, n, e->family, a));
		addr_step(a, len, 1);
		CHECK(rt_lookup(t, e->family, a) == sorted_lookup(arr, n, e->family, a));
	}
}

static void test_big(void)
{
	enum { PER_FAMILY = 70000, N = 2 * PER_FAMILY };
	struct entry *arr = calloc(N, sizeof(*arr));
	struct rt_table *t = rt_table_new();
	static struct walked got;
	size_t n = 0, kept;

	CHECK(arr && t);
	for (size_t i = 0; i < N; i++) {
		struct entry *e = &arr[i];

		e->family = i < PER_FAMILY ? AF_INET : AF_INET6;
		random_addr(e->family, e->addr);
		e->cidr = (uint8_t)(rnd() % 4 ? 16 + rnd() % (family_bits(e->family) - 15)
					      : random_cidr(e->family));
		e->value = &values[rnd() % N_VALUES];
		CHECK(rt_insert(t, e->family, e->addr, e->cidr, e->value) == 0);
		mask(e->addr, addr_len(e->family), e->cidr);
	}
	/* Later inserts of a prefix replace earlier ones: keep the last. A
	 * stable order comes from sorting indexes, qsort is not stable. */
	{
		size_t *idx = malloc(N * sizeof(*idx));
		struct entry *tmp = malloc(N * sizeof(*tmp));

		CHECK(idx && tmp);
		for (size_t i = 0; i < N; i++)
			idx[i] = i;
		for (size_t i = 0; i < N; i++) /* reversed: newest first */
			tmp[i] = arr[N - 1 - i];
		qsort_r(idx, N, sizeof(*idx), idx_cmp, tmp);
		for (size_t i = 0; i < N; i++)
			if (!n || key_cmp(&arr[n - 1], &tmp[idx[i]]))
				arr[n++] = tmp[idx[i]];
		free(idx);
		free(tmp);
	}
	check_big(t, arr, n);

	/* Remove every other prefix, by its value. */
	kept = 0;
	for (size_t i = 0; i < n; i++) {
		if (i % 2) {
			CHECK(rt_remove(t, arr[i].family, arr[i].addr, arr[i].cidr, arr[i].value) == 0);
		} else {
			arr[kept++] = arr[i];
		}
	}
	n = kept;
	check_big(t, arr, n);

	got.n = 0;
	rt_walk_value(t, &values[0], collect, &got);
	kept = 0;
	for (size_t i = 0; i < n; i++)
		if (arr[i].value == &values[0])
			kept++;
	CHECK(got.n == kept);
	for (size_t i = 1; i < got.n; i++)
		CHECK(entry_cmp(&got.e[i - 1], &got.e[i]) < 0);
	for (size_t i = 0; i < got.n; i++) {
		const struct entry *e = bsearch(&got.e[i], arr, n, sizeof(*arr), key_cmp);

		CHECK(e && e->value == &values[0]);
	}

	for (int v = 0; v < N_VALUES; v++)
		rt_remove_value(t, &values[v]);
	CHECK(rt_count(t) == 0);
	check_big(t, arr, 0);
	rt_table_free(t);
	free(arr);
}

static void put(struct rt_table *t, int family, const char *s, uint8_t cidr, void *v)
{
	uint8_t a[16];

	CHECK(inet_pton(family, s, a) == 1);
	CHECK(rt_insert(t, family, a, cidr, v) == 0);
}

static void *get(struct rt_table *t, int family, const char *s)
{
	uint8_t a[16];

	CHECK(inet_pton(family, s, a) == 1);
	return rt_lookup(t, family, a);
}

static void walk_first(void *ctx, int family, const uint8_t *addr, uint8_t cidr)
{
	char *out = ctx;
	char s[INET6_ADDRSTRLEN];

	inet_ntop(family, addr, s, sizeof(s));
	snprintf(out + strlen(out), 256 - strlen(out), "%s/%u ", s, cidr);
}

/* Known answers on a small table, including the edges of the API. */
static void test_fixed(void)
{
	struct rt_table *t = rt_table_new();
	void *a = &values[0], *b = &values[1], *c = &values[2];
	uint8_t z[16] = { 0 };
	char out[256] = "";

	CHECK(t);
	check_batch(t);
	CHECK(get(t, AF_INET, "1.2.3.4") == NULL);
	CHECK(get(t, AF_INET6, "::1") == NULL);
	put(t, AF_INET, "192.168.4.77", 24, a);   /* host bits ignored */
	put(t, AF_INET, "192.168.4.4", 32, b);
	put(t, AF_INET, "0.0.0.0", 0, c);
	put(t, AF_INET6, "2001:db8::", 32, a);
	put(t, AF_INET6, "2001:db8:0:1::5", 128, b);
	CHECK(rt_count(t) == 5);
	CHECK(get(t, AF_INET, "192.168.4.4") == b);
	CHECK(get(t, AF_INET, "192.168.4.5") == a);
	CHECK(get(t, AF_INET, "192.168.5.1") == c);
	CHECK(get(t, AF_INET6, "2001:db8:0:1::5") == b);
	CHECK(get(t, AF_INET6, "2001:db8:0:1::6") == a);
	CHECK(get(t, AF_INET6, "2001:db9::") == NULL);

	put(t, AF_INET, "192.168.4.0", 24, b);    /* replacement */
	CHECK(rt_count(t) == 5);
	CHECK(get(t, AF_INET, "192.168.4.5") == b);

	rt_walk_value(t, b, walk_first, out);
	CHECK(!strcmp(out, "192.168.4.0/24 192.168.4.4/32 2001:db8:0:1::5/128 "));

	/* Removal with the wrong value leaves the prefix; host bits ignored. */
	CHECK(rt_remove(t, AF_INET, (uint8_t[4]){ 192, 168, 4, 9 }, 24, a) == -ENOENT);
	CHECK(rt_remove(t, AF_INET, (uint8_t[4]){ 192, 168, 4, 9 }, 24, b) == 0);
	CHECK(rt_remove(t, AF_INET, (uint8_t[4]){ 192, 168, 4, 9 }, 24, NULL) == -ENOENT);
	CHECK(get(t, AF_INET, "192.168.4.5") == c);
	CHECK(get(t, AF_INET, "192.168.4.4") == b);

	/* Bad arguments. */
	CHECK(rt_insert(t, AF_INET, z, 33, a) == -EINVAL);
	CHECK(rt_insert(t, AF_INET6, z, 129, a) == -EINVAL);
	CHECK(rt_insert(t, AF_UNIX, z, 8, a) == -EINVAL);
	CHECK(rt_insert(t, AF_INET, z, 8, NULL) == -EINVAL);
	CHECK(rt_remove(t, AF_UNIX, z, 0, NULL) == -ENOENT);
	CHECK(rt_remove(t, AF_INET, z, 33, NULL) == -ENOENT);
	CHECK(rt_lookup(t, AF_UNIX, z) == NULL);
	CHECK(rt_count(t) == 4);

	CHECK(rt_remove_value(t, b) == 2);
	CHECK(rt_remove_value(t, c) == 1);
	CHECK(rt_count(t) == 1);
	CHECK(get(t, AF_INET, "192.168.4.4") == NULL);
	CHECK(get(t, AF_INET6, "2001:db8:0:1::5") == a);
	rt_table_free(t);
	rt_table_free(NULL);
}

/* Host route i of family: 10.(i >> 16).(i >> 8).i or fd00::i. */
static void host_addr(int family, unsigned int i, uint8_t a[16])
{
	memset(a, 0, 16);
	if (family == AF_INET) {
		a[0] = 10;
		a[1] = (uint8_t)(i >> 16);
		a[2] = (uint8_t)(i >> 8);
		a[3] = (uint8_t)i;
	} else {
		a[0] = 0xfd;
		a[13] = (uint8_t)(i >> 16);
		a[14] = (uint8_t)(i >> 8);
		a[15] = (uint8_t)i;
	}
}

static void check_hosts(const struct rt_table *t, int family, unsigned int n, void *v)
{
	uint8_t a[16];

	for (unsigned int i = 0; i < n; i++) {
		host_addr(family, i, a);
		CHECK(rt_lookup(t, family, a) == v);
	}
	host_addr(family, n, a);
	CHECK(rt_lookup(t, family, a) == NULL);
}

/* rt_grow_prepare and _commit: a prepared hash takes the routes as they
 * were and room for more, so the inserts after the commit never rebuild;
 * a copy of a table that changed since, or of another table, is not put
 * in place. */
static void test_grow(void)
{
	enum { N = 3000, ROOM = 5000 };
	struct rt_table *t = rt_table_new(), *other = rt_table_new();
	void *v = &values[0];
	struct rt_grow *g;
	uint8_t a[16];

	CHECK(t && other);
	for (int fi = 0; fi < 2; fi++) {
		int family = fi ? AF_INET6 : AF_INET;
		size_t mask;

		for (unsigned int i = 0; i < N; i++) {
			host_addr(family, i, a);
			CHECK(rt_insert(t, family, a, (uint8_t)family_bits(family), v) == 0);
		}
		CHECK((g = rt_grow_prepare(t, family, ROOM)));
		check_hosts(t, family, N, v); /* the copy left t as it was */
		rt_grow_commit(t, g);
		mask = t->fam[fi].hosts.mask;
		CHECK((N + ROOM) * 2 <= mask + 1);
		check_hosts(t, family, N, v);
		for (unsigned int i = N; i < N + ROOM; i++) {
			host_addr(family, i, a);
			CHECK(rt_insert(t, family, a, (uint8_t)family_bits(family), v) == 0);
		}
		CHECK(t->fam[fi].hosts.mask == mask); /* no rebuild */
		check_hosts(t, family, N + ROOM, v);
		/* Room enough already: nothing to prepare. */
		CHECK(!rt_grow_prepare(t, family, 1));

		/* t changed after the copy: the copy is dropped, the change kept. */
		CHECK((g = rt_grow_prepare(t, family, 4 * (N + ROOM))));
		host_addr(family, N + ROOM, a);
		CHECK(rt_insert(t, family, a, (uint8_t)family_bits(family), v) == 0);
		rt_grow_commit(t, g);
		CHECK(t->fam[fi].hosts.mask == mask);
		check_hosts(t, family, N + ROOM + 1, v);
		CHECK(rt_remove(t, family, a, (uint8_t)family_bits(family), v) == 0);
		CHECK((g = rt_grow_prepare(t, family, 4 * (N + ROOM))));
		CHECK(rt_remove_value(t, &values[1]) == 0); /* removes nothing, rebuilds */
		rt_grow_commit(t, g);
		CHECK(t->fam[fi].hosts.mask == mask);
		check_hosts(t, family, N + ROOM, v);

		/* Another table's copy is not put in place. */
		CHECK((g = rt_grow_prepare(other, family, 10)));
		rt_grow_commit(t, g);
		check_hosts(t, family, N + ROOM, v);
	}
	CHECK(rt_count(t) == 2 * (N + ROOM));
	CHECK(!rt_grow_prepare(t, AF_UNIX, 1));
	rt_grow_commit(t, NULL);
	rt_table_free(t);
	rt_table_free(other);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rng_state = strtoull(argv[1], NULL, 0) | 1;
	make_bases();
	test_fixed();
	test_random();
	test_big();
	test_grow();
	printf("test_table: ok\n");
	return 0;
}
