/* Logging in wireguard-go's style: LOG_LEVEL=silent|error|verbose|debug,
 * lines "LEVEL: (ifname) date time message" on stderr; under systemd, when
 * stderr is the journal stream JOURNAL_STREAM names, "<N>(ifname) message"
 * with the syslog priority N (3 error, 6 info, 7 debug) and no date. */
#ifndef WEFT_WG_LOG_H
#define WEFT_WG_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum wg_log_level {
	WG_LOG_SILENT = 0,
	WG_LOG_ERROR = 1,
	WG_LOG_VERBOSE = 2,
	WG_LOG_DEBUG = 3,
};

extern enum wg_log_level wg_log_level;

/* Reads LOG_LEVEL (default error) and JOURNAL_STREAM, and remembers the
 * interface name. */
void wg_log_init(const char *ifname);
/* Whether stderr is the stream journal_stream ("DEVICE:INODE", the value
 * of $JOURNAL_STREAM; NULL: not set) names. */
bool wg_log_stderr_is_journal(const char *journal_stream);
void wg_log_set_level(enum wg_log_level level);
void wg_log(enum wg_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_error(...) wg_log(WG_LOG_ERROR, __VA_ARGS__)
#define log_info(...) wg_log(WG_LOG_VERBOSE, __VA_ARGS__)
#define log_debug(...) wg_log(WG_LOG_DEBUG, __VA_ARGS__)

/* At most one line per second per call site: for drop reasons on the data path. */
#define log_ratelimited(level, ...)                                              \
	do {                                                                     \
		static _Atomic uint64_t last_;                                   \
		if (wg_log_level >= (level) && wg_log_allow(&last_))             \
			wg_log((level), __VA_ARGS__);                            \
	} while (0)
bool wg_log_allow(_Atomic uint64_t *last_ns);

#endif
