/*
 * channel.c - the channel buffer (messages packed into datagrams up to the
 * payload limit) and the queue of datagrams waiting for the socket.
 *
 * The open batch lives in the ring slot right after the waiting datagrams,
 * so closing a batch moves nothing: it only counts one more datagram.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int link_channel_init(struct link_channel *ch, unsigned cap, size_t slot_size)
{
	memset(ch, 0, sizeof(*ch));
	if (cap == 0 || slot_size == 0 || slot_size > UINT32_MAX)
		return -EINVAL;
	ch->nslots = cap + 1;
	ch->cap = cap;
	ch->slot_size = slot_size;
	ch->slot = calloc(ch->nslots, sizeof(*ch->slot));
	ch->len = calloc(ch->nslots, sizeof(*ch->len));
	if (!ch->slot || !ch->len) {
		link_channel_free(ch);
		return -ENOMEM;
	}
	return 0;
}

void link_channel_free(struct link_channel *ch)
{
	if (ch->slot)
		for (unsigned i = 0; i < ch->nslots; i++)
			free(ch->slot[i]);
	free(ch->slot);
	free(ch->len);
	memset(ch, 0, sizeof(*ch));
}

static unsigned ring(const struct link_channel *ch, unsigned i)
{
	return (ch->head + i) % ch->nslots;
}

static unsigned open_slot(const struct link_channel *ch)
{
	return ring(ch, ch->count);
}

size_t link_channel_open_len(const struct link_channel *ch)
{
	return ch->nslots ? ch->len[open_slot(ch)] : 0;
}

/*
 * The queue is full: forget the oldest datagram to make room.  A head that
 * is partly written on a stream must be finished, or the peer would see a
 * message cut in the middle; the next oldest goes instead.  Pointers are
 * swapped, nothing is copied.
 */
static void drop_oldest(struct link_channel *ch)
{
	unsigned victim = ring(ch, 0);

	if (ch->head_off > 0 && ch->count > 1) {
		unsigned second = ring(ch, 1);
		uint8_t *p = ch->slot[victim];
		uint32_t n = ch->len[victim];

		ch->slot[victim] = ch->slot[second];
		ch->len[victim] = ch->len[second];
		ch->slot[second] = p;
		ch->len[second] = n;
	} else {
		ch->head_off = 0;
	}
	ch->dropped++;
	ch->dropped_bytes += ch->len[victim];
	ch->len[victim] = 0;
	ch->head = (ch->head + 1) % ch->nslots;
	ch->count--;
}

static int open_ready(struct link_channel *ch);

/* The open slot, filled, becomes the newest waiting datagram. */
static void commit_open(struct link_channel *ch)
{
	if (ch->count == ch->cap)
		drop_oldest(ch);
	/*
	 * The open batch is still at the same ring position: dropping the
	 * head moved `head` by one and took one off `count`.
	 */
	ch->count++;
	ch->len[open_slot(ch)] = 0;
}

bool link_channel_close(struct link_channel *ch)
{
	unsigned s = open_slot(ch);

	if (ch->len[s] == 0)
		return false;
	if (ch->seal) {
		size_t n = ch->seal(ch->seal_arg, ch->slot[s], ch->len[s], ch->slot_size);

		if (n == 0) {
			ch->dropped++;
			ch->dropped_bytes += ch->len[s];
			ch->len[s] = 0;
			return false;
		}
		ch->len[s] = (uint32_t)n;
	}
	commit_open(ch);
	return true;
}

int link_channel_push(struct link_channel *ch, const void *dgram, size_t len)
{
	unsigned s;
	int err;

	if (len == 0 || len > ch->slot_size)
		return -EMSGSIZE;
	link_channel_close(ch);
	err = open_ready(ch);
	if (err < 0)
		return err;
	s = open_slot(ch);
	memcpy(ch->slot[s], dgram, len);
	ch->len[s] = (uint32_t)len;
	commit_open(ch);
	return 0;
}

/* Make sure the open batch has memory. */
static int open_ready(struct link_channel *ch)
{
	unsigned s = open_slot(ch);

	if (!ch->slot[s]) {
		ch->slot[s] = malloc(ch->slot_size);
		if (!ch->slot[s])
			return -ENOMEM;
		ch->len[s] = 0;
	}
	return 0;
}

int link_channel_append(struct link_channel *ch, const void *msg, size_t len, size_t limit)
{
	int closed = 0, err;
	unsigned s;

	if (len == 0)
		return -EINVAL;
	if (len > ch->slot_size - ch->reserve)
		return -EMSGSIZE;
	if (limit > ch->slot_size - ch->reserve)
		limit = ch->slot_size - ch->reserve;
	s = open_slot(ch);
	/* ≤ , not 1.4.7's < : a message that fills the datagram exactly still goes in. */
	if (ch->len[s] > 0 && ch->len[s] + len > limit)
		closed += link_channel_close(ch);
	err = open_ready(ch);
	if (err < 0)
		return err;
	s = open_slot(ch);
	memcpy(ch->slot[s] + ch->headroom + ch->len[s], msg, len);
	ch->len[s] += (uint32_t)len;
	/* Alone and still over the limit: it is a datagram by itself. */
	if (len > limit)
		closed += link_channel_close(ch);
	return closed;
}

const uint8_t *link_channel_peek(const struct link_channel *ch, unsigned i, size_t *len)
{
	unsigned s;

	if (i >= ch->count)
		return NULL;
	s = ring(ch, i);
	*len = ch->len[s];
	return ch->slot[s];
}

void link_channel_pop(struct link_channel *ch, unsigned n)
{
	if (n > ch->count)
		n = ch->count;
	for (unsigned i = 0; i < n; i++)
		ch->len[ring(ch, i)] = 0;
	ch->head = (ch->head + n) % ch->nslots;
	ch->count -= n;
	if (n > 0)
		ch->head_off = 0;
}
