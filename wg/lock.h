/* The locks whose rules clang checks: the device lock (a rwlock), a peer's
 * lock and the mesh lock (mutexes). They are pthread locks in a struct that
 * carries clang's capability attribute, so -Wthread-safety (on in every clang
 * build, as an error) sees each acquire and release: a function that returns
 * with a lock still held on some path, unlocks what it does not hold, locks
 * twice, or calls a WG_REQUIRES function without the lock is refused.
 *
 * What it cannot check in C: clang 14 parses a struct field's attribute
 * before the struct's other fields are in scope, so guarded_by on the
 * fields a lock guards is not available. The contract sits on the
 * functions instead (WG_REQUIRES, WG_REQUIRES_SHARED, WG_EXCLUDES), and the
 * struct comments name what each lock guards. With gcc the macros are empty. */
#ifndef WEFT_WG_LOCK_H
#define WEFT_WG_LOCK_H

#include <pthread.h>
#include <time.h>

#if defined(__clang__)
#define WG_TSA(x) __attribute__((x))
#else
#define WG_TSA(x)
#endif

#define WG_CAPABILITY(name)      WG_TSA(capability(name))
#define WG_REQUIRES(...)         WG_TSA(requires_capability(__VA_ARGS__))
#define WG_REQUIRES_SHARED(...)  WG_TSA(requires_shared_capability(__VA_ARGS__))
#define WG_ACQUIRE(...)          WG_TSA(acquire_capability(__VA_ARGS__))
#define WG_ACQUIRE_SHARED(...)   WG_TSA(acquire_shared_capability(__VA_ARGS__))
#define WG_RELEASE(...)          WG_TSA(release_capability(__VA_ARGS__))
#define WG_RELEASE_SHARED(...)   WG_TSA(release_shared_capability(__VA_ARGS__))
#define WG_RELEASE_GENERIC(...)  WG_TSA(release_generic_capability(__VA_ARGS__))
#define WG_EXCLUDES(...)         WG_TSA(locks_excluded(__VA_ARGS__))
#define WG_ASSERT(...)           WG_TSA(assert_capability(__VA_ARGS__))
#define WG_ASSERT_SHARED(...)    WG_TSA(assert_shared_capability(__VA_ARGS__))
#define WG_NO_TSA                WG_TSA(no_thread_safety_analysis)

struct WG_CAPABILITY("rwlock") wg_rwlock {
	pthread_rwlock_t rw;
};

struct WG_CAPABILITY("mutex") wg_mutex {
	pthread_mutex_t m;
};

/* The wrappers are where the analysis trusts the pthread calls. */
static inline int wg_rwlock_init(struct wg_rwlock *l, const pthread_rwlockattr_t *attr)
{
	return pthread_rwlock_init(&l->rw, attr);
}

static inline void wg_rwlock_destroy(struct wg_rwlock *l)
{
	pthread_rwlock_destroy(&l->rw);
}

static inline void wg_rwlock_rdlock(struct wg_rwlock *l) WG_ACQUIRE_SHARED(*l) WG_NO_TSA
{
	pthread_rwlock_rdlock(&l->rw);
}

static inline void wg_rwlock_wrlock(struct wg_rwlock *l) WG_ACQUIRE(*l) WG_NO_TSA
{
	pthread_rwlock_wrlock(&l->rw);
}

/* Releases a read or a write hold. */
static inline void wg_rwlock_unlock(struct wg_rwlock *l) WG_RELEASE_GENERIC(*l) WG_NO_TSA
{
	pthread_rwlock_unlock(&l->rw);
}

static inline int wg_mutex_init(struct wg_mutex *l)
{
	return pthread_mutex_init(&l->m, NULL);
}

static inline void wg_mutex_destroy(struct wg_mutex *l)
{
	pthread_mutex_destroy(&l->m);
}

static inline void wg_mutex_lock(struct wg_mutex *l) WG_ACQUIRE(*l) WG_NO_TSA
{
	pthread_mutex_lock(&l->m);
}

static inline void wg_mutex_unlock(struct wg_mutex *l) WG_RELEASE(*l) WG_NO_TSA
{
	pthread_mutex_unlock(&l->m);
}

/* pthread_cond_wait and _timedwait on a wg_mutex: held before and after. */
static inline void wg_cond_wait(pthread_cond_t *c, struct wg_mutex *l) WG_REQUIRES(*l)
{
	pthread_cond_wait(c, &l->m);
}

static inline int wg_cond_timedwait(pthread_cond_t *c, struct wg_mutex *l,
				    const struct timespec *abstime) WG_REQUIRES(*l)
{
	return pthread_cond_timedwait(c, &l->m, abstime);
}

#endif
