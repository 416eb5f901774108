/*
 * control/report.h - statistics and status as a tree of named values, rendered
 * either as aligned text (for people, close to conntrackd's `-s` output)
 * or as one JSON object (for machines).  One producer, two renderings, so
 * the two can never disagree.  Pure: renders into a growing buffer.
 */
#ifndef CTSYNCD_REPORT_H
#define CTSYNCD_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct report;

enum report_format {
	REPORT_TEXT,
	REPORT_JSON,
};

/* Returns NULL on ENOMEM. */
struct report *report_new(enum report_format format);
void report_free(struct report *r);

/*
 * Sections nest.  `name` is a JSON key (lower case, underscores) and is
 * also shown, with underscores as spaces, as the text heading.
 */
void report_begin(struct report *r, const char *name);
void report_end(struct report *r);

void report_u64(struct report *r, const char *key, uint64_t value);
void report_i64(struct report *r, const char *key, int64_t value);
void report_str(struct report *r, const char *key, const char *value);
void report_bool(struct report *r, const char *key, bool value);
/* A floating value printed with `decimals` digits after the point. */
void report_double(struct report *r, const char *key, double value, int decimals);

/*
 * Finish and get the rendered bytes (NUL-terminated; JSON ends with a
 * newline).  Returns NULL if any allocation failed along the way.  The
 * buffer stays owned by the report.
 */
const char *report_finish(struct report *r, size_t *len);

#endif
