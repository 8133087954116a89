/* The plan `weft vm sync` applies (mesh/text.h, mesh_text_vm_plan): the
 * steps that take the ports of a host from the addresses they have to the
 * addresses a VM file wants. */
#include "mesh/text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The ports of the host as the plan changes them. */
struct held {
	struct ip_prefix addrs[PORT_MAX_ADDRS];
	size_t n;
};

static size_t find_held(const struct held *h, const struct ip_prefix *a)
{
	for (size_t i = 0; i < h->n; i++)
		if (ip_prefix_equal(&h->addrs[i], a))
			return i;
	return SIZE_MAX;
}

/* Which of n ports holds a; SIZE_MAX: none. */
static size_t holder_of(const struct held *held, size_t n, const struct ip_prefix *a)
{
	for (size_t p = 0; p < n; p++)
		if (find_held(&held[p], a) != SIZE_MAX)
			return p;
	return SIZE_MAX;
}

static size_t wanted_by(const struct mesh_text_vm *want, size_t n, const struct ip_prefix *a)
{
	for (size_t w = 0; w < n; w++)
		if (ip_prefix_listed(want[w].addrs, want[w].n_addrs, a))
			return w;
	return SIZE_MAX;
}

struct plan {
	struct mesh_vm_step *steps;
	size_t n;
	struct held *held;
};

static void step(struct plan *p, enum mesh_vm_step_kind kind, size_t port, size_t from,
		 const struct ip_prefix *a)
{
	p->steps[p->n++] = (struct mesh_vm_step){ kind, port, from, *a };
}

/* Keeps the order, so steps list a port's addresses as it has them. */
static void unhold(struct held *h, size_t i)
{
	memmove(&h->addrs[i], &h->addrs[i + 1], (h->n - i - 1) * sizeof(h->addrs[0]));
	h->n--;
}

/* The port of have that held a before the plan; SIZE_MAX: none. */
static size_t had_by(const struct port_info *have, size_t n, const struct ip_prefix *a)
{
	for (size_t h = 0; h < n; h++)
		for (size_t k = 0; k < have[h].cfg.n_addrs && k < PORT_MAX_ADDRS; k++)
			if (ip_prefix_equal(&have[h].cfg.addrs[k], a))
				return h;
	return SIZE_MAX;
}

/* want[w]'s port in have; -ENOENT (*bad = w) when missing, -EINVAL when
 * two entries of want name one port. */
static int match_ports(const struct mesh_text_vm *want, size_t n_want,
		       const struct port_info *have, size_t n_have, size_t *have_of, size_t *bad)
{
	for (size_t w = 0; w < n_want; w++) {
		for (have_of[w] = 0; have_of[w] < n_have; have_of[w]++)
			if (!strncmp(have[have_of[w]].cfg.name, want[w].port, PORT_NAME_MAX))
				break;
		if (have_of[w] == n_have) {
			*bad = w;
			return -ENOENT;
		}
		for (size_t v = 0; v < w; v++) {
			if (have_of[v] == have_of[w]) {
				*bad = w;
				return -EINVAL;
			}
		}
	}
	return 0;
}

/* Makes have[hp] hold exactly want[w]'s addresses, leaving alone what it
 * holds of them already; what else it holds stays until the end unless it
 * is in the way. */
static void plan_port(struct plan *p, const struct mesh_text_vm *want, size_t n_want, size_t w,
		      const struct port_info *have, size_t n_have, size_t hp,
		      struct mesh_vm_plan_counts *counts)
{
	const struct mesh_text_vm *vm = &want[w];
	const struct ip_prefix *a;
	struct held *held = &p->held[hp];
	size_t need = 0, h, i, to, from;

	for (i = 0; i < vm->n_addrs; i++) {
		if (find_held(held, &vm->addrs[i]) == SIZE_MAX)
			need++;
		else
			counts->unchanged++;
	}
	if (!need)
		return;
	/* Addresses coming from another port leave it first: an address is on
	 * one port at a time. */
	for (i = 0; i < vm->n_addrs; i++) {
		a = &vm->addrs[i];
		h = holder_of(p->held, n_have, a);
		if (h != SIZE_MAX && h != hp) {
			step(p, MESH_VM_STEP_DEL, h, w, a);
			unhold(&p->held[h], find_held(&p->held[h], a));
		}
	}
	/* No room for the additions: what leaves this port goes now. Then the
	 * port holds only wanted addresses, and all of them fit. */
	if (held->n + need > PORT_MAX_ADDRS) {
		for (i = 0; i < held->n;) {
			a = &held->addrs[i];
			if (ip_prefix_listed(vm->addrs, vm->n_addrs, a)) {
				i++;
				continue;
			}
			to = wanted_by(want, n_want, a);
			step(p, MESH_VM_STEP_DEL, hp, to, a);
			if (to == SIZE_MAX)
				counts->removed++;
			unhold(held, i);
		}
	}
	for (i = 0; i < vm->n_addrs; i++) {
		a = &vm->addrs[i];
		if (find_held(held, a) != SIZE_MAX)
			continue;
		from = had_by(have, n_have, a);
		step(p, MESH_VM_STEP_ADD, w, from, a);
		if (from == SIZE_MAX)
			counts->added++;
		else
			counts->moved++;
		held->addrs[held->n++] = *a;
	}
}

int mesh_text_vm_plan(const struct mesh_text_vm *want, size_t n_want, const struct port_info *have,
		      size_t n_have, struct mesh_vm_step **steps, size_t *n_steps,
		      struct mesh_vm_plan_counts *counts, size_t *bad)
{
	size_t *have_of = NULL, total = 1, h, i, w, dummy;
	struct plan p = { 0 };
	const struct ip_prefix *a;
	int ret = -ENOMEM;

	*steps = NULL;
	*n_steps = 0;
	memset(counts, 0, sizeof(*counts));
	if (!bad)
		bad = &dummy;
	/* Each wanted address is deleted and added at most once, each held
	 * one deleted at most once. */
	for (w = 0; w < n_want; w++)
		total += 2 * want[w].n_addrs;
	for (h = 0; h < n_have; h++)
		total += have[h].cfg.n_addrs;
	have_of = calloc(n_want + 1, sizeof(*have_of));
	p.held = calloc(n_have + 1, sizeof(*p.held));
	p.steps = malloc(total * sizeof(*p.steps));
	if (!have_of || !p.held || !p.steps)
		goto out;
	if ((ret = match_ports(want, n_want, have, n_have, have_of, bad)))
		goto out;
	for (h = 0; h < n_have; h++) {
		p.held[h].n = have[h].cfg.n_addrs < PORT_MAX_ADDRS ? have[h].cfg.n_addrs
								    : PORT_MAX_ADDRS;
		memcpy(p.held[h].addrs, have[h].cfg.addrs, p.held[h].n * sizeof(p.held[h].addrs[0]));
	}
	for (w = 0; w < n_want; w++)
		plan_port(&p, want, n_want, w, have, n_have, have_of[w], counts);
	/* What no wanted port lists goes last. */
	for (h = 0; h < n_have; h++) {
		for (w = 0; w < n_want && have_of[w] != h; w++)
			;
		for (i = 0; i < p.held[h].n;) {
			a = &p.held[h].addrs[i];
			if (w < n_want && ip_prefix_listed(want[w].addrs, want[w].n_addrs, a)) {
				i++;
				continue;
			}
			step(&p, MESH_VM_STEP_DEL, h, SIZE_MAX, a);
			counts->removed++;
			unhold(&p.held[h], i);
		}
	}
	if (p.n) {
		*steps = p.steps;
		*n_steps = p.n;
		p.steps = NULL;
	}
out:
	free(p.steps);
	free(p.held);
	free(have_of);
	return ret;
}
