/* The SIGBUS guard on guest memory (see guestmem.h).
 *
 * Why a guard and not only a refusal of regions that can shrink: a sealed
 * memfd (F_SEAL_SHRINK, QEMU's memory-backend-memfd default) cannot shrink,
 * but files in /dev/shm or on hugetlbfs cannot be sealed at all, and they are
 * what memory-backend-file, DPDK and many VMMs hand over; a hugetlbfs file
 * can fault without being truncated, when its pool has no page left for a
 * hole. Refusing them would refuse ordinary deployments, and checking a
 * file's size before each access would still race with the truncation.
 *
 * The handler runs in the faulting thread, in the middle of a guest access
 * (a ring index, a descriptor, a packet copy). It does only async-signal-safe
 * work: atomic loads over a fixed table, one mmap(MAP_FIXED) of anonymous
 * memory over the whole region, atomic stores, one write(2) to an eventfd. */
#include "tun/guestmem.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct slot {
	_Atomic uintptr_t base;
	_Atomic size_t len; /* 0: free; published last, withdrawn first */
	struct guestmem_owner *_Atomic owner;
};

static struct slot slots[GUESTMEM_SLOTS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER; /* watch/unwatch */
static struct sigaction prev_action;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_err;

void guestmem_owner_init(struct guestmem_owner *o)
{
	atomic_init(&o->faulted, false);
	atomic_init(&o->faults, 0);
	atomic_init(&o->wake_fd, -1);
}

/* Replaces the watched region holding addr with zero pages; false when addr
 * is in none. */
static bool replace_region(uintptr_t addr)
{
	for (unsigned int i = 0; i < GUESTMEM_SLOTS; i++) {
		size_t len = atomic_load_explicit(&slots[i].len, memory_order_acquire);
		uintptr_t base = atomic_load_explicit(&slots[i].base, memory_order_relaxed);
		struct guestmem_owner *o;
		uint64_t one = 1;
		int fd;

		if (!len || addr < base || addr - base >= len)
			continue;
		if (mmap((void *)base, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
			return false;
		o = atomic_load_explicit(&slots[i].owner, memory_order_relaxed);
		atomic_fetch_add_explicit(&o->faults, 1, memory_order_relaxed);
		atomic_store_explicit(&o->faulted, true, memory_order_release);
		fd = atomic_load_explicit(&o->wake_fd, memory_order_relaxed);
		if (fd >= 0 && write(fd, &one, sizeof(one)) < 0) {
			/* Nothing to do in a handler; the owner also polls. */
		}
		return true;
	}
	return false;
}

static void on_sigbus(int sig, siginfo_t *si, void *uctx)
{
	int saved_errno = errno;

	/* si_code > 0: raised by a fault (BUS_ADRERR...), not sent by kill. */
	if (si && si->si_code > 0 && replace_region((uintptr_t)si->si_addr)) {
		errno = saved_errno;
		return; /* the access is retried on the zero pages */
	}
	/* Not guest memory: whatever handled SIGBUS before us decides. */
	if ((prev_action.sa_flags & SA_SIGINFO) && prev_action.sa_sigaction) {
		prev_action.sa_sigaction(sig, si, uctx);
		return;
	}
	if (prev_action.sa_handler != SIG_DFL && prev_action.sa_handler != SIG_IGN) {
		prev_action.sa_handler(sig);
		return;
	}
	signal(SIGBUS, SIG_DFL);
	if (!si || si->si_code <= 0)
		raise(SIGBUS); /* delivered, fatally, once this handler returns */
	/* A fault: returning re-runs the access, which now kills the process. */
}

static void install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &prev_action) < 0)
		install_err = -errno;
}

int guestmem_guard_install(void)
{
	pthread_once(&install_once, install);
	return install_err;
}

int guestmem_watch(void *base, size_t len, struct guestmem_owner *owner)
{
	int slot = -ENOSPC;

	if (!len)
		return -EINVAL;
	pthread_mutex_lock(&slots_lock);
	for (int i = 0; i < GUESTMEM_SLOTS; i++) {
		if (atomic_load_explicit(&slots[i].len, memory_order_relaxed))
			continue;
		atomic_store_explicit(&slots[i].base, (uintptr_t)base, memory_order_relaxed);
		atomic_store_explicit(&slots[i].owner, owner, memory_order_relaxed);
		atomic_store_explicit(&slots[i].len, len, memory_order_release);
		slot = i;
		break;
	}
	pthread_mutex_unlock(&slots_lock);
	return slot;
}

void guestmem_unwatch(int slot)
{
	if (slot < 0 || slot >= GUESTMEM_SLOTS)
		return;
	pthread_mutex_lock(&slots_lock);
	atomic_store_explicit(&slots[slot].len, 0, memory_order_release);
	atomic_store_explicit(&slots[slot].base, 0, memory_order_relaxed);
	atomic_store_explicit(&slots[slot].owner, NULL, memory_order_relaxed);
	pthread_mutex_unlock(&slots_lock);
}
