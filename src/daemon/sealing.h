/*
 * sealing.h - the envelope (src/envelope/) between the sync engine and the
 * links, when the Sync block names a Key: key files, sealing of every
 * datagram, opening and refusing, the handshake's own datagrams, logs and
 * counters (doc/envelope.md).
 */
#ifndef CTSYNCD_SEALING_H
#define CTSYNCD_SEALING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config/config.h"

struct link_group;
struct link_group_params;
struct report;
struct sealing;

/*
 * Read the Key files of `s` and set up the envelope.  Without Key, *out
 * is NULL and 0 is returned: datagrams go plain, as 1.4.7's.  An unsafe
 * or unreadable key file is logged, naming it, and fails (-errno).
 */
int sealing_start(struct sealing **out, const struct config_sync *s);
void sealing_stop(struct sealing *sg);
/*
 * A reload: read the Key files of `s` again and use them from now on (a
 * key roll); the session, its counter and every peer's session stay.  On
 * error (logged, naming the file) the keys in use stay.  0 or -errno.
 */
int sealing_reload(struct sealing *sg, const struct config_sync *s);

/* Fill in the seal and the framing of `lp` (its `arg` stays the caller's). */
void sealing_link_params(struct link_group_params *lp, size_t (*seal)(void *, uint8_t *, size_t, size_t));
/* Where the handshake's datagrams go, once the links are open. */
void sealing_set_links(struct sealing *sg, struct link_group *links);

/*
 * link_seal_fn's work: seal the datagram whose messages are at buf +
 * headroom, at time `now` (it picks the cipher, envelope_seal_at()).
 */
size_t sealing_seal(struct sealing *sg, uint8_t *buf, size_t len, size_t cap, uint64_t now);

/*
 * Open a received datagram from `peer` (its source `src`, for logs).  True
 * when it is authentic, fresh data: *buf and *len then give the plain
 * datagram.  False when it was a handshake datagram or refused (counted,
 * and logged at most once per 10 s per reason).
 */
bool sealing_open(struct sealing *sg, unsigned peer, const struct sockaddr *src, const void **buf,
		  size_t *len, uint64_t now);

/* The "envelope" section of -s network. */
void sealing_report(const struct sealing *sg, struct report *rep);

#endif
