#!/usr/bin/env python3
# flows.py: TCP traffic for the failover tests (python3, standard library only).
#
# It sends traffic through a pair of firewalls and measures what a failover does
# to it: long-lived connections that must survive, plus a stream of short ones.
#
#   flows.py server --bind ADDR --port P [--pid-file F]
#       A TCP echo server: every complete line is echoed back at once. Handles
#       thousands of connections. Writes its pid to F once it is listening
#       (and removes F on exit). Stops and exits 0 on SIGTERM or SIGINT.
#
#   flows.py client --connect ADDR:PORT --long N --interval-ms I --short-per-s R
#                   --duration S --mark-file F [--ready-file F2]
#                   [--dead-after D] [--bind-addr A] [--quiet Q]
#       Opens N long connections at once (5 s connect timeout, 3 retries, 20 s in
#       all; otherwise it prints an error and exits 2), touches F2 once all of
#       them are up, then sends "<conn>:<seq>\n" on each every I ms (TCP_NODELAY,
#       never waiting for the echo) and stamps each echo when it arrives. It
#       also opens R short connections per second (connect, one line, read the
#       echo, close; 3 s timeout each). S seconds after it started (S counts
#       from start-up, connecting included; a hard bound) it reads the failure
#       instant T0 (unix time, e.g. `date +%s.%N > F`) from F, prints one JSON
#       object on stdout and exits 0. SIGTERM or SIGINT ends the run early,
#       with the same output. Even on a black-holed network it exits within
#       S + 5 s (after S + 4.5 s a watchdog forces the exit, status 3).
#       Exit status: 0 done (JSON printed), 2 long connections not established
#       (or bad arguments), 3 forced exit.
#
#       With --quiet Q it also opens Q quiet connections, which send nothing
#       until the client gets SIGUSR1; then each sends one line at once.  They
#       show whether packets that reach a new primary right after a takeover
#       pass: "quiet_rtt_ms_p50/_max" is the time to the echo of the first
#       line after the first SIGUSR1, "quiet_slow" the number of those that
#       took 150 ms or more (a lost packet costs a 200 ms retransmission),
#       "quiet_answered" and "quiet_lost" (reset or closed).  They are not
#       in "long" or "survived".
#
#   flows.py summary FILE
#       Prints a one-line summary of the client's JSON in FILE.
#
# The client's JSON:
#   long, established      connections asked for, and established
#   survived               long connections never reset or closed that got an echo
#                          after T0 and an echo within the last D s of the run
#   broken, broken_reasons the others, by reason: "reset", "closed", "error" (other
#                          socket error, e.g. a TCP timeout), "no echo after failure",
#                          "silent" (echoes after T0, but none in the last D s)
#   resume_ms_p50/_max     over the survivors: T0 -> first echo of a line sent after T0
#   resume_any_ms_p50/_max over the survivors: T0 -> first echo received after T0
#   flowing_again_ms       T0 -> the moment every survivor had received an echo after
#                          T0 (the max of the per-connection first echoes after T0)
#   max_gap_ms             largest gap between consecutive echoes on a survivor, from
#                          its last echo before T0 to the end of the run
#   short_ok, short_failed, short_after_mark_ok, short_failed_after_mark
#                          short connections; "after mark" = started after T0; those
#                          still in flight at the end are only in short_unfinished
#   short_after_mark_ok_ms_max  slowest successful short connection started after T0
#   short_failed_reasons   "timeout", "refused", "reset", "bad echo", "error"
#   marks                  one entry per line of the mark file (T0 is the first):
#                          t, resumed (survivors with an echo after t), flowing_again_ms
#                          and max_gap_ms for that event, up to the next mark
#   echoes_total, sends_total, t0, duration_s, and a few more for diagnosis
# Without T0 (the mark file missing, empty or unreadable), the post-failure fields
# are null and "survived" only asks for flowing at the end and no reset/close.
#
# Example (a failover test, in the client's network namespace):
#   flows.py server --bind 198.18.2.1 --port 5001 --pid-file $WORK/srv.pid &
#   flows.py client --connect 198.18.2.1:5001 --long 200 --interval-ms 100 \
#       --short-per-s 20 --duration 30 --mark-file $WORK/t0 \
#       --ready-file $WORK/ready >$WORK/flows.json &
#   ...wait for $WORK/ready, fail the primary, date +%s.%N >$WORK/t0...
#   flows.py summary $WORK/flows.json

import argparse
import asyncio
import bisect
import json
import math
import os
import resource
import signal
import socket
import statistics
import sys
import threading
import time
from array import array

CONNECT_TIMEOUT = 5.0       # per connect attempt of a long connection
CONNECT_RETRIES = 3         # retries after the first attempt
ESTABLISH_LIMIT = 20.0      # all long connections up within this, or exit 2
SHORT_TIMEOUT = 3.0         # whole life of a short connection
WRITE_BUFFER_LIMIT = 1 << 20  # user-space backlog above which a send is skipped
MAX_LINE = 1 << 16          # a line longer than this is bad input
EXIT_GRACE = 4.5            # watchdog: forced exit at S + this


def raise_nofile():
    """Allow as many descriptors as the hard limit lets us."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = hard if hard != resource.RLIM_INFINITY else 1 << 20
        if soft == resource.RLIM_INFINITY or soft >= want:
            return
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ValueError, OSError):
        pass


def set_nodelay(transport):
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass


def split_hostport(text):
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise argparse.ArgumentTypeError("expected ADDR:PORT, got %r" % text)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError("bad port in %r" % text)
    return host, port


# ---------------------------------------------------------------- server

class EchoServerProtocol(asyncio.Protocol):
    def __init__(self, conns):
        self.conns = conns
        self.transport = None
        self.buf = b""

    def connection_made(self, transport):
        self.transport = transport
        set_nodelay(transport)
        self.conns.add(self)

    def data_received(self, data):
        if self.buf:
            data = self.buf + data
            self.buf = b""
        end = data.rfind(b"\n")
        if end < 0:
            if len(data) > MAX_LINE:
                self.transport.abort()
            else:
                self.buf = data
            return
        if end == len(data) - 1:
            self.transport.write(data)
        else:
            self.transport.write(data[:end + 1])
            self.buf = data[end + 1:]

    def eof_received(self):
        return False  # close our side too

    def connection_lost(self, exc):
        self.conns.discard(self)

    # A peer that does not read: stop reading from it rather than buffer.
    def pause_writing(self):
        try:
            self.transport.pause_reading()
        except RuntimeError:
            pass

    def resume_writing(self):
        try:
            self.transport.resume_reading()
        except RuntimeError:
            pass


async def run_server(args):
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    conns = set()
    server = await loop.create_server(
        lambda: EchoServerProtocol(conns), args.bind, args.port,
        backlog=4096, reuse_address=True)
    names = ", ".join("%s:%d" % s.getsockname()[:2] for s in server.sockets)
    if args.pid_file:
        tmp = args.pid_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % os.getpid())
        os.replace(tmp, args.pid_file)
    print("flows server: listening on %s (pid %d)" % (names, os.getpid()),
          file=sys.stderr, flush=True)
    await stop.wait()
    server.close()
    for c in list(conns):
        c.transport.abort()
    if args.pid_file:
        try:
            with open(args.pid_file) as f:
                if f.read().strip() == str(os.getpid()):
                    os.unlink(args.pid_file)
        except OSError:
            pass
    return 0


# ---------------------------------------------------------------- client

class Run:
    """State shared by all the connections of a client run."""

    def __init__(self, args):
        self.args = args
        self.host, self.port = args.connect
        self.local = (args.bind_addr, 0) if args.bind_addr else None
        self.interval = args.interval_ms / 1000.0
        self.stopping = False
        self.loop = None


class LongConn(asyncio.Protocol):
    __slots__ = ("idx", "run", "transport", "buf", "sent", "arr", "aseq",
                 "lost", "lost_at", "handle", "next_at", "bad", "skipped")

    def __init__(self, idx, run):
        self.idx = idx
        self.run = run
        self.transport = None
        self.buf = b""
        self.sent = array("d")   # sent[seq] = when line seq was sent (unix time)
        self.arr = array("d")    # arrival time of each echo, in order
        self.aseq = array("l")   # seq of each echo
        self.lost = None         # "reset", "closed" or "error"
        self.lost_at = None
        self.handle = None
        self.next_at = 0.0
        self.bad = 0
        self.skipped = 0

    def connection_made(self, transport):
        self.transport = transport
        set_nodelay(transport)

    def data_received(self, data):
        now = time.time()
        if self.buf:
            data = self.buf + data
            self.buf = b""
        lines = data.split(b"\n")
        rest = lines.pop()
        if rest:
            if len(rest) > MAX_LINE:
                self.bad += 1
            else:
                self.buf = rest
        nsent = len(self.sent)
        for line in lines:
            conn, _, seq = line.partition(b":")
            try:
                conn = int(conn)
                seq = int(seq)
            except ValueError:
                self.bad += 1
                continue
            if conn != self.idx or not 0 <= seq < nsent:
                self.bad += 1
                continue
            self.arr.append(now)
            self.aseq.append(seq)

    def eof_received(self):
        self._mark_lost("closed")
        return False

    def connection_lost(self, exc):
        if exc is None:
            self._mark_lost("closed")
        elif isinstance(exc, (ConnectionResetError, BrokenPipeError,
                              ConnectionAbortedError)):
            self._mark_lost("reset")
        else:
            self._mark_lost("error")
        self.cancel_timer()

    def _mark_lost(self, reason):
        if self.lost is None and not self.run.stopping:
            self.lost = reason
            self.lost_at = time.time()

    def start(self, first_at):
        self.next_at = first_at
        self.handle = self.run.loop.call_at(first_at, self._tick)

    def cancel_timer(self):
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None

    def poke(self):
        """A quiet connection sends one line now (SIGUSR1)."""
        tr = self.transport
        if self.run.stopping or self.lost or tr is None or tr.is_closing():
            return
        try:
            seq = len(self.sent)
            self.sent.append(time.time())
            tr.write(b"%d:%d\n" % (self.idx, seq))
        except Exception:
            pass

    def _tick(self):
        self.handle = None
        tr = self.transport
        if self.run.stopping or self.lost or tr is None or tr.is_closing():
            return
        try:
            if tr.get_write_buffer_size() > WRITE_BUFFER_LIMIT:
                self.skipped += 1
            else:
                seq = len(self.sent)
                self.sent.append(time.time())
                tr.write(b"%d:%d\n" % (self.idx, seq))
        except Exception:  # a broken transport reports through connection_lost
            pass
        loop = self.run.loop
        interval = self.run.interval
        self.next_at += interval
        now = loop.time()
        if self.next_at < now:  # late: skip the missed slots, no burst
            self.next_at += math.ceil((now - self.next_at) / interval) * interval
        self.handle = loop.call_at(self.next_at, self._tick)


async def connect_long(run, idx, deadline):
    loop = run.loop
    last = None
    for attempt in range(1 + CONNECT_RETRIES):
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        try:
            _, proto = await asyncio.wait_for(
                loop.create_connection(lambda: LongConn(idx, run), run.host,
                                       run.port, local_addr=run.local),
                min(CONNECT_TIMEOUT, remaining))
            return proto
        except asyncio.TimeoutError:
            last = "timeout"
        except OSError as e:
            last = e.strerror or type(e).__name__
        pause = min(0.2 * (attempt + 1), deadline - loop.time())
        if pause > 0:
            await asyncio.sleep(pause)
    raise ConnectionError(last or "no time left")


class ShortResult:
    __slots__ = ("start", "end", "ok", "reason", "done")

    def __init__(self, start):
        self.start = start
        self.end = None
        self.ok = False
        self.reason = None
        self.done = False


async def short_body(run, k, holder):
    reader, writer = await asyncio.open_connection(
        run.host, run.port, local_addr=run.local, limit=MAX_LINE)
    holder.append(writer)
    set_nodelay(writer.transport)
    line = b"s:%d\n" % k
    writer.write(line)
    echo = await reader.readline()
    return echo == line


async def short_one(run, k, res):
    holder = []
    try:
        good = await asyncio.wait_for(short_body(run, k, holder), SHORT_TIMEOUT)
        res.ok = good
        res.reason = None if good else "bad echo"
        res.done = True
    except asyncio.CancelledError:
        if holder:
            holder[0].transport.abort()
        raise
    except asyncio.TimeoutError:
        res.reason, res.done = "timeout", True
    except ConnectionRefusedError:
        res.reason, res.done = "refused", True
    except (ConnectionResetError, BrokenPipeError, ConnectionAbortedError):
        res.reason, res.done = "reset", True
    except Exception:
        res.reason, res.done = "error", True
    res.end = time.time()
    if holder:
        writer = holder[0]
        if res.ok:
            writer.close()  # orderly close (FIN), like a real client
        else:
            writer.transport.abort()


async def short_spawner(run, results, tasks, stop_at):
    rate = run.args.short_per_s
    if rate <= 0:
        return
    loop = run.loop
    period = 1.0 / rate
    next_at = loop.time()
    k = 0
    while not run.stopping:
        now = loop.time()
        if next_at >= stop_at:
            return
        if next_at > now:
            await asyncio.sleep(next_at - now)
            continue
        if now - next_at > 1.0:  # far behind: do not burst
            next_at = now
        res = ShortResult(time.time())
        results.append(res)
        t = loop.create_task(short_one(run, k, res))
        tasks.add(t)
        t.add_done_callback(tasks.discard)
        k += 1
        next_at += period


def read_marks(path):
    """All the instants in the mark file, one per line, in order."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return [], None
    marks = []
    for word in text.split():
        try:
            t = float(word)
        except ValueError:
            return marks, "mark file %s: not a unix time: %r" % (path, word[:40])
        if not math.isfinite(t):
            return marks, "mark file %s: not a unix time: %r" % (path, word[:40])
        marks.append(t)
    return sorted(marks), None


def mark_stats(survivors, t, t_next):
    """How the surviving connections went through the event at t (until t_next)."""
    first, gaps = [], []
    for c in survivors:
        arr = c.arr
        k = bisect.bisect_right(arr, t)
        if k == len(arr) or arr[k] > t_next:
            continue
        first.append(arr[k] - t)
        gap = arr[k] - (arr[k - 1] if k > 0 else t)
        for a, b in zip(arr[k:], arr[k + 1:]):
            if a > t_next:
                break
            gap = max(gap, b - a)
        gaps.append(gap)
    return {
        "t": t,
        "resumed": len(first),
        "flowing_again_ms": ms(max(first)) if first else None,
        "max_gap_ms": ms(max(gaps)) if gaps else None,
    }


def ms(seconds):
    return None if seconds is None else round(seconds * 1000.0, 1)


def analyse(run, conns, shorts, t_start, t_ready, t_end):
    args = run.args
    warnings = []
    marks, warn = read_marks(args.mark_file)
    t0 = marks[0] if marks else None
    if warn:
        warnings.append(warn)
    if t0 is not None and not t_start <= t0 <= t_end:
        warnings.append("T0 is outside the run")
    if t0 is not None and t0 > t_end - args.dead_after:
        warnings.append("T0 is within the last %g s of the run" % args.dead_after)
    reasons = {"reset": 0, "closed": 0, "error": 0,
               "no echo after failure": 0, "silent": 0}
    resume, resume_any, gaps = [], [], []
    survived = 0
    survivors = []
    flowing_from = t_end - args.dead_after
    for c in conns:
        arr = c.arr
        if c.lost:
            reasons[c.lost] += 1
            continue
        k = 0
        if t0 is not None:
            k = bisect.bisect_right(arr, t0)
            if k == len(arr):
                reasons["no echo after failure"] += 1
                continue
        if not arr or arr[-1] < flowing_from:
            reasons["silent"] += 1
            continue
        survived += 1
        survivors.append(c)
        if t0 is None:
            continue
        resume_any.append(arr[k] - t0)
        first_new = bisect.bisect_right(c.sent, t0)  # first seq sent after T0
        j = bisect.bisect_left(c.aseq, first_new, k)
        if j < len(arr):
            resume.append(arr[j] - t0)
        gap = arr[k] - (arr[k - 1] if k > 0 else t0)
        for a, b in zip(arr[k:], arr[k + 1:]):
            if b - a > gap:
                gap = b - a
        gaps.append(gap)

    def p50(v):
        return ms(statistics.median(v)) if v else None

    def vmax(v):
        return ms(max(v)) if v else None

    done = [s for s in shorts if s.done]
    short_reasons = {}
    for s in done:
        if not s.ok:
            short_reasons[s.reason] = short_reasons.get(s.reason, 0) + 1
    after = [s for s in done if t0 is not None and s.start > t0]
    out = {
        "long": args.long,
        "established": len(conns),
        "survived": survived,
        "broken": len(conns) - survived,
        "broken_reasons": reasons,
        "resume_ms_p50": p50(resume),
        "resume_ms_max": vmax(resume),
        "resume_any_ms_p50": p50(resume_any),
        "resume_any_ms_max": vmax(resume_any),
        "flowing_again_ms": vmax(resume_any),
        "max_gap_ms": vmax(gaps),
        "short_ok": sum(1 for s in done if s.ok),
        "short_failed": sum(1 for s in done if not s.ok),
        "short_failed_after_mark":
            None if t0 is None else sum(1 for s in after if not s.ok),
        "short_after_mark_ok":
            None if t0 is None else sum(1 for s in after if s.ok),
        "short_unfinished": len(shorts) - len(done),
        "short_after_mark_ok_ms_max":
            vmax([s.end - s.start for s in after if s.ok]),
        "short_failed_reasons": short_reasons,
        "echoes_total": sum(len(c.arr) for c in conns),
        "sends_total": sum(len(c.sent) for c in conns),
        "sends_skipped": sum(c.skipped for c in conns),
        "bad_echoes": sum(c.bad for c in conns),
        "t0": t0,
        "marks": [mark_stats(survivors, t, nxt) for t, nxt in
                  zip(marks, marks[1:] + [t_end])],
        "t_start": round(t_start, 6),
        "t_ready": round(t_ready, 6),
        "t_end": round(t_end, 6),
        "established_s": round(t_ready - t_start, 3),
        "duration_s": round(t_end - t_start, 3),
        "interval_ms": args.interval_ms,
        "short_per_s": args.short_per_s,
        "dead_after_s": args.dead_after,
        "warnings": warnings,
    }
    return out


def analyse_quiet(quiet, pokes):
    """The quiet connections: how fast each poke's line came back."""
    out = {"quiet": len(quiet), "pokes": len(pokes), "quiet_answered": 0,
           "quiet_lost": 0, "quiet_rtt_ms_p50": None, "quiet_rtt_ms_max": None,
           "quiet_slow": 0}
    if not quiet or not pokes:
        return out
    rtts = []
    for q in quiet:
        if q.lost:
            out["quiet_lost"] += 1
            continue
        # the echo of the first line sent at or after the first poke
        first = bisect.bisect_left(q.sent, pokes[0] - 0.001)
        got = [a for a, seq in zip(q.arr, q.aseq) if seq == first]
        if got:
            out["quiet_answered"] += 1
            rtts.append(got[0] - q.sent[first])
    if rtts:
        out["quiet_rtt_ms_p50"] = ms(statistics.median(rtts))
        out["quiet_rtt_ms_max"] = ms(max(rtts))
        # a retransmission takes 200 ms at least: slower means a packet was lost
        out["quiet_slow"] = sum(1 for r in rtts if r >= 0.15)
    return out


async def run_client(args, t_start, t_start_mono, watchdog_state):
    loop = asyncio.get_running_loop()
    run = Run(args)
    run.loop = loop
    # loop.time() is time.monotonic() in CPython; keep everything on that clock.
    stop_at = loop.time() + (args.duration - (time.monotonic() - t_start_mono))
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    # 1. the long connections, all at once
    deadline = min(loop.time() + ESTABLISH_LIMIT, stop_at)
    total = args.long + args.quiet
    tasks = [loop.create_task(connect_long(run, i, deadline))
             for i in range(total)]
    stop_task = loop.create_task(stop.wait())
    if tasks:
        # every connect ends by the deadline; a signal cuts the wait short
        all_done = asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.wait([all_done, stop_task],
                           timeout=max(0.0, deadline - loop.time()) + 1.0,
                           return_when=asyncio.FIRST_COMPLETED)
    conns, errors = [], {}
    for t in tasks:
        if t.done() and not t.cancelled() and t.exception() is None:
            conns.append(t.result())
        else:
            if not t.done():
                t.cancel()
                why = "timeout"
            elif t.cancelled():
                why = "cancelled"
            else:
                why = str(t.exception())
            errors[why] = errors.get(why, 0) + 1
    if len(conns) < total:
        run.stopping = True
        for c in conns:
            c.transport.abort()
        print("flows client: only %d of %d long connections established to "
              "%s:%d within %g s (%s)" % (
                  len(conns), total, run.host, run.port,
                  min(ESTABLISH_LIMIT, args.duration),
                  ", ".join("%s: %d" % kv for kv in sorted(errors.items()))),
              file=sys.stderr, flush=True)
        stop_task.cancel()
        return 2
    t_ready = time.time()
    if args.ready_file:
        with open(args.ready_file, "a"):
            pass
        os.utime(args.ready_file)

    # 2. traffic: long connections spread evenly over one interval; the
    #    quiet ones send a line only when SIGUSR1 comes
    quiet = [c for c in conns if c.idx >= args.long]
    conns = [c for c in conns if c.idx < args.long]
    pokes = []
    now = loop.time()
    for c in conns:
        c.start(now + run.interval * c.idx / max(1, args.long))

    def poke_all():
        pokes.append(time.time())
        for q in quiet:
            q.poke()
    loop.add_signal_handler(signal.SIGUSR1, poke_all)
    shorts, short_tasks = [], set()
    spawner = loop.create_task(short_spawner(run, shorts, short_tasks, stop_at))

    # 3. until the end of the run (or a signal)
    if not stop.is_set():
        await asyncio.wait([stop_task], timeout=max(0.0, stop_at - loop.time()))
    run.stopping = True
    t_end = time.time()
    stop_task.cancel()
    for c in conns:
        c.cancel_timer()
    spawner.cancel()
    pending = list(short_tasks) + [spawner]
    for t in pending:
        t.cancel()
    await asyncio.wait(pending, timeout=1.0)

    result = analyse(run, conns, shorts, t_start, t_ready, t_end)
    result.update(analyse_quiet(quiet, pokes))
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    watchdog_state["printed"] = True
    for c in conns:
        if c.transport is not None:
            c.transport.abort()
    return 0


def client_main(args):
    t_start = time.time()
    t_start_mono = time.monotonic()
    state = {"printed": False}

    def watchdog():
        if state["printed"]:
            os._exit(0)
        sys.stderr.write("flows client: stuck past the end of the run; "
                         "forced exit\n")
        sys.stderr.flush()
        os._exit(3)

    timer = threading.Timer(max(0.0, args.duration) + EXIT_GRACE, watchdog)
    timer.daemon = True
    timer.start()
    raise_nofile()
    rc = asyncio.run(run_client(args, t_start, t_start_mono, state))
    timer.cancel()
    return rc


# ---------------------------------------------------------------- summary

def fmt_ms(v):
    if v is None:
        return "?"
    if v >= 1000:
        return "%.1f s" % (v / 1000.0)
    return "%.0f ms" % v


def summary_main(args):
    with open(args.file) as f:
        d = json.load(f)
    broken = {k: v for k, v in (d.get("broken_reasons") or {}).items() if v}
    text = "%d/%d long connections survived" % (d["survived"], d["long"])
    if broken:
        text += " (broken: %s)" % ", ".join(
            "%d %s" % (v, k) for k, v in sorted(broken.items(), key=lambda kv: -kv[1]))
    if d.get("t0") is None:
        text += "; no failure mark"
        text += "; short connections: %d ok, %d failed" % (
            d["short_ok"], d["short_failed"])
    else:
        if d.get("flowing_again_ms") is None:
            text += "; traffic not flowing again after the failure"
        else:
            text += "; traffic flowing again %.0f ms after the failure (max gap %s)" % (
                d["flowing_again_ms"], fmt_ms(d.get("max_gap_ms")))
        before = d["short_failed"] - d["short_failed_after_mark"]
        text += "; short connections: %d ok, %d failed after the failure" % (
            d["short_ok"], d["short_failed_after_mark"])
        if before:
            text += ", %d before it" % before
    if d.get("short_unfinished"):
        text += ", %d unfinished at the end" % d["short_unfinished"]
    print(text)
    return 0


# ---------------------------------------------------------------- main

def positive(kind):
    def conv(text):
        v = kind(text)
        if v <= 0:
            raise argparse.ArgumentTypeError("must be > 0: %r" % text)
        return v
    return conv


def non_negative(kind):
    def conv(text):
        v = kind(text)
        if v < 0:
            raise argparse.ArgumentTypeError("must be >= 0: %r" % text)
        return v
    return conv


def main(argv=None):
    p = argparse.ArgumentParser(
        description="TCP traffic for ctsyncd failover tests (see the header of this file)")
    sub = p.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("server", help="line echo server")
    s.add_argument("--bind", default="0.0.0.0", metavar="ADDR")
    s.add_argument("--port", type=int, required=True, metavar="P")
    s.add_argument("--pid-file", metavar="F")

    c = sub.add_parser("client", help="long and short connections, JSON report")
    c.add_argument("--connect", type=split_hostport, required=True,
                   metavar="ADDR:PORT")
    c.add_argument("--long", type=non_negative(int), required=True, metavar="N")
    c.add_argument("--quiet", type=non_negative(int), default=0, metavar="Q")
    c.add_argument("--interval-ms", type=positive(float), required=True,
                   metavar="I")
    c.add_argument("--short-per-s", type=non_negative(float), required=True,
                   metavar="R")
    c.add_argument("--duration", type=positive(float), required=True, metavar="S")
    c.add_argument("--mark-file", required=True, metavar="F")
    c.add_argument("--ready-file", metavar="F2")
    c.add_argument("--dead-after", type=positive(float), default=3.0, metavar="D")
    c.add_argument("--bind-addr", metavar="A")

    m = sub.add_parser("summary", help="one-line summary of a client JSON")
    m.add_argument("file", metavar="FILE")

    args = p.parse_args(argv)
    if args.cmd == "server":
        raise_nofile()
        return asyncio.run(run_server(args))
    if args.cmd == "client":
        return client_main(args)
    return summary_main(args)


if __name__ == "__main__":
    sys.exit(main())
