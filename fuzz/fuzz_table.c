/* libFuzzer target for the forwarding table (router/table.c): every entry
 * of router/table.h driven by a sequence of operations, each answer
 * compared with a naive model, a plain list of (family, prefix, cidr,
 * value), indexed by a hash of the exact prefixes: longest-prefix match
 * tries every cidr present from the longest down (a linear scan of the
 * list, as the model first was, cost more than the table; an exact-prefix
 * index shares nothing with the table's trie). The table is WireGuard's
 * allowed IPs, so its keys come from peers' configurations and VM
 * addresses: adversarial.
 *
 * Input: operations, one after the other, each an op byte then its
 * arguments. The op byte: bits 0-3 the operation (modulo 10), bit 4 IPv6
 * instead of IPv4, bits 5-7 all set an invalid family (which every entry
 * must refuse). Each family has a base address register; an address
 * argument is "tweak" (2 bytes: a byte index and a mask XORed into that
 * byte of the base); a value byte picks NULL (0) or one of 8 values.
 *   0 base   the family's length of bytes: the new base
 *   1 insert cidr byte, tweak, value     (a cidr > the family's bits, a
 *                                         NULL value or a bad family: -EINVAL)
 *   2 remove cidr byte, tweak, value     (NULL: whatever value)
 *   3 remove_value value
 *   4 lookup tweak                        rt_lookup
 *   5 batch  n (mod 97), shift, mode      rt_lookup_batch of n addresses:
 *            base + i << shift, or (mode bit 0) the model's own prefixes
 *            from index mode >> 1 on, host bits scrambled; each answer also
 *            compared with rt_lookup
 *   6 walk   value                        rt_walk_value, in order
 *   7 run    n, shift, value, mode, and with mode bit 3 a cidr byte:
 *            n (times 16 with mode bits 4 and 5) host routes (/32, /128), or prefixes
 *            of that cidr (the shift raised to keep them apart), at
 *            base + i << shift (mode bit 2: base ^ i << shift), inserted,
 *            or (mode bit 0) removed with the value (mode bit 1: with
 *            NULL); then a sample of them looked up. Runs of prefixes are
 *            what grows the slot array (8, 12, 16 bits).
 *   8 count
 *   9 sweep  every model prefix (at most 128) looked up at its first
 *            address, its last, and just outside it
 * rt_count is compared after every operation.
 *
 * Collisions: until the hash was keyed and folded (router/table.c,
 * host_hash), its low bits depended only on the low bits of each key word,
 * so "hosts" runs with a shift of 20 and up for IPv4 or 108 and up (or 44-63
 * within the interface ID) for IPv6 put thousands of routes in one probe
 * chain; the seeds keep such runs (fuzz/gen_table_corpus.py), and this
 * target found the slowdown. With a random seed per table no input can
 * aim at one chain; the runs still check removal's backward shift across
 * clusters and the slot array's growth.
 *
 * Work is bounded: at most MAX_OPS operations, MAX_ROUTES routes, MAX_RUN
 * routes in runs and a budget of model scans per input (counted as the
 * linear scans of the first model, one per insert, remove and lookup, so
 * that an input stops where it did; it keeps an input to a few
 * milliseconds under the sanitizers); the table is new for every input. */
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "router/table.h"

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "fuzz_table: check failed at %s:%d: %s\n",       \
				__FILE__, __LINE__, #cond);                              \
			abort();                                                         \
		}                                                                        \
	} while (0)

enum {
	MAX_OPS = 256,
	MAX_ROUTES = 4096,
	MAX_HOSTS_OP = 4080, /* 255 * 16 */
	MAX_RUN = 8192,
	MAX_BATCH = 96,
	HOSTS_SAMPLE = 48,
	SWEEP_MAX = 128,
	WORK_BUDGET = 400000, /* model entries scanned per input */
	CHECK_BUDGET = 20000, /* ... by one sample or sweep */
	N_VALUES = 8,
	BAD_FAMILY = 12345,
};

typedef unsigned __int128 u128;

/* The model: a list in insertion order, keys as plain integers (an IPv4
 * address in the low 32 bits), masked. */
struct entry {
	int fam; /* 0 IPv4, 1 IPv6 */
	uint8_t cidr;
	u128 key;
	u128 mask; /* of cidr bits */
	void *value;
};

static struct entry model[MAX_ROUTES];
static size_t n_model;
/* An index over the list, so that the model costs less than the table it
 * checks: the entries chained by a hash of (family, cidr, prefix), and how
 * many there are of each family and cidr. The list keeps its order (the
 * batch and the sweep pick entries by position). */
enum { HASH_BITS = 13 };
static int32_t bucket[1 << HASH_BITS]; /* first entry of a chain, -1: none */
static int32_t chain[MAX_ROUTES];      /* the next, -1: the last */
static uint32_t n_at_cidr[2][129];
static size_t work;
static size_t run_total; /* routes in runs so far, this input */
static char values[N_VALUES];
static const int af_of[2] = { AF_INET, AF_INET6 };
static const unsigned int bits_of[2] = { 32, 128 };

struct input {
	const uint8_t *p;
	size_t left;
};

static uint8_t byte(struct input *in)
{
	if (!in->left)
		return 0;
	in->left--;
	return *in->p++;
}

static u128 full_mask(int fam)
{
	return fam ? ~(u128)0 : 0xffffffffu;
}

static u128 prefix_mask(int fam, unsigned int cidr)
{
	if (cidr == 0)
		return 0;
	return (full_mask(fam) << (bits_of[fam] - cidr)) & full_mask(fam);
}

static u128 from_bytes(int fam, const uint8_t *a)
{
	u128 k = 0;

	for (unsigned int i = 0; i < bits_of[fam] / 8; i++)
		k = k << 8 | a[i];
	return k;
}

static void to_bytes(int fam, u128 k, uint8_t *a)
{
	for (int i = (int)bits_of[fam] / 8 - 1; i >= 0; i--) {
		a[i] = (uint8_t)k;
		k >>= 8;
	}
}

static void *value_of(uint8_t b)
{
	b %= N_VALUES + 1;
	return b ? &values[b - 1] : NULL;
}

static uint32_t slot_of(int fam, unsigned int cidr, u128 key)
{
	uint64_t h = (uint64_t)key ^ (uint64_t)(key >> 64) * 0x9e3779b97f4a7c15ull;

	h ^= (uint64_t)cidr << 1 | (uint64_t)fam;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 29;
	h *= 0xc4ceb9fe1a85ec53ull;
	return (uint32_t)(h >> (64 - HASH_BITS));
}

static void link_entry(size_t i)
{
	uint32_t s = slot_of(model[i].fam, model[i].cidr, model[i].key);

	chain[i] = bucket[s];
	bucket[s] = (int32_t)i;
}

static void unlink_entry(size_t i)
{
	int32_t *p = &bucket[slot_of(model[i].fam, model[i].cidr, model[i].key)];

	while (*p != (int32_t)i) {
		CHECK(*p >= 0);
		p = &chain[*p];
	}
	*p = chain[i];
}

static void model_reset(void)
{
	n_model = 0;
	memset(bucket, 0xff, sizeof(bucket));
	memset(n_at_cidr, 0, sizeof(n_at_cidr));
}

static void model_add(struct entry e)
{
	model[n_model] = e;
	link_entry(n_model++);
	n_at_cidr[e.fam][e.cidr]++;
}

static struct entry *find(int fam, u128 key, unsigned int cidr)
{
	for (int32_t i = bucket[slot_of(fam, cidr, key)]; i >= 0; i = chain[i])
		if (model[i].fam == fam && model[i].cidr == cidr && model[i].key == key)
			return &model[i];
	return NULL;
}

/* The work budget counts what a scan of the whole list would cost (as the
 * model did before it had an index), so inputs stop where they did. */
static struct entry *model_find(int fam, u128 key, unsigned int cidr)
{
	work += n_model;
	return find(fam, key, cidr);
}

/* Longest prefix match, by its definition: the longest cidr at which the
 * address, masked, is a prefix of the list. */
static void *model_lookup(int fam, u128 a)
{
	work += n_model;
	for (int cidr = (int)bits_of[fam]; cidr >= 0; cidr--) {
		const struct entry *e;

		if (n_at_cidr[fam][cidr] && (e = find(fam, a & prefix_mask(fam, cidr), cidr)))
			return e->value;
	}
	return NULL;
}

/* Takes e out; the last entry moves into its place. */
static void model_drop(struct entry *e)
{
	size_t i = (size_t)(e - model), last = n_model - 1;

	unlink_entry(i);
	n_at_cidr[e->fam][e->cidr]--;
	if (i != last) {
		unlink_entry(last);
		model[i] = model[last];
		link_entry(i);
	}
	n_model--;
}

static void check_lookup(struct rt_table *t, int fam, u128 a)
{
	uint8_t bytes[16];

	to_bytes(fam, a, bytes);
	CHECK(rt_lookup(t, af_of[fam], bytes) == model_lookup(fam, a));
}

static void op_insert(struct rt_table *t, int fam, bool bad_fam, unsigned int cidr, u128 a,
		      void *value)
{
	uint8_t bytes[16];
	struct entry *e;
	int ret;

	to_bytes(fam, a, bytes);
	ret = rt_insert(t, bad_fam ? BAD_FAMILY : af_of[fam], bytes, (uint8_t)cidr, value);
	if (bad_fam || cidr > bits_of[fam] || !value) {
		CHECK(ret == -EINVAL);
		return;
	}
	if ((e = model_find(fam, a & prefix_mask(fam, cidr), cidr))) {
		CHECK(ret == 0);
		e->value = value; /* "Replaces the value of an existing prefix." */
		return;
	}
	if (n_model == MAX_ROUTES) {
		/* Keep the model whole: take the route back out. */
		CHECK(ret == 0);
		CHECK(rt_remove(t, af_of[fam], bytes, (uint8_t)cidr, value) == 0);
		return;
	}
	CHECK(ret == 0);
	model_add((struct entry){ fam, (uint8_t)cidr, a & prefix_mask(fam, cidr),
				  prefix_mask(fam, cidr), value });
}

static void op_remove(struct rt_table *t, int fam, bool bad_fam, unsigned int cidr, u128 a,
		      void *value)
{
	uint8_t bytes[16];
	struct entry *e = NULL;
	int ret;

	to_bytes(fam, a, bytes);
	ret = rt_remove(t, bad_fam ? BAD_FAMILY : af_of[fam], bytes, (uint8_t)cidr, value);
	if (!bad_fam && cidr <= bits_of[fam])
		e = model_find(fam, a & prefix_mask(fam, cidr), cidr);
	if (!e || (value && e->value != value)) {
		CHECK(ret == -ENOENT);
		return;
	}
	CHECK(ret == 0);
	model_drop(e);
}

static void op_remove_value(struct rt_table *t, void *value)
{
	size_t want = 0;

	for (size_t i = 0; value && i < n_model;) {
		if (model[i].value == value) {
			model_drop(&model[i]);
			want++;
		} else {
			i++;
		}
	}
	work += n_model;
	CHECK(rt_remove_value(t, value) == want);
}

static void op_batch(struct rt_table *t, int fam, bool bad_fam, struct input *in, u128 base)
{
	static uint8_t addrs[MAX_BATCH][16];
	const void *ptrs[MAX_BATCH];
	void *out[MAX_BATCH];
	size_t n = byte(in) % (MAX_BATCH + 1);
	unsigned int shift = byte(in) % bits_of[fam];
	uint8_t mode = byte(in);
	uint32_t r = 0x9e3779b9u ^ mode;
	u128 a[MAX_BATCH];
	size_t from = mode >> 1;

	for (size_t i = 0; i < n; i++) {
		a[i] = (base + ((u128)i << shift)) & full_mask(fam);
		if ((mode & 1) && n_model) {
			const struct entry *e = &model[(from + i) % n_model];
			u128 noise;

			r ^= r << 13;
			r ^= r >> 17;
			r ^= r << 5;
			noise = (u128)r * 0x9e3779b97f4a7c15ull;
			noise = noise << 64 | noise;
			if (e->fam == fam)
				a[i] = e->key | (noise & ~prefix_mask(fam, e->cidr) & full_mask(fam));
		}
		to_bytes(fam, a[i], addrs[i]);
		ptrs[i] = addrs[i];
		out[i] = &values[0]; /* must be overwritten */
	}
	rt_lookup_batch(t, bad_fam ? BAD_FAMILY : af_of[fam], ptrs, n, out);
	for (size_t i = 0; i < n; i++) {
		if (bad_fam) {
			CHECK(out[i] == NULL);
			continue;
		}
		CHECK(out[i] == model_lookup(fam, a[i]));
		CHECK(out[i] == rt_lookup(t, af_of[fam], addrs[i]));
	}
}

struct walked {
	struct entry *got;
	size_t n, cap;
};

static void walk_fn(void *ctx, int family, const uint8_t *addr, uint8_t cidr)
{
	struct walked *w = ctx;
	int fam = family == AF_INET6;

	CHECK(family == AF_INET || family == AF_INET6);
	CHECK(w->n < w->cap);
	w->got[w->n++] = (struct entry){ fam, cidr, from_bytes(fam, addr), 0, NULL };
}

static int entry_order(const void *pa, const void *pb)
{
	const struct entry *a = pa, *b = pb;

	if (a->fam != b->fam)
		return a->fam - b->fam;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return (int)a->cidr - (int)b->cidr;
}

/* "IPv4 before IPv6, in ascending address order", then shorter first. */
static void op_walk(struct rt_table *t, void *value)
{
	/* Static: a quarter megabyte malloc'ed per walk cost page faults. */
	static struct entry want[MAX_ROUTES], got[MAX_ROUTES];
	struct walked w = { got, 0, n_model };
	size_t n = 0;

	for (size_t i = 0; value && i < n_model; i++)
		if (model[i].value == value)
			want[n++] = (struct entry){ model[i].fam, model[i].cidr, model[i].key, 0, NULL };
	qsort(want, n, sizeof(*want), entry_order);
	work += n_model;
	rt_walk_value(t, value, walk_fn, &w);
	CHECK(w.n == n);
	for (size_t i = 0; i < n; i++)
		CHECK(w.got[i].fam == want[i].fam && w.got[i].key == want[i].key &&
		      w.got[i].cidr == want[i].cidr);
}

/* How many lookups one sample or sweep may check: up to max, fewer on a
 * large model (each costs a scan of it), never fewer than 8. */
static size_t checks(size_t max)
{
	size_t k = CHECK_BUDGET / (n_model + 1);

	return k < 8 ? 8 : k > max ? max : k;
}

/* Which of the n addresses base (+ or ^) i << shift is a, if any. */
static bool in_run(int fam, u128 a, u128 base, unsigned int shift, size_t n, bool xor,
		   size_t *idx)
{
	u128 d = (xor ? a ^ base : a - base) & full_mask(fam);

	if (d & (((u128)1 << shift) - 1))
		return false;
	d >>= shift;
	if (d >= n)
		return false;
	*idx = (size_t)d;
	return true;
}

static void op_hosts(struct rt_table *t, int fam, struct input *in, u128 base)
{
	static int32_t at[MAX_HOSTS_OP]; /* model index of address i, or -1 */
	size_t n = byte(in);
	unsigned int shift, bits = bits_of[fam], cidr = bits;
	void *value;
	uint8_t mode;
	bool xor;

	shift = byte(in) % bits;
	value = value_of(byte(in));
	mode = byte(in);
	xor = mode & 4;
	if ((mode & 0x30) == 0x30)
		n *= 16;
	if (n > MAX_RUN - run_total)
		n = MAX_RUN - run_total;
	run_total += n;
	if (mode & 8) {
		/* Masked to cidr, the run stays n distinct prefixes. */
		cidr = byte(in) % (bits + 1);
		if (cidr == 0)
			n = n ? 1 : 0;
		else if (shift < bits - cidr)
			shift = bits - cidr;
		base &= prefix_mask(fam, cidr);
	}
	/* n distinct addresses need n <= 2^(bits - shift). */
	if (bits - shift < 13 && n > ((size_t)1 << (bits - shift)))
		n = (size_t)1 << (bits - shift);
	if (!(mode & 1) && n > MAX_ROUTES - n_model)
		n = MAX_ROUTES - n_model;

	/* One pass over the model finds which of the run exist already. */
	for (size_t i = 0; i < n; i++)
		at[i] = -1;
	for (size_t j = 0; j < n_model; j++) {
		size_t i;

		if (model[j].fam == fam && model[j].cidr == cidr &&
		    in_run(fam, model[j].key, base, shift, n, xor, &i))
			at[i] = (int32_t)j;
	}
	work += n_model + n;

	for (size_t i = 0; i < n; i++) {
		u128 a = xor ? (base ^ ((u128)i << shift)) & full_mask(fam)
			     : (base + ((u128)i << shift)) & full_mask(fam);
		uint8_t bytes[16];
		int ret;

		to_bytes(fam, a, bytes);
		if (!(mode & 1)) {
			ret = rt_insert(t, af_of[fam], bytes, (uint8_t)cidr, value);
			if (!value) {
				CHECK(ret == -EINVAL);
				continue;
			}
			CHECK(ret == 0);
			if (at[i] >= 0) {
				model[at[i]].value = value;
			} else {
				at[i] = (int32_t)n_model;
				model_add((struct entry){ fam, (uint8_t)cidr, a,
							  prefix_mask(fam, cidr), value });
			}
		} else {
			void *v = (mode & 2) ? NULL : value;

			ret = rt_remove(t, af_of[fam], bytes, (uint8_t)cidr, v);
			if (at[i] < 0 || (v && model[at[i]].value != v)) {
				CHECK(ret == -ENOENT);
				continue;
			}
			CHECK(ret == 0);
			/* Mark, and compact after the loop: indices stay valid. */
			model[at[i]].value = NULL;
		}
	}
	if (mode & 1) {
		for (size_t j = 0; j < n_model;) {
			if (!model[j].value)
				model_drop(&model[j]);
			else
				j++;
		}
	}
	CHECK(rt_count(t) == n_model);

	/* A sample of the run, spread over it, against the model. */
	for (size_t s = 0, k = checks(HOSTS_SAMPLE); n && s < k; s++) {
		size_t i = s * n / k;
		u128 a = xor ? (base ^ ((u128)i << shift)) : (base + ((u128)i << shift));

		check_lookup(t, fam, a & full_mask(fam));
	}
}

static void op_sweep(struct rt_table *t)
{
	size_t n = checks(SWEEP_MAX);

	if (n > n_model)
		n = n_model;
	for (size_t i = 0; i < n; i++) {
		struct entry e = model[i * n_model / n];
		u128 m = prefix_mask(e.fam, e.cidr), all = full_mask(e.fam);

		check_lookup(t, e.fam, e.key);
		check_lookup(t, e.fam, e.key | (~m & all));
		if (e.cidr)
			check_lookup(t, e.fam, e.key ^ ((u128)1 << (bits_of[e.fam] - e.cidr)));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct rt_table *t = rt_table_new();
	u128 base[2] = { 0x0a000000u, (u128)0xfd00000000000000ull << 64 };

	CHECK(t);
	model_reset();
	work = 0;
	run_total = 0;
	for (int ops = 0; in.left && ops < MAX_OPS && work < WORK_BUDGET; ops++) {
		uint8_t op = byte(&in);
		int fam = (op >> 4) & 1;
		bool bad_fam = (op & 0xe0) == 0xe0;
		uint8_t cidr, pos, mask;
		u128 a;

		switch ((op & 0x0f) % 10) {
		case 0: {
			uint8_t b[16];

			for (unsigned int i = 0; i < bits_of[fam] / 8; i++)
				b[i] = byte(&in);
			base[fam] = from_bytes(fam, b);
			break;
		}
		case 1:
		case 2:
			cidr = byte(&in);
			pos = byte(&in) % (bits_of[fam] / 8);
			mask = byte(&in);
			a = base[fam] ^ ((u128)mask << (bits_of[fam] - 8 - 8 * pos));
			if ((op & 0x0f) % 10 == 1)
				op_insert(t, fam, bad_fam, cidr, a, value_of(byte(&in)));
			else
				op_remove(t, fam, bad_fam, cidr, a, value_of(byte(&in)));
			break;
		case 3:
			op_remove_value(t, value_of(byte(&in)));
			break;
		case 4: {
			uint8_t bytes[16];

			pos = byte(&in) % (bits_of[fam] / 8);
			mask = byte(&in);
			a = base[fam] ^ ((u128)mask << (bits_of[fam] - 8 - 8 * pos));
			to_bytes(fam, a, bytes);
			CHECK(rt_lookup(t, bad_fam ? BAD_FAMILY : af_of[fam], bytes) ==
			      (bad_fam ? NULL : model_lookup(fam, a)));
			break;
		}
		case 5:
			op_batch(t, fam, bad_fam, &in, base[fam]);
			break;
		case 6:
			op_walk(t, value_of(byte(&in)));
			break;
		case 7:
			op_hosts(t, fam, &in, base[fam]);
			break;
		case 8:
			break; /* rt_count, below */
		case 9:
			op_sweep(t);
			break;
		}
		CHECK(rt_count(t) == n_model);
	}
	rt_table_free(t);
	return 0;
}
