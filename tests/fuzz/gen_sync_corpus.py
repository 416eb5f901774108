#!/usr/bin/env python3
"""Write the seed corpus of fuzz_sync (tests/fuzz/corpus/sync/).

Each seed is a small program in the input format that tests/fuzz/fuzz_sync.c
describes: an 8-byte header, then steps.  The seeds reach the states a
fuzzer would take long to find by itself: a finished handshake, losses and
NACKs, a peer's restart, a flood of RESYNC requests, a multicast group with
a peer lost and back, ALARM and NOTRACK.

    tests/fuzz/gen_sync_corpus.py [DIR]     (default: the corpus directory)

Files it does not write (repro_*) are inputs the fuzzer found, kept as it
minimised them; this script leaves them alone.
"""
import os
import struct
import sys

# header byte 0
FTFW, NOTRACK, ALARM = 0, 1, 2
PLAIN_ACKS, NO_BULK_ON_NEW, PEER_TIMEOUT, PREFETCH, EXPECT, WSCALE = 4, 8, 16, 32, 64, 128

# message kinds of CTL, sequence modes, range-end modes
ACK, NACK, RESYNC, ALIVE = 0, 1, 2, 3
IN_SEQ, GAP, OLD, ABS = 0, 1, 2, 3
OUR_LAST, OUR_OLDEST, ABS_END, ZERO = 0, 1, 2, 3
CT_NEW, CT_UPD, CT_DEL, EXP = 0, 1, 2, 3


def header(mode=FTFW, flags=0, rsq=15, ackwin=0, budget=1, refresh=0, rto=0, clock0=False,
           preload=0, preload_dead=False, no_peer_reset=False, ops_random=False, seq=1000):
    return bytes([mode | flags, rsq | ackwin << 4,
                  budget | refresh << 2 | rto << 5 | (128 if clock0 else 0),
                  preload | (16 if preload_dead else 0) | (32 if no_peer_reset else 0) |
                  (64 if ops_random else 0)]) + \
        struct.pack('<I', seq & 0xffffffff)


def op(code, a=0):
    return bytes([code | a << 4])


def seq_args(mode, arg):
    if mode in (GAP, OLD):
        return bytes([arg])
    if mode == ABS:
        return struct.pack('<I', arg & 0xffffffff)
    return b''


def end_args(mode, arg):
    if mode in (OUR_LAST, OUR_OLDEST):
        return bytes([arg])
    if mode == ABS_END:
        return struct.pack('<I', arg & 0xffffffff)
    return b''


def ctl(peer, kind, seq=IN_SEQ, seq_arg=0, frm=ZERO, frm_arg=0, to=ZERO, to_arg=0,
        hello=False, hello_back=False, more=False):
    a = peer | (4 if hello else 0) | (8 if hello_back else 0)
    k = kind | seq << 2 | frm << 4 | to << 6
    return op(2 if more else 1, a) + bytes([k]) + seq_args(seq, seq_arg) + \
        end_args(frm, frm_arg) + end_args(to, to_arg)


def ack_all(peer, hello_back=False, more=False):
    """ACK everything we have in flight, in sequence."""
    return ctl(peer, ACK, frm=OUR_OLDEST, to=OUR_LAST, hello_back=hello_back, more=more)


def data(peer, key, content=0, typ=CT_NEW, seq=IN_SEQ, seq_arg=0, hello=False,
         hello_back=False, more=False):
    a = peer | (4 if hello else 0) | (8 if hello_back else 0)
    k = typ | seq << 2 | (key >> 8) << 6
    return op(4 if more else 3, a) + bytes([k, key & 0xff, content]) + seq_args(seq, seq_arg)


def tick(ms, late=False):
    """Advance the clock by ms (rounded to what the scales can say)."""
    out = b''
    for scale, a in ((1000, 3), (100, 2), (10, 1), (1, 0)):
        n = ms // scale
        while n > 0:
            m = min(n, 255)
            out += op(5, a | (4 if late else 0)) + bytes([m])
            n -= m
            ms -= m * scale
    return out


def upsert(key, content=0, loaded=False):
    return op(6, (key >> 8) | (4 if loaded else 0)) + bytes([key & 0xff, content])


def kill(key, purge=False):
    return op(7, (key >> 8) | (0 if purge else 4)) + bytes([key & 0xff])


def many(key, pairs, content=0, loaded=False):
    return op(8, (key >> 8) | (4 if loaded else 0)) + bytes([key & 0xff, pairs, content])


def bulk():
    return op(9)


def request_resync():
    return op(10)


def forget_all(clear=False):
    return op(11, 1 if clear else 0)


def exp(key, action=0):
    return op(12, action) + bytes([key])


def peer_set(peer, seq):
    return op(13, peer) + bytes([0]) + struct.pack('<I', seq & 0xffffffff)


def peer_jump(peer, extra=0):
    return op(13, peer) + bytes([1]) + struct.pack('<H', extra)


def peer_back(peer, n):
    return op(13, peer) + bytes([2, n])


def echo(peer, back=0):
    return op(14, peer | back << 2)


def send(budget_index):
    return op(15, budget_index)


def burst(peer, count4, k, hello=False):
    """1 + 4 * count4 messages from peer, keys from k, numbered every 1 + (k & 3)."""
    return op(15, 8 | peer | (4 if hello else 0)) + bytes([count4, k])


def raw(peer, payload):
    if len(payload) > 255:
        return op(0, peer | 4) + struct.pack('<H', len(payload)) + payload
    return op(0, peer) + bytes([len(payload)]) + payload


def handshake(peer, start):
    """A ctsyncd peer starting at `start`: HELLO|ALIVE, then HELLO_BACK once we answered."""
    return peer_set(peer, start) + ctl(peer, ALIVE, hello=True) + tick(10) + \
        ctl(peer, ALIVE, hello_back=True)


def seeds():
    s = {}
    # Two ctsyncd nodes meet, exchange states, acknowledge, go quiet.
    s['ftfw_handshake'] = header(seq=5000) + handshake(0, 90000) + \
        upsert(1, 1) + upsert(2, 2) + upsert(300, 3) + tick(20) + ack_all(0) + \
        data(0, 7, 1) + data(0, 8, 1, more=True) + data(0, 9, 1) + tick(1200) + tick(3000)
    # Their states and ours, with losses both ways: NACKs, repeats, retransmissions.
    s['ftfw_loss_nack'] = header(seq=70000, flags=PREFETCH) + handshake(0, 1 << 30) + \
        many(0, 10, 5) + tick(20) + \
        ctl(0, NACK, frm=OUR_OLDEST, frm_arg=2, to=OUR_OLDEST, to_arg=6) + \
        data(0, 1, 1) + data(0, 2, 1, seq=GAP, seq_arg=3) + data(0, 3, 1, more=True) + \
        data(0, 4, 1, seq=OLD, seq_arg=2) + tick(1100) + ack_all(0) + tick(2000) + \
        ctl(0, ACK, frm=OUR_LAST, frm_arg=3, to=OUR_LAST) + tick(9000)
    # The peer restarts (counter far away, HELLO again): flush, resync, bulk.
    s['ftfw_peer_restart'] = header(seq=123456) + handshake(0, 777) + many(0, 4) + \
        tick(20) + ack_all(0) + tick(1500) + peer_jump(0, 99) + \
        ctl(0, RESYNC, hello=True) + ctl(0, ALIVE, hello=True) + tick(10) + \
        ctl(0, ALIVE, hello_back=True) + tick(100) + ack_all(0) + tick(2000)
    # A flood of RESYNC requests over a small table: walks coalesced and spaced.
    flood = b''
    for _ in range(40):
        flood += ctl(0, RESYNC) + tick(100) + ack_all(0)
    s['ftfw_resync_flood'] = header(seq=1 << 31) + handshake(0, 5) + many(0, 20) + \
        tick(20) + ack_all(0) + flood + tick(20000)
    # The same with a table larger than one slice of a walk (BULK_QUEUE_MAX).
    flood = b''
    for _ in range(12):
        flood += ctl(0, RESYNC) + tick(5) + ack_all(0)
    s['ftfw_resync_flood_big'] = header(seq=42, budget=0) + handshake(0, 5) + \
        many(0, 200, loaded=True) + tick(20) + ack_all(0) + flood + tick(30000)
    # Dead flows: DEL sent, acknowledged, deleted; revived; purged.
    s['ftfw_dead'] = header(seq=99) + handshake(1, 1000) + many(0, 3) + tick(20) + \
        ack_all(1) + kill(1) + kill(2) + upsert(2, 9) + tick(20) + ack_all(1) + kill(3, purge=True) + \
        kill(4) + forget_all(clear=True) + tick(2000)
    # Nobody acknowledges: timeouts, probes, backoff; a RESYNC request retransmitted.
    s['ftfw_rto'] = header(seq=7, rto=1) + handshake(0, 50) + request_resync() + many(0, 5) + \
        tick(200) + tick(20000) + ack_all(0) + tick(1000)
    # A multicast group of three: one goes silent, is lost, comes back (soft restart).
    s['ftfw_multicast'] = header(seq=0x10000000, flags=PEER_TIMEOUT) + \
        handshake(0, 0x20000000) + handshake(1, 0x30000000) + handshake(2, 0x40000000) + \
        many(0, 4) + tick(20) + ack_all(0) + ack_all(1) + ack_all(2) + \
        tick(1000) + ctl(0, ALIVE) + ctl(1, ALIVE) + tick(31000) + ctl(2, ALIVE) + \
        tick(20) + ctl(2, ALIVE, hello_back=True) + ack_all(0) + ack_all(1) + ack_all(2) + tick(2000)
    # Our own messages looped back by the group, and a peer starting next to our counter.
    s['ftfw_echo'] = header(seq=3000) + handshake(0, 4000) + upsert(1) + tick(20) + echo(1) + \
        echo(1, 1) + op(13, 2) + bytes([3, 0]) + ctl(2, ALIVE, hello=True) + tick(1200) + ack_all(0)
    # A small in-flight window and a -B: flow control, ring evictions.
    s['ftfw_window'] = header(seq=0xfffffff0, rsq=1, ackwin=1, budget=3) + handshake(0, 8) + \
        many(0, 40) + bulk() + send(7) + ack_all(0) + tick(20) + ack_all(0) + bulk() + tick(3000)
    # 1.4.7 as the peer: plain ACKs, HELLO on its ACKs, a late HELLO_BACK.
    s['ftfw_plain_147'] = header(seq=1700000000, flags=PLAIN_ACKS | NO_BULK_ON_NEW) + \
        peer_set(0, 1700000100) + tick(1000) + ctl(0, ALIVE, hello=True) + \
        ctl(0, ACK, hello=True, hello_back=True, frm=OUR_LAST, to=OUR_LAST) + \
        data(0, 5, 1) + tick(1000) + ctl(0, RESYNC) + tick(100) + ack_all(0)
    # Expectations next to flows: sent after them in a bulk, DEL, received.
    s['ftfw_expect'] = header(seq=100, flags=EXPECT | PREFETCH) + handshake(0, 200) + \
        upsert(1) + exp(1) + exp(2) + tick(20) + ack_all(0) + exp(1, 2) + exp(2, 3) + \
        data(0, 3, 0, typ=EXP) + data(0, 4, 0, typ=EXP) + bulk() + tick(20) + ack_all(0)
    # Bytes that are not messages, and messages the splitter or the decoder refuse.
    s['ftfw_malformed'] = header(seq=1) + handshake(0, 10) + \
        raw(0, bytes([0x2a, 0, 0, 8, 0, 0, 0, 11])) + \
        raw(0, bytes([0x10, 0, 0, 12, 0, 0, 0, 12, 0, 4, 0, 33])) + \
        raw(0, bytes([0x1a, 0x08, 0, 16, 0, 0, 0, 13, 0, 0, 0, 9, 0, 0, 0, 1])) + \
        raw(0, bytes([0x10, 0, 0, 0])) + raw(0, bytes([0x10, 0, 0, 40, 0, 0, 0, 14])) + tick(1100)
    # Two in flight, a ring of 64: 63 numbers spent on ACKs evict the oldest (ring_evictions).
    spent = b''.join(data(0, 10 + i, more=True) for i in range(62)) + data(0, 72)
    s['ftfw_ring_eviction'] = header(seq=77, rsq=1, ackwin=1) + handshake(0, 300) + \
        upsert(1) + spent + upsert(2) + tick(20) + ack_all(0) + tick(1500)
    # A bulk from the peer with a window of 1: more ACKs to repeat than the ring holds.
    s['ftfw_burst_acks'] = header(seq=500, ackwin=1) + handshake(0, 9000) + \
        burst(0, 200, 0) + tick(30) + tick(1000)
    # The same with every other message lost: more gaps than the engine remembers.
    s['ftfw_burst_gaps'] = header(seq=600, flags=PREFETCH) + handshake(1, 70000) + \
        burst(1, 100, 1) + tick(1000) + tick(20000) + burst(1, 3, 8, hello=True) + tick(1000)
    # NOTRACK: no handshake, no ACKs; a RESYNC both ways.
    s['notrack'] = header(mode=NOTRACK, seq=55) + peer_set(0, 66) + data(0, 1) + \
        data(0, 2, seq=GAP, seq_arg=4) + many(0, 5) + kill(0) + ctl(0, RESYNC) + \
        request_resync() + tick(1500) + data(0, 3, hello=True) + ctl(0, ALIVE)
    # ALARM: refresh timers, flag-less data only; a preloaded table with a dead entry.
    s['alarm'] = header(mode=ALARM, refresh=1, seq=9, preload=5, preload_dead=True) + \
        peer_set(1, 1) + data(1, 1) + data(1, 2, hello=True) + many(0, 6) + kill(1) + \
        upsert(200, 3, loaded=True) + tick(2500) + tick(5000, late=True) + ctl(1, RESYNC) + \
        bulk() + request_resync() + tick(3000)
    # ALARM with the owner's randomness (ops->random), flows refreshed and changed.
    s['alarm_ops_random'] = header(mode=ALARM, refresh=7, seq=3, ops_random=True) + \
        many(0, 8) + tick(3000) + upsert(3, 7) + kill(4) + tick(9000, late=True) + \
        forget_all() + upsert(5, loaded=True) + tick(9000)
    # The clock at 0 and our counter about to wrap.
    s['ftfw_clock0_wrap'] = header(seq=0xfffffffe, clock0=True, no_peer_reset=True) + \
        handshake(3, 0xffffff00) + ctl(3, RESYNC) + many(0, 3) + tick(20) + ack_all(3) + \
        ctl(3, RESYNC, hello=True, seq=ABS, seq_arg=0xffffff10) + tick(3000)
    return s


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.join(os.path.dirname(os.path.abspath(__file__)), 'corpus', 'sync')
    os.makedirs(out, exist_ok=True)
    for name, blob in sorted(seeds().items()):
        with open(os.path.join(out, name), 'wb') as f:
            f.write(blob)


if __name__ == '__main__':
    main()
