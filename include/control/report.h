/*
 * control/report.h - statistics and status as a tree of named values,
 * rendered as aligned text (for people: `-s --verbose`), as one JSON
 * object (for programs) or as Prometheus metrics (for monitoring).  One
 * producer, three renderings, so they can never disagree.  The default
 * text of `-s` is conntrackd 1.4.7's layout instead (control/compat_report.h).
 * Pure: renders into a growing buffer.
 *
 * Names.  Every section, array and value has a name: lower case with
 * underscores, the JSON key, and the part of the metric name it gives.
 * The text shows the name with spaces for underscores, unless
 * report_label() gives another text label; so the text may keep a label
 * that conntrackd users know while the name follows the JSON and metric
 * conventions (units in the name: `_bytes`, `_seconds`).  The names are an
 * interface (doc/status-json.md; REPORT_SCHEMA_VERSION); the text is not.
 *
 * JSON.  One object, `"schema_version"` first, then the tree; arrays of
 * objects for lists (links, peers); times as RFC 3339 strings in UTC with
 * their Unix time beside them.
 *
 * Metrics (Prometheus text format 0.0.4).  A value is a series named
 * `ctsyncd_<section>_<name>`, the sections being those that enclose it
 * (an array's items give the array's item name, e.g. `link`); a counter
 * gets `_total`, a time `_timestamp_seconds`.  Within an item, the
 * report_id_*() values become labels of every series of the item.
 * report_info() strings become labels of one `<section>_info` series of
 * value 1.  Series of one name are printed together under one `# HELP` and
 * `# TYPE`; a series that repeats one already printed (same name and
 * labels) or that gives a name another type is left out.  Strings given
 * with report_str() are not metrics; the other untyped calls
 * (report_u64() ...) give `untyped` series.
 *
 * A list, e.g. the peers:
 *	report_begin_array(r, "peers", "peer");
 *	report_begin_item(r, "peer 198.18.0.2");          text heading
 *	report_id_str(r, "address", "peer", "198.18.0.2");  label peer="198.18.0.2"
 *	report_flag(r, "up", true, "1 while the peer is heard.");
 *	report_time(r, "last_heard", t, "When the peer was last heard.");
 *	report_end(r);                                      the item
 *	report_end(r);                                      the array
 * gives `"peers":[{"address":"198.18.0.2","up":true,"last_heard":"...Z",
 * "last_heard_unix":...}]` and `ctsyncd_peer_up{peer="198.18.0.2"} 1`.
 * New keys go into doc/status-json.md (tests/integration/status.sh).
 */
#ifndef CTSYNCD_REPORT_H
#define CTSYNCD_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* The version of the JSON layout, raised when a name changes meaning or goes away. */
#define REPORT_SCHEMA_VERSION 1

struct report;

enum report_format {
	REPORT_TEXT,
	REPORT_JSON,
	REPORT_PROMETHEUS,
};

/* Returns NULL on ENOMEM. */
struct report *report_new(enum report_format format);
void report_free(struct report *r);

/*
 * Sections nest.  A section is a text heading, a JSON object and a part of
 * the names of the metrics inside it.
 */
void report_begin(struct report *r, const char *name);
/* Closes the innermost open section, array or item. */
void report_end(struct report *r);

/*
 * A list of like things: a JSON array `name` of objects, one per
 * report_begin_item() ... report_end().  The array itself shows nothing in
 * the text: each item is a section headed `heading` ("link 0").  The
 * metrics of an item are named after `item` ("link"), not `name`
 * ("links"), and labelled with the item's report_id_*() values, which come
 * first in the item.
 */
void report_begin_array(struct report *r, const char *name, const char *item);
void report_begin_item(struct report *r, const char *heading);

/*
 * The text label of the next section, value or id, instead of its name
 * with spaces for underscores.  An empty label leaves the next value out
 * of the text (an item's index, already in its heading).
 */
void report_label(struct report *r, const char *text);

/*
 * What identifies the current item: text and JSON show it as a value
 * `name`; every metric of the item carries the label `label`="value".
 */
void report_id_str(struct report *r, const char *name, const char *label, const char *value);
void report_id_u64(struct report *r, const char *name, const char *label, uint64_t value);

/*
 * Typed values.  `help` is the metric's `# HELP` line: one sentence
 * (without newline, escaped if it has one).
 *  - A counter only grows while the daemon runs (events, bytes sent ...).
 *  - A gauge goes up and down (sizes, limits, lengths, configured values).
 *  - A flag is a yes/no gauge: true/false in JSON, 1/0 in metrics.
 *  - A time is a wall-clock instant: RFC 3339 in UTC in text and JSON
 *    ("2026-11-26T01:23:45Z"), with `<name>_unix` (seconds since the
 *    epoch) beside it in JSON; 0 means never: null and 0.  As a metric
 *    it is the gauge `<name>_timestamp_seconds`.
 *  - An info string describes a state (a version, a mode, a status): a
 *    label of the section's `_info` series.
 */
void report_counter(struct report *r, const char *name, uint64_t value, const char *help);
void report_gauge(struct report *r, const char *name, uint64_t value, const char *help);
void report_gauge_double(struct report *r, const char *name, double value, int decimals,
			 const char *help);
void report_flag(struct report *r, const char *name, bool value, const char *help);
void report_time(struct report *r, const char *name, time_t t, const char *help);
void report_info(struct report *r, const char *name, const char *value);

/* A line for people only, in the text (repeating values JSON and metrics have). */
void report_text(struct report *r, const char *label, const char *value);

/*
 * Untyped values.  `key` is the name.  Strings are never metrics (a path,
 * a note); the numbers and booleans are `untyped` metrics with a generic
 * `# HELP`: use the typed calls above for anything a monitor should read.
 */
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

/*
 * `t` as RFC 3339 in UTC ("2026-11-26T01:23:45Z") into buf; "" for 0 or
 * a time gmtime() cannot break down.  Returns buf.
 */
char *report_rfc3339(char *buf, size_t size, time_t t);

#endif
