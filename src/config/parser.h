/*
 * parser.h - the contract between the grammar (parser.c) and the semantic
 * checks (config.c).  Private to src/config.
 */
#ifndef CTSYNCD_CONFIG_PARSER_H
#define CTSYNCD_CONFIG_PARSER_H

#include <stdarg.h>

#include "config/config.h"

/*
 * Where the parser saw things that the semantic checks talk about; a zero
 * line means "not present".
 */
struct config_marks {
	unsigned sync_line;         /* first Sync block */
	unsigned stats_line;        /* first Stats block */
	unsigned mode_line;         /* Mode keyword */
	unsigned alive_line;        /* AliveInterval */
	unsigned peer_timeout_line; /* PeerTimeout */
};

/*
 * Parse `text` into `cfg`, which the caller has filled with defaults.  On
 * error returns -1 with `err` filled; what was allocated so far stays in
 * `cfg` for config_free().  No semantic checks beyond single values.
 */
int config_parse_text(struct config *cfg, struct config_marks *marks, const char *name,
		      const char *text, size_t len, struct config_error *err,
		      config_warn_fn warn, void *warn_arg);

/* Checks that involve several options or blocks; same error convention. */
int config_validate(struct config *cfg, const struct config_marks *marks, const char *name,
		    struct config_error *err, config_warn_fn warn, void *warn_arg);

/* Fill `err` (file, position, formatted message); always returns -1. */
int config_set_error(struct config_error *err, const char *file, unsigned line,
		     unsigned column, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

int config_set_verror(struct config_error *err, const char *file, unsigned line,
		      unsigned column, const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));

/* Send a warning through `warn` if there is one. */
void config_warn(config_warn_fn warn, void *warn_arg, const char *file, unsigned line,
		 unsigned column, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* Names shared by the parser and the printer. */
struct config_name_value {
	const char *name;
	int value;
};

extern const struct config_name_value config_protocol_names[];
extern const struct config_name_value config_tcp_state_names[];
extern const struct config_name_value config_syslog_names[];

/* The canonical name of a value in one of the tables above, or NULL. */
const char *config_name_of(const struct config_name_value *table, int value);

#endif
