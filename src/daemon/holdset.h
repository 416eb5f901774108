/*
 * holdset.h - the packets a-priori mode holds (confirm.c), without the
 * queue, the clock or the engine: slots of one array, a FIFO in arrival
 * order (under one timeout also deadline order) and hash chains by flow
 * handle, so that a flow's acknowledgement finds its packets in O(1) and
 * nothing is spent while none is held.  Pure: no system call.
 */
#ifndef CTSYNCD_HOLDSET_H
#define CTSYNCD_HOLDSET_H

#include <stdbool.h>
#include <stdint.h>

struct holdset_slot;

struct holdset {
	struct holdset_slot *slots;
	uint32_t cap;                   /* slots allocated */
	uint32_t free_head;             /* free list */
	uint32_t head, tail;            /* FIFO */
	uint32_t n;                     /* held now */
	uint32_t *buckets;              /* heads of the hash chains */
	uint32_t bucket_mask;
};

/* A released packet: its id (for the verdict) and when it arrived (us). */
typedef void holdset_release_fn(void *arg, uint32_t id, uint64_t since_us, int why);
/* For holdset_release_if(): 0 keeps flow `handle`'s packets, another value releases them with it as `why`. */
typedef int holdset_decide_fn(void *arg, uint32_t handle);

/* An empty set with room for `cap` packets.  0 or -ENOMEM. */
int holdset_init(struct holdset *s, uint32_t cap);
void holdset_free(struct holdset *s);
/* Room for `cap` packets; the held ones keep their place and order.  0 or -ENOMEM (unchanged). */
int holdset_grow(struct holdset *s, uint32_t cap);
/* Hold packet `id` of flow `handle`.  -ENOSPC when `cap` are held. */
int holdset_add(struct holdset *s, uint32_t id, uint32_t handle, uint64_t deadline_ms, uint64_t since_us);
/* The first packet's deadline, false when none is held. */
bool holdset_next_deadline(const struct holdset *s, uint64_t *deadline_ms);
/* Release flow `handle`'s packets, in arrival order, with `why`; how many. */
unsigned holdset_release_handle(struct holdset *s, uint32_t handle, int why, holdset_release_fn *fn, void *arg);
/* Release the packets whose deadline is at or before `now_ms`; how many. */
unsigned holdset_release_expired(struct holdset *s, uint64_t now_ms, int why, holdset_release_fn *fn, void *arg);
/* Release every packet, oldest first; how many. */
unsigned holdset_release_all(struct holdset *s, int why, holdset_release_fn *fn, void *arg);
/* Ask `decide` about each packet's flow, oldest first, and release those it names a reason for. */
unsigned holdset_release_if(struct holdset *s, holdset_decide_fn *decide, holdset_release_fn *fn, void *arg);
/* Move every deadline by `delta_ms` (a new timeout): the order stays. */
void holdset_shift_deadlines(struct holdset *s, int64_t delta_ms);

#endif
