#!/usr/bin/env python3
"""Just enough FTP for the kernel's ftp helper: a passive-mode data connection.

  ftp.py server --bind ADDR [--port 21] --data-port P --pid-file F
  ftp.py client --connect ADDR[:21] --go-file G --result-file R [--timeout S] [--active]

The server answers USER and PASV ("227 Entering Passive Mode (a,b,c,d,p1,p2)"),
which is what makes a firewall's ftp helper expect the client's data
connection to P; on the data connection it sends one line.  With --active
the client sends "PORT a,b,c,d,p1,p2" instead, with its own address (which a
NAT'ing firewall's helper rewrites in the stream, so that the firewall
adjusts the TCP sequence numbers from then on), and the server connects
to what it read there when the client sends RETR.  The client logs
in, asks for PASV (or sends PORT), then waits until the go-file exists (the
test's moment, e.g. after a failover) before it opens the data connection
(or sends RETR), and writes
{"control_ok", "data_ok", "data_ms", "error"} as JSON to the result file.
Everything is bounded in time.
"""
import argparse
import json
import os
import socket
import sys
import threading
import time


def session(args, conn, data, deadline):
    conn.settimeout(max(1, deadline - time.time()))
    conn.sendall(b"220 ctsyncd test ftp\r\n")
    f = conn.makefile("rb")
    port_addr = None
    while time.time() < deadline:
        line = f.readline()
        if not line:
            return
        cmd = line.strip().split(b" ")[0].upper()
        if cmd == b"USER":
            conn.sendall(b"230 logged in\r\n")
        elif cmd == b"PORT":
            nums = line.strip().split(b" ")[1].decode().split(",")
            port_addr = (".".join(nums[:4]), int(nums[4]) * 256 + int(nums[5]))
            conn.sendall(b"200 ok\r\n")
        elif cmd == b"RETR" and port_addr:
            d = socket.create_connection(port_addr, timeout=max(1, deadline - time.time()))
            d.sendall(b"data through the firewall\n")
            d.close()
            conn.sendall(b"226 done\r\n")
        elif cmd == b"PASV":
            a = args.bind.replace(".", ",")
            p = args.data_port
            conn.sendall(("227 Entering Passive Mode (%s,%d,%d)\r\n" % (a, p >> 8, p & 255)).encode())
            data.settimeout(max(1, deadline - time.time()))
            try:
                d, _ = data.accept()
            except socket.timeout:
                return
            d.sendall(b"data through the firewall\n")
            d.close()
        else:
            conn.sendall(b"502 not here\r\n")


def serve(args):
    ctl = socket.socket()
    ctl.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ctl.bind((args.bind, args.port))
    ctl.listen(4)
    data = socket.socket()
    data.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    data.bind((args.bind, args.data_port))
    data.listen(4)
    with open(args.pid_file, "w") as f:
        f.write("%d\n" % os.getpid())
    deadline = time.time() + args.lifetime
    while time.time() < deadline:
        ctl.settimeout(max(0.1, deadline - time.time()))
        try:
            conn, _ = ctl.accept()
        except socket.timeout:
            return
        threading.Thread(target=session, args=(args, conn, data, deadline), daemon=True).start()


def client(args):
    host, _, port = args.connect.partition(":")
    port = int(port or 21)
    out = {"control_ok": False, "data_ok": False, "data_ms": None, "error": None}
    try:
        c = socket.create_connection((host, port), timeout=args.timeout)
        f = c.makefile("rb")
        f.readline()
        c.sendall(b"USER anonymous\r\n")
        f.readline()
        deadline = time.time() + args.lifetime
        if args.active:
            lst = socket.socket()
            lst.bind((c.getsockname()[0], 0))
            lst.listen(1)
            lst.settimeout(args.timeout)
            a, p = lst.getsockname()
            c.sendall(("PORT %s,%d,%d\r\n" % (a.replace(".", ","), p >> 8, p & 255)).encode())
            out["control_ok"] = f.readline().startswith(b"200")
            while not os.path.exists(args.go_file) and time.time() < deadline:
                time.sleep(0.05)
            t = time.time()
            c.sendall(b"RETR file\r\n")
            d, _ = lst.accept()
        else:
            c.sendall(b"PASV\r\n")
            reply = f.readline().decode()
            nums = reply[reply.index("(") + 1:reply.index(")")].split(",")
            daddr, dport = ".".join(nums[:4]), int(nums[4]) * 256 + int(nums[5])
            out["control_ok"] = True
            while not os.path.exists(args.go_file) and time.time() < deadline:
                time.sleep(0.05)
            t = time.time()
            d = socket.create_connection((daddr, dport), timeout=args.timeout)
        d.settimeout(args.timeout)
        out["data_ok"] = d.recv(100).startswith(b"data")
        out["data_ms"] = int((time.time() - t) * 1000)
    except (OSError, ValueError) as e:
        out["error"] = "%s: %s" % (type(e).__name__, e)
    with open(args.result_file + ".tmp", "w") as f:
        json.dump(out, f)
    os.rename(args.result_file + ".tmp", args.result_file)
    # The control connection stays open (its state must live) for the test's checks.
    time.sleep(max(0, args.linger))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="what", required=True)
    s = sub.add_parser("server")
    s.add_argument("--bind", required=True)
    s.add_argument("--port", type=int, default=21)
    s.add_argument("--data-port", type=int, required=True)
    s.add_argument("--pid-file", required=True)
    s.add_argument("--lifetime", type=float, default=120)
    c = sub.add_parser("client")
    c.add_argument("--connect", required=True)
    c.add_argument("--go-file", required=True)
    c.add_argument("--result-file", required=True)
    c.add_argument("--timeout", type=float, default=5)
    c.add_argument("--lifetime", type=float, default=120)
    c.add_argument("--active", action="store_true")
    c.add_argument("--linger", type=float, default=0, help="seconds to keep the control connection")
    args = p.parse_args()
    serve(args) if args.what == "server" else client(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
