/*
 * stream.c - TCP stream reassembly: received bytes in, runs of whole
 * messages out.  The message boundaries come from the wire splitter in
 * stream mode; this file only keeps the bytes of a message cut by a read
 * until the next read completes it (reference §4.4).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "wire.h"

int link_stream_init(struct link_stream *s, size_t cap)
{
	s->used = 0;
	s->cap = cap;
	s->buf = malloc(cap);
	return s->buf ? 0 : -ENOMEM;
}

void link_stream_free(struct link_stream *s)
{
	free(s->buf);
	s->buf = NULL;
	s->cap = s->used = 0;
}

void link_stream_reset(struct link_stream *s)
{
	s->used = 0;
}

uint8_t *link_stream_space(struct link_stream *s, size_t *room)
{
	*room = s->cap - s->used;
	return s->buf + s->used;
}

void link_stream_commit(struct link_stream *s, size_t n)
{
	if (n > s->cap - s->used)
		n = s->cap - s->used;
	s->used += n;
}

long link_stream_whole(const struct link_stream *s)
{
	struct wire_split sp;
	struct wire_msg m;

	wire_split_init(&sp, s->buf, s->used, true);
	for (;;) {
		switch (wire_split_next(&sp, &m)) {
		case WIRE_SPLIT_MSG:
			/* A foreign version is still a whole message: the sync layer counts it. */
			continue;
		case WIRE_SPLIT_END:
		case WIRE_SPLIT_MORE:
			return (long)wire_split_offset(&sp);
		case WIRE_SPLIT_ERROR:
		default:
			/*
			 * Whole messages before the bad length are still good,
			 * but once a length is wrong nothing after it can be
			 * framed: the caller delivers those and drops the rest.
			 */
			if (wire_split_offset(&sp) > 0)
				return (long)wire_split_offset(&sp);
			return -EBADMSG;
		}
	}
}

void link_stream_consume(struct link_stream *s, size_t n)
{
	if (n >= s->used) {
		s->used = 0;
		return;
	}
	memmove(s->buf, s->buf + n, s->used - n);
	s->used -= n;
}
