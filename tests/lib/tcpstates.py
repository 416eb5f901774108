#!/usr/bin/env python3
# tcpstates.py: TCP connections held in chosen states through a firewall,
# for tests/integration/sync-levels.sh (python3, standard library only).
#
#   tcpstates.py server --bind ADDR --port P --bye-file F [--pid-file F2]
#       Echoes every line.  When a client half-closes (EOF), the server
#       closes a short connection (its lines start with "s") at once and
#       keeps any other open (the firewall sees the connection closing:
#       FIN_WAIT, then CLOSE_WAIT) until F exists, then sends "bye\n" and
#       closes.  Writes its pid to F2 once it listens; SIGTERM stops it.
#
#   tcpstates.py short --connect ADDR:PORT --count N [--bind A]
#       N short connections from address A, 10 at a time: connect, one
#       line, its echo, close.  Prints {"ok": n, "failed": n}; exit 0 when all are ok.
#
#   tcpstates.py zoo --connect ADDR:PORT --established E --closing C
#                    --half-open H [--half-bind A] --ready-file F
#                    [--wait S] [--after S]
#       E connections exchange a line and stay open; C exchange a line and
#       half-close (the client's FIN); H only start connecting, from
#       address A (the test drops their SYNs before the server, so the
#       firewall holds them in SYN_SENT).  F is touched once all that is done.  Then it waits for
#       SIGUSR1 (the failover is over; at most --wait seconds) and checks
#       each connection within --after seconds: an established one must
#       echo a new line; a closing one must receive "bye" and the server's
#       close; a half-open one must complete its handshake and echo a line.
#       Prints {"established": {"n": E, "survived": k}, "closing": ...,
#       "half_open": ...} and exits 0 (2 when the setup itself failed).

import argparse
import asyncio
import json
import os
import signal
import socket
import sys
import time


def hostport(text):
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError("expected ADDR:PORT, got %r" % text)
    return host, int(port)


# ------------------------------------------------------------------ server

async def serve_one(reader, writer, bye_file):
    short = False
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            short = short or line.startswith(b"s")
            writer.write(line)
            await writer.drain()
        if short:               # a short connection: close at once
            writer.close()
            return
        # Half-closed by the client: hold our side until the test says.
        for _ in range(1200):                      # at most 120 s
            if os.path.exists(bye_file):
                break
            await asyncio.sleep(0.1)
        writer.write(b"bye\n")
        await writer.drain()
        writer.close()
    except (ConnectionError, OSError):
        writer.transport.abort()


async def server_main(args):
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = await asyncio.start_server(
        lambda r, w: serve_one(r, w, args.bye_file), args.bind, args.port,
        reuse_address=True, backlog=1024)
    if args.pid_file:
        with open(args.pid_file + ".tmp", "w") as f:
            f.write("%d\n" % os.getpid())
        os.replace(args.pid_file + ".tmp", args.pid_file)
    await stop.wait()
    server.close()
    return 0


# ------------------------------------------------------------------ short

async def short_one(host, port, local, k, sem):
    async with sem:
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection(host, port, local_addr=local), 3)
            line = b"s%d\n" % k
            w.write(line)
            ok = await asyncio.wait_for(r.readline(), 3) == line
            w.close()
            return ok
        except (asyncio.TimeoutError, OSError):
            return False


async def short_main(args):
    host, port = args.connect
    sem = asyncio.Semaphore(10)
    local = (args.bind, 0) if args.bind else None
    res = await asyncio.gather(*(short_one(host, port, local, k, sem) for k in range(args.count)))
    ok = sum(res)
    print(json.dumps({"ok": ok, "failed": args.count - ok}))
    return 0 if ok == args.count else 1


# ------------------------------------------------------------------ zoo

async def exchange(r, w, line, limit):
    w.write(line)
    await w.drain()
    return await asyncio.wait_for(r.readline(), limit) == line


async def zoo_main(args):
    host, port = args.connect
    loop = asyncio.get_running_loop()
    go = asyncio.Event()
    loop.add_signal_handler(signal.SIGUSR1, go.set)
    loop.add_signal_handler(signal.SIGTERM, go.set)
    est, clo = [], []
    try:
        for k in range(args.established + args.closing):
            r, w = await asyncio.wait_for(asyncio.open_connection(host, port), 3)
            if not await exchange(r, w, b"hello %d\n" % k, 3):
                raise ConnectionError("no echo on connection %d" % k)
            if k < args.established:
                est.append((r, w))
            else:
                w.write_eof()           # our FIN: the connection is closing
                clo.append((r, w))
    except (asyncio.TimeoutError, OSError, ConnectionError) as e:
        print("tcpstates zoo: setting up the connections failed: %s" % e, file=sys.stderr)
        return 2
    local = (args.half_bind, 0) if args.half_bind else None
    half = [loop.create_task(asyncio.wait_for(
                asyncio.open_connection(host, port, local_addr=local), args.wait + args.after))
            for _ in range(args.half_open)]
    await asyncio.sleep(0.3)            # their first SYNs are out
    with open(args.ready_file, "a"):
        pass
    try:
        await asyncio.wait_for(go.wait(), args.wait)
    except asyncio.TimeoutError:
        print("tcpstates zoo: no SIGUSR1 within %g s" % args.wait, file=sys.stderr)
    deadline = time.monotonic() + args.after

    def left():
        return max(0.1, deadline - time.monotonic())

    async def est_ok(k, r, w):
        try:
            return await exchange(r, w, b"after %d\n" % k, left())
        except (asyncio.TimeoutError, OSError):
            return False

    async def clo_ok(r, w):
        try:
            if await asyncio.wait_for(r.readline(), left()) != b"bye\n":
                return False
            return await asyncio.wait_for(r.read(1), left()) == b""   # the server's FIN
        except (asyncio.TimeoutError, OSError):
            return False

    async def half_ok(k, t):
        try:
            r, w = await asyncio.wait_for(asyncio.shield(t), left())
            ok = await exchange(r, w, b"late %d\n" % k, left())
            w.close()
            return ok
        except (asyncio.TimeoutError, OSError):
            t.cancel()
            return False

    res = await asyncio.gather(
        asyncio.gather(*(est_ok(k, r, w) for k, (r, w) in enumerate(est))),
        asyncio.gather(*(clo_ok(r, w) for r, w in clo)),
        asyncio.gather(*(half_ok(k, t) for k, t in enumerate(half))))
    out = {}
    for name, n, got in (("established", args.established, res[0]),
                         ("closing", args.closing, res[1]),
                         ("half_open", args.half_open, res[2])):
        out[name] = {"n": n, "survived": sum(got)}
    print(json.dumps(out))
    for _, w in est + clo:
        w.transport.abort()
    return 0


def main():
    p = argparse.ArgumentParser(description="TCP connections in chosen states (see the header)")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("server")
    s.add_argument("--bind", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--bye-file", required=True)
    s.add_argument("--pid-file")
    c = sub.add_parser("short")
    c.add_argument("--connect", type=hostport, required=True)
    c.add_argument("--count", type=int, required=True)
    c.add_argument("--bind", metavar="ADDR")
    z = sub.add_parser("zoo")
    z.add_argument("--connect", type=hostport, required=True)
    for opt in ("--established", "--closing", "--half-open"):
        z.add_argument(opt, type=int, required=True)
    z.add_argument("--half-bind", metavar="ADDR")
    z.add_argument("--ready-file", required=True)
    z.add_argument("--wait", type=float, default=30.0)
    z.add_argument("--after", type=float, default=6.0)
    args = p.parse_args()
    for name in ("count", "established", "closing", "half_open"):
        v = getattr(args, name, 0)
        if v is not None and v < 0:
            p.error("--%s must be >= 0, not %d" % (name.replace("_", "-"), v))
    if args.cmd == "server":
        return asyncio.run(server_main(args))
    if args.cmd == "short":
        return asyncio.run(short_main(args))
    return asyncio.run(zoo_main(args))


if __name__ == "__main__":
    sys.exit(main())
