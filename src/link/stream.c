/*
 * stream.c - TCP stream reassembly: received bytes in, runs of whole
 * frames out.  The frame boundaries come from the owner's frame_len; this
 * file only keeps the bytes of a frame cut by a read until the next read
 * completes it (protocol.md §5.4).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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

long link_stream_whole(const struct link_stream *s, link_frame_len_fn frame_len, void *arg,
		       const char **why)
{
	size_t off = 0;

	*why = NULL;
	while (off < s->used) {
		size_t left = s->used - off;
		long n = frame_len(arg, s->buf + off, left, why);

		if (n > 0 && (size_t)n <= left && (size_t)n <= LINK_FRAME_MAX) {
			off += (size_t)n;
			continue;
		}
		/* Any frame is whole in LINK_FRAME_MAX bytes: asking for more would fill the buffer. */
		if (n == 0 && left < LINK_FRAME_MAX)
			break;
		/*
		 * Whole frames before the bad bytes are still good, but once
		 * a boundary is lost nothing after it can be framed: the
		 * caller delivers those and drops the rest.
		 */
		if (off > 0)
			return (long)off;
		if (n < 0)
			return n;
		*why = n == 0 ? "no end within the longest frame" : "frame length out of range";
		return -EBADMSG;
	}
	return (long)off;
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
